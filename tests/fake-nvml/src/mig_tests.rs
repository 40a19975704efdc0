//! The script's MIG part as pure functions: parsing, refusals, per-instance memory, handles.

use crate::live::{Handle, decode_handle, handle_for, mig_handle_for};
use crate::script::*;

/// A script with one 1000 MiB device holding `mig` (JSON, or nothing) and, at 0 s, `processes`.
fn script(mig: &str, processes: &str) -> String {
    let mig = if mig.is_empty() {
        String::new()
    } else {
        format!(r#""mig":{mig},"#)
    };
    format!(
        r#"{{"devices":[{{"name":"g","uuid":"GPU-g","memory_total_mib":1000,{mig}
        "timeline":[{{"at_s":0,"processes":{processes}}}]}}]}}"#
    )
}

fn instance(gi: u32, ci: u32, uuid: &str, mib: f64) -> String {
    format!(
        r#"{{"gpu_instance_id":{gi},"compute_instance_id":{ci},"uuid":"{uuid}","memory_total_mib":{mib}}}"#
    )
}

fn device(json: &str) -> Device {
    let s = parse(json).expect("script parses");
    s.devices.into_iter().next().expect("one device")
}

#[test]
fn the_documented_example_parses() {
    let doc = include_str!("../../../docs/testing.md");
    let from = doc
        .find("MIG (Multi-Instance GPU)")
        .expect("the MIG section");
    let json = doc[from..]
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the MIG example");
    let d = device(json);
    let mig = d.mig.as_ref().expect("MIG mode");
    assert_eq!((mig.len(), mig[1].uuid.as_str()), (2, "MIG-2"));
    assert_eq!(d.instance_used_mib(1, 0.0), 3000.0);
    assert_eq!(d.instance_used_mib(2, 0.0), 1000.0);
}

#[test]
fn mig_absent_is_not_capable_and_empty_is_mig_mode() {
    assert_eq!(device(&script("", "[]")).mig, None);
    assert_eq!(device(&script("[]", "[]")).mig, Some(vec![]));
}

#[test]
fn parses_instances_and_the_instance_of_each_process() {
    let mig = format!(
        "[{},{},{}]",
        instance(1, 0, "MIG-a", 500.0),
        instance(2, 0, "MIG-b", 200.0),
        instance(2, 1, "MIG-c", 200.0)
    );
    let d = device(&script(
        &mig,
        r#"[{"pid":1,"gpu_instance_id":1},{"pid":2,"gpu_instance_id":2,"compute_instance_id":1},
            {"pid":3}]"#,
    ));
    let m = d.mig.as_ref().expect("MIG mode");
    assert_eq!(m.len(), 3);
    assert_eq!(
        (
            m[2].uuid.as_str(),
            m[2].gpu_instance_id,
            m[2].compute_instance_id
        ),
        ("MIG-c", 2, 1)
    );
    assert_eq!(m[0].memory_total_mib, 500.0);
    let ids = |gpu_instance_id, compute_instance_id| InstanceIds {
        gpu_instance_id,
        compute_instance_id,
    };
    let p = &d.points[0].1.processes;
    // GPU instance 1 has one compute instance, so pid 1 runs in it without naming it.
    assert_eq!(p[0].instance, Some(ids(1, 0)));
    assert_eq!(p[1].instance, Some(ids(2, 1)));
    assert_eq!(p[2].instance, None);
}

