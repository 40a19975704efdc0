//! GPU processes: presence in and out of the host's PID namespace, and process lists read at
//! their own slower cadence, carried in between with the time they were read.

use super::{ORPHAN_PID, fake_nvml, fake_source};
use serde_json::json;
use shared::Presence;
use std::time::{Duration, Instant};
use vramio::collect::sources::GpuSource;
use vramio::collect::sources::gpu::NvmlSource;
use vramio::collect::sources::gpu::identity::PidNamespace;
use vramio::collect::sources::gpu::processes::PROCESS_LIST_PERIOD;

#[test]
fn in_a_child_pid_namespace_host_pids_are_not_visible_rather_than_exited() {
    let Some(script) = fake_nvml::in_child_process(
        "processes::in_a_child_pid_namespace_host_pids_are_not_visible_rather_than_exited",
    ) else {
        return;
    };
    let me = std::process::id();
    script.write(
        &json!({"devices": [{"name": "g", "uuid": "GPU-c", "memory_total_mib": 1000,
            "timeline": [{"at_s": 0, "memory_used_mib": 900,
                "processes": [{"pid": me, "used_mib": 500}, {"pid": ORPHAN_PID, "used_mib": 300}]}]}]})
        .to_string(),
    );
    let mut source =
        NvmlSource::new(Some(fake_nvml::fake_nvml_path())).with_pid_namespace(PidNamespace::Child);
    let reading = source.sample();
    let procs = reading.gpus[0].processes.as_ref().expect("processes");
    assert_eq!(procs.len(), 2);
    for p in procs {
        // A local pid with the same number is another process: not looked up, not named.
        assert_eq!(p.presence, Presence::NotVisible, "pid {}", p.pid);
        assert_eq!((&p.name, &p.user), (&None, &None), "pid {}", p.pid);
    }
    assert!(procs[0].used_bytes.is_some());
}

#[test]
fn process_lists_are_read_every_period_and_carried_with_the_time_they_were_read() {
    let Some(script) = fake_nvml::in_child_process(
        "processes::process_lists_are_read_every_period_and_carried_with_the_time_they_were_read",
    ) else {
        return;
    };
    let me = std::process::id();
    // A second holder appears 0.5 s after init; memory grows 100 MiB/s throughout.
    script.write(
        &json!({"devices": [{"name": "g", "uuid": "GPU-p", "memory_total_mib": 100000,
            "timeline": [
                {"at_s": 0, "memory_used_mib": 1000, "processes": [{"pid": me, "used_mib": 900}]},
                {"at_s": 0.5, "memory_used_mib": 1050,
                 "processes": [{"pid": me, "used_mib": 900}, {"pid": ORPHAN_PID, "used_mib": 50}]},
                {"at_s": 100, "memory_used_mib": 11000}]}]})
        .to_string(),
    );
    let mut source = fake_source();
    let first = source.sample();
    let read_at = Instant::now();
    let g = &first.gpus[0];
    let first_t = g.processes_t_ms.expect("the first tick reads the list");
    assert_eq!(g.processes.as_ref().map(Vec::len), Some(1));

    std::thread::sleep(Duration::from_millis(1000));
    let second = source.sample();
    assert!(
        read_at.elapsed() < PROCESS_LIST_PERIOD,
        "the machine is too slow"
    );
    let g = &second.gpus[0];
    assert!(
        g.memory.map(|m| m.used_bytes) > first.gpus[0].memory.map(|m| m.used_bytes),
        "memory is read every tick"
    );
    assert_eq!(
        g.processes, first.gpus[0].processes,
        "within the period the list is carried"
    );
    assert_eq!(
        g.processes_t_ms,
        Some(first_t),
        "a carried list keeps the time it was read, never this tick's"
    );

    std::thread::sleep(
        (read_at + PROCESS_LIST_PERIOD + Duration::from_millis(100)) - Instant::now(),
    );
    let third = source.sample();
    let g = &third.gpus[0];
    let procs = g.processes.as_ref().expect("processes");
    assert_eq!(procs.len(), 2, "read again after the period: {procs:?}");
    assert_eq!(procs[1].presence, Presence::Exited);
    let third_t = g.processes_t_ms.expect("read time");
    assert!(third_t >= first_t + 3000, "{third_t} vs {first_t}");
}
