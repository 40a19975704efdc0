//! The script and its timelines as pure functions: parsing, refusals, interpolation, looping.

use crate::script::*;

const EXAMPLE: &str = r#"{"driver_version": "580.00",
 "devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1", "memory_total_mib": 81559,
   "repeat": false, "lost_at_s": null, "slow_ms": 0,
   "timeline": [{"at_s": 0, "memory_used_mib": 1200, "util_gpu": 0, "util_mem": 0,
                 "temperature_c": 35, "power_w": 70, "processes": [{"pid": 4242, "used_mib": 1100}]},
                {"at_s": 60, "memory_used_mib": 78000, "util_gpu": 97}]}]}"#;

fn device(json: &str) -> Device {
    let s = parse(json).expect("script parses");
    s.devices.into_iter().next().expect("one device")
}

#[test]
fn parses_the_design_example() {
    let s = parse(EXAMPLE).expect("the documented example parses");
    assert_eq!(s.driver_version.as_deref(), Some("580.00"));
    let d = &s.devices[0];
    assert_eq!(d.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(d.memory_total_mib, 81559.0);
    assert_eq!(d.memory_reserved_mib, 0.0);
    assert_eq!(d.power_limit_w, None);
    assert_eq!(d.points.len(), 2);
}

#[test]
fn interpolates_between_points_and_keeps_left_out_fields() {
    let d = device(EXAMPLE);
    let s = d.sample_at(30.0);
    assert_eq!(s.memory_used_mib, Some(1200.0 + (78000.0 - 1200.0) / 2.0));
    assert_eq!(s.util_gpu, Some(48.5));
    // Left out at 60 s: kept, so flat.
    assert_eq!(s.util_mem, Some(0.0));
    assert_eq!(s.temperature_c, Some(35.0));
    assert_eq!(s.power_w, Some(70.0));
    assert_eq!(s.processes.len(), 1);
    assert_eq!(s.processes[0].pid, 4242);
    assert_eq!(s.processes[0].used_mib, Some(1100.0));
}

#[test]
fn holds_before_the_first_and_after_the_last_point() {
    let d = device(
        r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":100,
        "timeline":[{"at_s":10,"memory_used_mib":5},{"at_s":20,"memory_used_mib":15}]}]}"#,
    );
    assert_eq!(d.sample_at(0.0).memory_used_mib, Some(5.0));
    assert_eq!(d.sample_at(15.0).memory_used_mib, Some(10.0));
    assert_eq!(d.sample_at(20.0).memory_used_mib, Some(15.0));
    assert_eq!(d.sample_at(1000.0).memory_used_mib, Some(15.0));
}

#[test]
fn loops_when_repeat() {
    let d = device(
        r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":100,"repeat":true,
        "timeline":[{"at_s":0,"util_gpu":0},{"at_s":10,"util_gpu":100}]}]}"#,
    );
    assert_eq!(d.sample_at(5.0).util_gpu, Some(50.0));
    assert_eq!(d.sample_at(25.0).util_gpu, Some(50.0));
    assert_eq!(d.sample_at(12.5).util_gpu, Some(25.0));
}

#[test]
fn a_field_never_given_has_no_value() {
    let d = device(
        r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":100,
        "timeline":[{"at_s":0,"util_gpu":1},{"at_s":10,"temperature_c":50}]}]}"#,
    );
    assert_eq!(d.sample_at(5.0).temperature_c, None);
    assert_eq!(d.sample_at(10.0).temperature_c, Some(50.0));
    assert_eq!(d.sample_at(5.0).memory_used_mib, None);
    assert!(d.sample_at(5.0).processes.is_empty());
    let empty = device(r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1}]}"#);
    assert_eq!(empty.sample_at(3.0), Sample::default());
}

#[test]
fn process_lists_step_and_their_memory_interpolates() {
    let d = device(
        r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":100,
        "timeline":[{"at_s":0,"processes":[{"pid":1,"used_mib":10},{"pid":2,"kind":"graphics"}]},
                    {"at_s":10,"processes":[{"pid":1,"used_mib":30}]}]}]}"#,
    );
    let s = d.sample_at(5.0);
    assert_eq!(s.processes.len(), 2);
    assert_eq!(s.processes[0].used_mib, Some(20.0));
    assert_eq!(s.processes[1].kind, ProcessKind::Graphics);
    assert_eq!(s.processes[1].used_mib, None);
    assert_eq!(d.sample_at(10.0).processes.len(), 1);
}

#[test]
fn lost_from_lost_at_s_on() {
    let d = device(r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,"lost_at_s":1.5}]}"#);
    assert!(!d.is_lost_at(1.49));
    assert!(d.is_lost_at(1.5));
    assert!(d.is_lost_at(100.0));
}

#[test]
fn reads_optional_extras() {
    let d = device(
        r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,
        "power_limit_w":700,"memory_reserved_mib":512,"slow_ms":20}]}"#,
    );
    assert_eq!(d.power_limit_w, Some(700.0));
    assert_eq!(d.memory_reserved_mib, 512.0);
    assert_eq!(d.slow_ms, 20);
}

#[test]
fn refuses_bad_scripts_with_a_reason() {
    let cases = [
        ("not json", "not a valid script"),
        (r#"{"devices": 3}"#, "not a valid script"),
        (
            r#"{"driver_version": "5\u0000", "devices": []}"#,
            "top level: driver_version",
        ),
        (
            r#"{"devices":[{"name":"g","uuid":"u"}]}"#,
            "memory_total_mib",
        ),
        (
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,"typo":1}]}"#,
            "typo",
        ),
        (
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,
            "timeline":[{"at_s":5},{"at_s":1}]}]}"#,
            "timeline[1].at_s",
        ),
        (
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,
            "timeline":[{"at_s":0,"util_gpu":120}]}]}"#,
            "timeline[0].util_gpu",
        ),
        (
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":-1}]}"#,
            "memory_total_mib",
        ),
    ];
    for (json, needle) in cases {
        let err = parse(json)
            .expect_err("a bad script is refused")
            .to_string();
        assert!(
            err.contains(needle),
            "{json}: {err:?} should mention {needle}"
        );
    }
    let long = "x".repeat(200);
    let json = format!(r#"{{"devices":[{{"name":"{long}","uuid":"u","memory_total_mib":1}}]}}"#);
    assert!(parse(&json).is_err());
}
