//! The NVML path end to end: `NvmlSource` through nvml-wrapper against the scripted fake
//! `libnvidia-ml` (tests/fake-nvml and its legacy build), one child process per scenario (see
//! common/fake_nvml.rs). This file: figures, lost GPUs, init failures, interpolation;
//! [`generations`]: drivers with and without the newer calls; [`processes`]: process identity
//! and the slower process-list cadence; [`mig`]: a GPU in MIG mode.

#[path = "../common/fake_nvml.rs"]
mod fake_nvml;
mod generations;
mod mig;
mod processes;

use serde_json::json;
use shared::{
    Bytes, GpuApis, GpuState, MemoryApi, NvmlStatus, Percent, Presence, ProcessApi, Source,
};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vramio::collect::sources::gpu::NvmlSource;
use vramio::collect::sources::gpu::identity::PidNamespace;
use vramio::collect::sources::{GpuReading, GpuSource};

const MIB: u64 = 1024 * 1024;
/// A pid above the kernel's maximum (2^22): never a live process, so an orphan to vramio.
const ORPHAN_PID: u32 = 4_000_000;

/// A source on the fake library. The fake lists pids of this test's own PID namespace, so the
/// source is told that namespace shows them (as the host's does), wherever the test runs.
fn fake_source() -> NvmlSource {
    NvmlSource::new(Some(fake_nvml::fake_nvml_path())).with_pid_namespace(PidNamespace::Host)
}

fn gpu_errors(reading: &GpuReading, index: u32) -> Vec<&str> {
    let item = format!("gpu {index}");
    reading
        .errors
        .iter()
        .filter(|e| e.source == Source::Gpu && e.item.as_deref() == Some(item.as_str()))
        .map(|e| e.message.as_str())
        .collect()
}

fn two_gpus(gpu1_lost_at_s: Option<f64>) -> String {
    let me = std::process::id();
    json!({
        "driver_version": "580.00",
        "devices": [
            {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-1111-2222-3333-444444444444",
             "memory_total_mib": 81559, "memory_reserved_mib": 512, "power_limit_w": 700,
             "repeat": false, "lost_at_s": null, "slow_ms": 0,
             "timeline": [{"at_s": 0, "memory_used_mib": 40000, "util_gpu": 87, "util_mem": 45,
                           "temperature_c": 66, "power_w": 512.5,
                           "processes": [{"pid": me, "used_mib": 39000},
                                         {"pid": ORPHAN_PID, "used_mib": 900}]}]},
            {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-55555555-6666-7777-8888-999999999999",
             "memory_total_mib": 40960, "lost_at_s": gpu1_lost_at_s,
             "timeline": [{"at_s": 0, "memory_used_mib": 1024, "util_gpu": 3, "util_mem": 1,
                           "temperature_c": 41, "power_w": 61,
                           "processes": [{"pid": me, "used_mib": 200},
                                         {"pid": me, "used_mib": 100, "kind": "graphics"},
                                         {"pid": ORPHAN_PID + 1}]}]}
        ]
    })
    .to_string()
}

