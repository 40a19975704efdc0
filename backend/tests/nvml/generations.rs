//! Driver generations: a driver before R510 (the legacy fake, which lacks
//! `nvmlDeviceGetMemoryInfo_v2` and the `_v3` process lists) and drivers that have the newer
//! symbols but fail the calls (`new_api`) still show memory and processes, and say which API
//! answered. The current driver's case is in `two_gpus_report_their_scripted_figures`.

use super::{MIB, ORPHAN_PID, fake_nvml, two_gpus};
use serde_json::json;
use shared::{Bytes, GpuApis, GpuState, MemoryApi, NvmlStatus, ProcessApi};
use vramio::collect::sources::GpuSource;
use vramio::collect::sources::gpu::NvmlSource;
use vramio::collect::sources::gpu::identity::PidNamespace;

const OLD: Option<GpuApis> = Some(GpuApis {
    memory: Some(MemoryApi::V1),
    processes: Some(ProcessApi::V2),
});
const NEW: Option<GpuApis> = Some(GpuApis {
    memory: Some(MemoryApi::V2),
    processes: Some(ProcessApi::V3),
});

#[test]
fn a_driver_before_r510_shows_memory_without_reserved_and_processes_from_v2() {
    let Some(script) = fake_nvml::in_child_process(
        "generations::a_driver_before_r510_shows_memory_without_reserved_and_processes_from_v2",
    ) else {
        return;
    };
    script.write(&two_gpus(None));
    let mut source = NvmlSource::new(Some(fake_nvml::legacy_fake_nvml_path()))
        .with_pid_namespace(PidNamespace::Host);
    let reading = source.sample();
    assert!(
        matches!(reading.nvml, NvmlStatus::Ok { .. }),
        "{:?}",
        reading.nvml
    );
    assert!(reading.errors.is_empty(), "{:?}", reading.errors);
    assert_eq!(reading.gpus.len(), 2);

    let g0 = &reading.gpus[0];
    assert_eq!(g0.state, GpuState::Ok);
    assert_eq!(g0.nvml_api, OLD, "the frame says the older calls answered");
    let m0 = g0.memory.expect("memory through v1");
    assert_eq!(m0.total_bytes, Bytes(81559 * MIB));
    // v1 has no reserved figure and counts the scripted 512 MiB in used.
    assert_eq!(m0.reserved_bytes, None);
    assert_eq!(m0.used_bytes, Bytes((40000 + 512) * MIB));
    assert_eq!(m0.free_bytes, Bytes((81559 - 512 - 40000) * MIB));
    let procs = g0.processes.as_ref().expect("processes through _v2");
    let listed: Vec<(u32, Option<Bytes>)> = procs.iter().map(|p| (p.pid, p.used_bytes)).collect();
    assert_eq!(
        listed,
        vec![
            (std::process::id(), Some(Bytes(39000 * MIB))),
            (ORPHAN_PID, Some(Bytes(900 * MIB)))
        ]
    );
    assert!(procs[0].name.is_some());

    // Graphics processes come through `_v2` too, merged by pid.
    let g1 = &reading.gpus[1];
    assert_eq!(g1.nvml_api, OLD);
    let procs = g1.processes.as_ref().expect("gpu 1 processes");
    assert_eq!(procs.len(), 2);
    assert_eq!(procs[0].used_bytes, Some(Bytes(200 * MIB)));

    // The next tick goes straight to the older calls and reads the same.
    assert_eq!(source.sample(), reading);
}

#[test]
fn a_driver_that_fails_the_newer_calls_falls_back_per_device() {
    let Some(script) = fake_nvml::in_child_process(
        "generations::a_driver_that_fails_the_newer_calls_falls_back_per_device",
    ) else {
        return;
    };
    for failure in ["function_not_found", "unknown"] {
        script.write(
            &json!({"driver_version": "516.59", "devices": [
                {"name": "WSL GPU", "uuid": "GPU-wsl", "memory_total_mib": 16384,
                 "memory_reserved_mib": 300, "new_api": failure,
                 "timeline": [{"at_s": 0, "memory_used_mib": 4000, "util_gpu": 50,
                               "processes": [{"pid": std::process::id(), "used_mib": 3900}]}]},
                {"name": "healthy", "uuid": "GPU-ok", "memory_total_mib": 16384,
                 "memory_reserved_mib": 300,
                 "timeline": [{"at_s": 0, "memory_used_mib": 1000, "util_gpu": 5,
                               "processes": []}]}]})
            .to_string(),
        );
        let mut source = NvmlSource::new(Some(fake_nvml::fake_nvml_path()))
            .with_pid_namespace(PidNamespace::Host);
        for tick in 0..2 {
            let reading = source.sample();
            assert!(reading.errors.is_empty(), "{failure}: {:?}", reading.errors);
            let failing = &reading.gpus[0];
            assert_eq!(failing.state, GpuState::Ok, "{failure}, tick {tick}");
            assert_eq!(failing.nvml_api, OLD, "{failure}, tick {tick}");
            let m = failing.memory.expect("memory through v1");
            assert_eq!(m.reserved_bytes, None);
            assert_eq!(m.used_bytes, Bytes((4000 + 300) * MIB));
            let procs = failing.processes.as_ref().expect("processes through _v2");
            assert_eq!(procs.len(), 1);
            assert_eq!(procs[0].used_bytes, Some(Bytes(3900 * MIB)));

            let healthy = &reading.gpus[1];
            assert_eq!(
                healthy.nvml_api, NEW,
                "the other device keeps the newer calls"
            );
            let m = healthy.memory.expect("memory through v2");
            assert_eq!(m.reserved_bytes, Some(Bytes(300 * MIB)));
            assert_eq!(m.used_bytes, Bytes(1000 * MIB));
            assert_eq!(healthy.processes.as_deref(), Some(&[][..]));
        }
    }
}
