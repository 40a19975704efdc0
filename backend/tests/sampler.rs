//! The sampler end to end with the fake NVML: a slow NVML never delays the disk part of frames,
//! and the frames carry each source's cost.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;

use shared::{NvmlStatus, Source};
use std::time::{Duration, Instant};
use vramio::collect::sampler::{Sampler, SamplerConfig};
use vramio::collect::sources::Sources;

fn slow_gpu_script(slow_ms: u64) -> String {
    format!(
        r#"{{"driver_version": "580.00", "devices": [
        {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5", "memory_total_mib": 81559,
          "repeat": false, "lost_at_s": null, "slow_ms": {slow_ms},
          "timeline": [{{"at_s": 0, "memory_used_mib": 4000, "util_gpu": 10, "util_mem": 5,
                         "temperature_c": 40, "power_w": 100, "processes": []}}]}}]}}"#
    )
}

#[test]
fn slow_nvml_does_not_delay_the_disk_part_of_frames() {
    let Some(script) =
        fake_nvml::in_child_process("slow_nvml_does_not_delay_the_disk_part_of_frames")
    else {
        return;
    };
    // Every NVML call takes 300 ms, so one GPU reading takes seconds.
    script.write(&slow_gpu_script(300));
    let interval = Duration::from_millis(200);
    let mut sampler = Sampler::new(
        Sources::system_default(Some(fake_nvml::fake_nvml_path())),
        SamplerConfig {
            host: "t".into(),
            interval,
        },
    )
    .expect("sampler");

    let mut slowest = Duration::ZERO;
    let mut frames = Vec::new();
    let mut fresh_at = None;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(12) {
        let t = Instant::now();
        let frame = sampler.tick();
        slowest = slowest.max(t.elapsed());
        if fresh_at.is_none() && frame.gpus.iter().any(|g| g.memory.is_some()) {
            fresh_at = Some(frames.len());
        }
        frames.push(frame);
        if fresh_at.is_some_and(|at| frames.len() > at + 3) {
            break;
        }
        std::thread::sleep(interval.saturating_sub(t.elapsed()));
    }
    // A tick waits for NVML at most half an interval; allow generous scheduling noise, but far
    // below the seconds one NVML reading takes here.
    assert!(
        slowest < Duration::from_millis(600),
        "a tick took {slowest:?}"
    );
    let first = &frames[0];
    assert!(
        !first.block_devices.is_empty(),
        "disks arrive without waiting for NVML"
    );
    assert!(
        first.system.is_some(),
        "host stats arrive without waiting for NVML"
    );
    assert!(
        first
            .errors_for(Source::Gpu)
            .any(|e| e.message.contains("did not answer")),
        "the slow GPU source is reported: {:?}",
        first.errors
    );
    assert!(matches!(first.nvml, NvmlStatus::Error { .. }));
    assert!(first.cost.iter().any(|c| c.source == Source::BlockDevices));
    // Eventually the slow reading lands, and the frames after it carry the GPU.
    let at = fresh_at.expect("the GPU reading arrives within 12 s");
    let with_gpu = &frames[at];
    assert_eq!(
        with_gpu.gpus[0].name.as_deref(),
        Some("NVIDIA H100 80GB HBM3")
    );
    let gpu_cost = with_gpu
        .cost
        .iter()
        .find(|c| c.source == Source::Gpu)
        .expect("GPU cost is carried");
    // The ticks after it, while NVML is busy again, keep the GPU but never re-stamp its old
    // readings as new ones.
    let next = &frames[at + 1];
    assert_eq!(next.gpus.len(), 1);
    assert_eq!(next.gpus[0].uuid.as_deref(), Some("GPU-5"));
    assert!(
        next.gpus[0].memory.is_none(),
        "old readings are not re-stamped"
    );
    assert!(
        next.errors_for(Source::Gpu)
            .any(|e| e.message.contains("did not answer"))
    );
    assert!(
        gpu_cost.micros >= 300_000,
        "the GPU read cost {} µs",
        gpu_cost.micros
    );
}

#[test]
fn a_frame_from_this_host_has_disks_memory_and_costs() {
    let mut sampler = Sampler::new(
        Sources::system_default(Some("/nonexistent/libnvidia-ml.so.1".into())),
        SamplerConfig {
            host: "t".into(),
            interval: Duration::from_millis(200),
        },
    )
    .expect("sampler");
    let first = sampler.tick();
    std::thread::sleep(Duration::from_millis(200));
    let second = sampler.tick();
    assert!(
        matches!(second.nvml, NvmlStatus::NoDriver { .. }),
        "{:?}",
        second.nvml
    );
    assert!(second.gpus.is_empty());
    assert!(
        !second.mounts.is_empty(),
        "this host has mounts: {:?}",
        second.errors
    );
    let disk = second.block_devices.first().expect("this host has a disk");
    assert!(
        first.block_devices[0].read_bytes_per_sec.is_none(),
        "no rate from one sample"
    );
    assert!(disk.read_bytes_per_sec.is_some(), "a rate from two samples");
    let sys = second.system.as_ref().expect("host stats");
    assert!(sys.mem_total_bytes.is_some_and(|b| b.0 > 0) && sys.cpu_pct.is_some());
    for source in [
        Source::Gpu,
        Source::Mounts,
        Source::BlockDevices,
        Source::System,
    ] {
        assert!(
            second.cost.iter().any(|c| c.source == source),
            "cost of {source:?}"
        );
    }
}