#[test]
fn a_gpu_instance_uses_its_processes_memory() {
    let mig = format!(
        "[{},{},{}]",
        instance(1, 0, "MIG-a", 500.0),
        instance(1, 1, "MIG-b", 500.0),
        instance(2, 0, "MIG-c", 300.0)
    );
    let d = device(&format!(
        r#"{{"devices":[{{"name":"g","uuid":"GPU-g","memory_total_mib":1000,"mig":{mig},
        "timeline":[
          {{"at_s":0,"processes":[
            {{"pid":1,"used_mib":100,"gpu_instance_id":1,"compute_instance_id":0}},
            {{"pid":1,"used_mib":40,"gpu_instance_id":1,"compute_instance_id":0,"kind":"graphics"}},
            {{"pid":2,"used_mib":10,"gpu_instance_id":1,"compute_instance_id":1}},
            {{"pid":3,"gpu_instance_id":1,"compute_instance_id":1}},
            {{"pid":4,"used_mib":50,"gpu_instance_id":2}},
            {{"pid":5,"used_mib":900}}]}},
          {{"at_s":10,"processes":[
            {{"pid":1,"used_mib":300,"gpu_instance_id":1,"compute_instance_id":0}}]}}]}}]}}"#
    ));
    // pid 1 once (its larger figure), pid 2, pid 3 "not available" as 0; not pid 4 nor 5.
    assert_eq!(d.instance_used_mib(1, 0.0), 110.0);
    assert_eq!(d.instance_used_mib(2, 0.0), 50.0);
    // pid 1 interpolates towards the next point (the graphics entry holds at 40).
    assert_eq!(d.instance_used_mib(1, 5.0), 200.0 + 10.0);
    assert_eq!(d.instance_used_mib(1, 10.0), 300.0);
    assert_eq!(d.instance_used_mib(2, 10.0), 0.0);
    assert_eq!(d.instance_used_mib(7, 0.0), 0.0);
}

#[test]
fn accepts_the_limits() {
    let seven: Vec<String> = (0..7)
        .map(|i| instance(i, 0, &format!("MIG-{i}"), 100.0))
        .collect();
    let d = device(&script(&format!("[{}]", seven.join(",")), "[]"));
    assert_eq!(d.mig.map(|m| m.len()), Some(7));
    // Exactly the device's memory; two compute instances of one GPU instance count once.
    let full = format!(
        "[{},{},{}]",
        instance(1, 0, "MIG-a", 600.0),
        instance(1, 1, "MIG-b", 600.0),
        instance(2, 0, "MIG-c", 400.0)
    );
    assert!(parse(&script(&full, "[]")).is_ok());
}