fn own_user_name() -> String {
    let out = std::process::Command::new("id")
        .arg("-un")
        .output()
        .expect("`id -un` runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn two_gpus_report_their_scripted_figures() {
    let Some(script) = fake_nvml::in_child_process("two_gpus_report_their_scripted_figures") else {
        return;
    };
    script.write(&two_gpus(None));
    let mut source = fake_source();
    let reading = source.sample();

    assert_eq!(
        reading.nvml,
        NvmlStatus::Ok {
            driver_version: Some("580.00".to_owned())
        }
    );
    assert!(reading.errors.is_empty(), "{:?}", reading.errors);
    assert_eq!(reading.gpus.len(), 2);

    let g0 = &reading.gpus[0];
    assert_eq!(g0.index, 0);
    assert_eq!(
        g0.uuid.as_deref(),
        Some("GPU-00000000-1111-2222-3333-444444444444")
    );
    assert_eq!(g0.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(g0.state, GpuState::Ok);
    let m0 = g0.memory.expect("gpu 0 memory");
    assert_eq!(m0.total_bytes, Bytes(81559 * MIB));
    assert_eq!(m0.used_bytes, Bytes(40000 * MIB));
    assert_eq!(m0.reserved_bytes, Some(Bytes(512 * MIB)));
    assert_eq!(m0.free_bytes, Bytes((81559 - 512 - 40000) * MIB));
    assert_eq!(g0.utilization_gpu_pct, Some(Percent(87.0)));
    assert_eq!(g0.utilization_memory_pct, Some(Percent(45.0)));
    assert_eq!(g0.temperature_c, Some(66.0));
    assert_eq!(g0.power_w, Some(512.5));
    assert_eq!(g0.power_limit_w, Some(700.0));
    assert_eq!(
        g0.nvml_api,
        Some(GpuApis {
            memory: Some(MemoryApi::V2),
            processes: Some(ProcessApi::V3)
        }),
        "a current driver answers the newest calls"
    );
    assert!(g0.processes_t_ms.is_some_and(|t| t > 1_600_000_000_000));

    let me = std::process::id();
    let my_comm = std::fs::read_to_string("/proc/self/comm").expect("own comm");
    let procs = g0.processes.as_ref().expect("gpu 0 processes");
    assert_eq!(procs.len(), 2);
    assert_eq!(procs[0].pid, me);
    assert_eq!(procs[0].presence, Presence::Visible);
    assert_eq!(procs[0].name.as_deref(), Some(my_comm.trim_end()));
    assert_eq!(procs[0].user, Some(own_user_name()));
    assert_eq!(procs[0].used_bytes, Some(Bytes(39000 * MIB)));
    assert_eq!(procs[1].pid, ORPHAN_PID);
    assert_eq!(
        procs[1].presence,
        Presence::Exited,
        "a host pid that does not exist is an orphan"
    );
    assert_eq!(procs[1].name, None);
    assert_eq!(procs[1].user, None);
    assert_eq!(procs[1].used_bytes, Some(Bytes(900 * MIB)));

    let g1 = &reading.gpus[1];
    assert_eq!(g1.index, 1);
    assert_eq!(
        g1.uuid.as_deref(),
        Some("GPU-55555555-6666-7777-8888-999999999999")
    );
    assert_eq!(g1.name.as_deref(), Some("NVIDIA A100-SXM4-40GB"));
    assert_eq!(g1.state, GpuState::Ok);
    let m1 = g1.memory.expect("gpu 1 memory");
    assert_eq!(m1.total_bytes, Bytes(40960 * MIB));
    assert_eq!(m1.used_bytes, Bytes(1024 * MIB));
    assert_eq!(m1.reserved_bytes, Some(Bytes(0)));
    assert_eq!(g1.utilization_gpu_pct, Some(Percent(3.0)));
    assert_eq!(g1.utilization_memory_pct, Some(Percent(1.0)));
    assert_eq!(g1.temperature_c, Some(41.0));
    assert_eq!(g1.power_w, Some(61.0));
    assert_eq!(
        g1.power_limit_w, None,
        "no limit scripted: not supported, absent"
    );
    // Compute and graphics merged by pid (the larger figure), unknown memory stays unknown.
    let procs = g1.processes.as_ref().expect("gpu 1 processes");
    assert_eq!(procs.len(), 2);
    assert_eq!(procs[0].pid, me);
    assert_eq!(procs[0].used_bytes, Some(Bytes(200 * MIB)));
    assert_eq!(procs[1].pid, ORPHAN_PID + 1);
    assert_eq!(procs[1].used_bytes, None);

    // A second tick reads the same (facts come from the cache, the process lists are carried
    // with the time they were read).
    assert_eq!(source.sample(), reading);
}

#[test]
fn a_lost_gpu_keeps_its_identity_while_the_other_reports() {
    let Some(script) =
        fake_nvml::in_child_process("a_lost_gpu_keeps_its_identity_while_the_other_reports")
    else {
        return;
    };
    script.write(&two_gpus(Some(1.0)));
    let mut source = fake_source();
    let before = source.sample();
    // Init happened inside that call, so from here on at least this long has passed since it.
    let after_first = Instant::now();
    assert!(before.errors.is_empty(), "{:?}", before.errors);
    assert_eq!(before.gpus[1].state, GpuState::Ok);
    assert!(before.gpus[1].memory.is_some());

    std::thread::sleep((after_first + Duration::from_millis(1100)) - Instant::now());
    for _ in 0..2 {
        let after = source.sample();
        assert!(
            matches!(after.nvml, NvmlStatus::Ok { .. }),
            "{:?}",
            after.nvml
        );
        let lost = &after.gpus[1];
        assert_eq!(lost.state, GpuState::Lost);
        assert_eq!(lost.index, 1);
        assert_eq!(
            lost.uuid.as_deref(),
            Some("GPU-55555555-6666-7777-8888-999999999999")
        );
        assert_eq!(lost.name.as_deref(), Some("NVIDIA A100-SXM4-40GB"));
        assert_eq!(lost.memory, None);
        assert_eq!(lost.utilization_gpu_pct, None);
        assert_eq!(lost.temperature_c, None);
        assert_eq!(lost.power_w, None);
        assert_eq!(lost.processes, None);
        let errors = gpu_errors(&after, 1);
        assert_eq!(errors.len(), 1, "{:?}", after.errors);
        assert!(errors[0].contains("GPU_IS_LOST"), "{}", errors[0]);

        let alive = &after.gpus[0];
        assert_eq!(alive.state, GpuState::Ok);
        assert_eq!(alive.memory, before.gpus[0].memory);
        assert_eq!(alive.utilization_gpu_pct, Some(Percent(87.0)));
        assert!(gpu_errors(&after, 0).is_empty());
    }
}

#[test]
fn no_library_is_no_driver() {
    let mut source = NvmlSource::new(Some(PathBuf::from("/nonexistent/vramio/libnvidia-ml.so.1")));
    for _ in 0..2 {
        let reading = source.sample();
        match &reading.nvml {
            NvmlStatus::NoDriver { message } => {
                assert!(message.starts_with("no NVIDIA driver found ("), "{message}");
                assert!(
                    message.contains("/nonexistent/vramio/libnvidia-ml.so.1"),
                    "{message}"
                );
            }
            other => panic!("expected NoDriver, got {other:?}"),
        }
        assert!(reading.gpus.is_empty());
        assert!(reading.errors.is_empty(), "no driver is not an error");
    }
}

#[test]
fn a_malformed_script_is_an_nvml_error_and_init_is_retried_with_backoff() {
    let Some(script) = fake_nvml::in_child_process(
        "a_malformed_script_is_an_nvml_error_and_init_is_retried_with_backoff",
    ) else {
        return;
    };
    script.write(r#"{"devices": [{"name": "broken""#);
    let mut source = fake_source();
    let failed = source.sample();
    let failed_at = Instant::now();
    match &failed.nvml {
        NvmlStatus::Error { message } => {
            assert!(message.contains("initialise"), "{message}")
        }
        other => panic!("expected Error, got {other:?}"),
    }
    assert!(failed.gpus.is_empty());
    assert_eq!(failed.errors.len(), 1);
    assert_eq!(failed.errors[0].item, None);

    // Fixed, but the first retry waits a second: the next tick still reports the error.
    script.write(&two_gpus(None));
    let soon = source.sample();
    if failed_at.elapsed() < Duration::from_millis(900) {
        assert!(
            matches!(soon.nvml, NvmlStatus::Error { .. }),
            "{:?}",
            soon.nvml
        );
    }
    std::thread::sleep(Duration::from_millis(1100));
    let recovered = source.sample();
    assert!(
        matches!(recovered.nvml, NvmlStatus::Ok { .. }),
        "{:?}",
        recovered.nvml
    );
    assert_eq!(recovered.gpus.len(), 2);
}

#[test]
fn a_missing_script_is_an_nvml_error() {
    let Some(_unwritten) = fake_nvml::in_child_process("a_missing_script_is_an_nvml_error") else {
        return;
    };
    let reading = fake_source().sample();
    assert!(
        matches!(&reading.nvml, NvmlStatus::Error { message } if !message.is_empty()),
        "{:?}",
        reading.nvml
    );
    assert!(reading.gpus.is_empty());
}

#[test]
fn values_between_points_are_interpolated() {
    let Some(script) = fake_nvml::in_child_process("values_between_points_are_interpolated") else {
        return;
    };
    // 1,000 MiB and 1 percentage point per second.
    script.write(
        &json!({"driver_version": "580.00", "devices": [
            {"name": "ramp", "uuid": "GPU-ramp", "memory_total_mib": 200000,
             "timeline": [{"at_s": 0, "memory_used_mib": 0, "util_gpu": 0, "util_mem": 0},
                          {"at_s": 100, "memory_used_mib": 100000, "util_gpu": 100}]}]})
        .to_string(),
    );
    let mut source = fake_source();
    let before_first = Instant::now();
    let _ = source.sample(); // init: the clock starts inside this call
    let after_first = Instant::now();
    std::thread::sleep(Duration::from_millis(700));
    let before_second = Instant::now();
    let reading = source.sample();
    let after_second = Instant::now();
    // Seconds since init, bounded on both sides.
    let lo = (before_second - after_first).as_secs_f64();
    let hi = (after_second - before_first).as_secs_f64();

    let gpu = &reading.gpus[0];
    let used_mib = gpu.memory.expect("memory").used_bytes.as_mib();
    assert!(
        (lo * 1000.0 - 1.0..=hi * 1000.0 + 1.0).contains(&used_mib),
        "used {used_mib} MiB, expected between {} and {}",
        lo * 1000.0,
        hi * 1000.0
    );
    assert!(used_mib > 0.0 && used_mib < 100000.0);
    let util = gpu.utilization_gpu_pct.expect("utilization").0;
    assert!(
        (lo.floor()..=hi.ceil()).contains(&util),
        "util {util}, t in [{lo}, {hi}]"
    );
    assert_eq!(gpu.utilization_memory_pct, Some(Percent(0.0)));
}
