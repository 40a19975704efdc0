//! The sampler end to end with the fake NVML: a slow NVML never delays the disk part of frames
//! (read through `Sampler::tick`, and in `vramio serve`, whose standby thread takes a hung tick
//! over), and the frames carry each source's cost.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

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

/// `vramio serve` with an NVML whose every call takes 300 ms (a GPU reading takes seconds, far past
/// the 125 ms deadline of a 250 ms tick): frames keep coming at the interval with the GPU marked
/// busy, the slow reading lands in a later frame, and SIGTERM stops the server at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_keeps_its_frames_coming_while_nvml_hangs() {
    let state = vramio_bin::TempDir::new("hung-nvml");
    let script = fake_nvml::write_script(&slow_gpu_script(300));
    let server = vramio_bin::Server::start(state.path(), script.path(), &["--port", "0"]);
    let bearer = format!("Bearer {}", server.token());
    let snapshot = || async {
        let resp = vramio_bin::http(
            server.authority(),
            "GET",
            "/api/snapshot",
            &[("host", server.authority()), ("authorization", &bearer)],
            "",
        )
        .await;
        (resp.status == 200).then(|| resp.json()["frame"].clone())
    };
    let start = Instant::now();
    let mut seqs = Vec::new();
    let mut busy = 0;
    let mut landed = None;
    while start.elapsed() < Duration::from_secs(15) && landed.is_none() {
        if let Some(frame) = snapshot().await {
            let seq = frame["seq"].as_u64().expect("seq");
            if seqs.last() != Some(&seq) {
                seqs.push(seq);
                let frame: shared::Frame = serde_json::from_value(frame).expect("a frame");
                if frame
                    .errors_for(Source::Gpu)
                    .any(|e| e.message.contains("did not answer"))
                {
                    assert!(!frame.block_devices.is_empty() && frame.system.is_some());
                    busy += 1;
                } else if frame.gpus.first().is_some_and(|g| g.memory.is_some()) {
                    landed = Some(start.elapsed());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let landed = landed.unwrap_or_else(|| panic!("no GPU reading in 15 s; seqs {seqs:?}"));
    // About 4 frames a second while NVML hangs: the ticks never waited for it.
    let per_s = seqs.len() as f64 / landed.as_secs_f64();
    assert!(
        busy >= 3 && per_s > 2.0,
        "{busy} busy of {} frames in {landed:?}",
        seqs.len()
    );
    // A thread still in NVML does not hold the shutdown up.
    let t = Instant::now();
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "stopped in {:?}",
        t.elapsed()
    );
}