#[test]
fn refuses_bad_mig_scripts_with_a_reason() {
    let one = format!("[{}]", instance(1, 0, "MIG-a", 100.0));
    let two_in_one = format!(
        "[{},{}]",
        instance(1, 0, "MIG-a", 100.0),
        instance(1, 1, "MIG-b", 100.0)
    );
    let long = "M".repeat(200);
    let eight: Vec<String> = (0..8)
        .map(|i| instance(i, 0, &format!("MIG-{i}"), 10.0))
        .collect();
    let cases = [
        (
            script(&format!("[{}]", instance(1, 0, "", 1.0)), "[]"),
            "devices[0]: mig[0].uuid is empty",
        ),
        (
            script(&format!("[{}]", instance(1, 0, &long, 1.0)), "[]"),
            "devices[0]: mig[0].uuid is 200 bytes",
        ),
        (
            script(&format!("[{}]", instance(1, 0, "M\\u0000", 1.0)), "[]"),
            "mig[0].uuid contains a NUL byte",
        ),
        (
            script(
                &format!(
                    "[{},{}]",
                    instance(1, 0, "MIG-a", 1.0),
                    instance(2, 0, "MIG-a", 1.0)
                ),
                "[]",
            ),
            r#"devices[0]: mig[1].uuid "MIG-a" is also devices[0].mig[0].uuid"#,
        ),
        (
            script(&format!("[{}]", instance(1, 0, "GPU-g", 1.0)), "[]"),
            r#"mig[0].uuid "GPU-g" is also devices[0].uuid"#,
        ),
        (
            format!(
                r#"{{"devices":[{{"name":"a","uuid":"GPU-a","memory_total_mib":900,"mig":{one}}},
                {{"name":"b","uuid":"GPU-b","memory_total_mib":900,"mig":{one}}}]}}"#
            ),
            r#"devices[1]: mig[0].uuid "MIG-a" is also devices[0].mig[0].uuid"#,
        ),
        (
            script(
                &format!(
                    "[{},{}]",
                    instance(1, 0, "MIG-a", 1.0),
                    instance(1, 0, "MIG-b", 1.0)
                ),
                "[]",
            ),
            "mig[1] repeats mig[0]'s gpu_instance_id 1 and compute_instance_id 0",
        ),
        (
            script(
                &format!(
                    "[{},{}]",
                    instance(1, 0, "MIG-a", 600.0),
                    instance(2, 0, "MIG-b", 401.0)
                ),
                "[]",
            ),
            "hold 1001 MiB together, more than the device's memory_total_mib 1000",
        ),
        (
            script(
                &format!(
                    "[{},{}]",
                    instance(1, 0, "MIG-a", 600.0),
                    instance(1, 1, "MIG-b", 500.0)
                ),
                "[]",
            ),
            "mig[1].memory_total_mib = 500 differs from mig[0]'s 600",
        ),
        (
            script(&format!("[{}]", eight.join(",")), "[]"),
            "mig lists 8 instances, a GPU holds at most 7",
        ),
        (
            script(&format!("[{}]", instance(1, 0, "MIG-a", -1.0)), "[]"),
            "mig[0].memory_total_mib must be a finite number >= 0",
        ),
        (
            script(&format!("[{}]", instance(u32::MAX, 0, "MIG-a", 1.0)), "[]"),
            "mig[0].gpu_instance_id is 0xFFFFFFFF",
        ),
        (
            script(
                r#"[{"gpu_instance_id":1,"compute_instance_id":0,"uuid":"M","memory_total_mib":1,
                "profile":"1g.5gb"}]"#,
                "[]",
            ),
            "profile",
        ),
        (
            script(
                r#"[{"gpu_instance_id":1,"uuid":"M","memory_total_mib":1}]"#,
                "[]",
            ),
            "compute_instance_id",
        ),
        (
            script(&one, r#"[{"pid":7,"gpu_instance_id":5}]"#),
            "devices[0]: timeline[0].processes[0] (pid 7): gpu_instance_id 5 matches no instance",
        ),
        (
            script(
                &one,
                r#"[{"pid":1},{"pid":7,"gpu_instance_id":1,"compute_instance_id":3}]"#,
            ),
            "processes[1] (pid 7): compute_instance_id 3 matches no instance of gpu_instance_id 1",
        ),
        (
            script("", r#"[{"pid":7,"gpu_instance_id":1}]"#),
            "gpu_instance_id 1 on a device without mig",
        ),
        (
            script(&one, r#"[{"pid":7,"compute_instance_id":0}]"#),
            "compute_instance_id 0 without gpu_instance_id",
        ),
        (
            script(&two_in_one, r#"[{"pid":7,"gpu_instance_id":1}]"#),
            "gpu_instance_id 1 has 2 compute instances in mig: name compute_instance_id",
        ),
        (
            script(&one, r#"[{"pid":7,"gpu_instance":1}]"#),
            "gpu_instance",
        ),
    ];
    for (json, needle) in cases {
        let err = parse(&json)
            .expect_err("a bad script is refused")
            .to_string();
        assert!(
            err.contains(needle),
            "{json}: {err:?} should mention {needle}"
        );
    }
}

#[test]
fn handles_tell_gpus_and_mig_devices_apart() {
    for parent in [0, 1, 5, 63, 1000] {
        assert_eq!(decode_handle(handle_for(parent)), Handle::Gpu(parent));
        for index in 0..7 {
            let h = mig_handle_for(parent, index);
            assert_eq!(decode_handle(h), Handle::Mig { parent, index });
            assert_ne!(decode_handle(h), decode_handle(handle_for(parent)));
        }
    }
    assert_ne!(mig_handle_for(0, 1), mig_handle_for(1, 0));
    assert_eq!(
        decode_handle(std::ptr::null_mut()),
        Handle::Gpu(usize::MAX),
        "null names no device"
    );
}
