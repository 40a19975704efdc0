//! Criterion benchmarks for the hot paths: one sampler tick (fake NVML with 8 GPUs plus this
//! host's real disks and memory), frame encoding, and hub fan-out to 1, 100 and 1,000 viewers.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;
use vramio::collect::sampler::{Sampler, SamplerConfig};
use vramio::collect::sources::Sources;
use vramio::host_feed::{HostFeed, HostFeedConfig};

fn fake_nvml() -> PathBuf {
    let exe = std::env::current_exe().expect("bench binary path");
    let dir = exe.parent().expect("deps dir");
    [dir.join("libfake_nvml.so"), dir.join("../libfake_nvml.so")]
        .into_iter()
        .find(|p| p.exists())
        .expect("libfake_nvml.so next to the bench binary")
}

fn eight_gpu_script() -> PathBuf {
    let devices: Vec<String> = (0..8)
        .map(|i| {
            format!(
                r#"{{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0000000{i}-0000-0000-0000-000000000000",
                "memory_total_mib": 81559, "repeat": true, "lost_at_s": null, "slow_ms": 0,
                "timeline": [{{"at_s": 0, "memory_used_mib": 30000, "util_gpu": 90, "util_mem": 40,
                  "temperature_c": 60, "power_w": 500,
                  "processes": [{{"pid": {pid}, "used_mib": 29000}}, {{"pid": 4000000, "used_mib": 500}}]}},
                  {{"at_s": 10, "memory_used_mib": 70000, "util_gpu": 20}}]}}"#,
                pid = std::process::id()
            )
        })
        .collect();
    let path = std::env::temp_dir().join(format!("vramio-bench-{}.json", std::process::id()));
    std::fs::write(
        &path,
        format!(
            r#"{{"driver_version": "580.00", "devices": [{}]}}"#,
            devices.join(",")
        ),
    )
    .expect("write script");
    path
}

fn sampler_tick(c: &mut Criterion) {
    // SAFETY: set before this process starts any thread that could read the environment.
    unsafe { std::env::set_var("FAKE_NVML_SCRIPT", eight_gpu_script()) };
    let sources = Sources::system_default(Some(fake_nvml()));
    let mut sampler = Sampler::new(
        sources,
        SamplerConfig {
            host: "bench".into(),
            interval: Duration::from_secs(1),
        },
    )
    .expect("sampler");
    let first = sampler.tick();
    assert_eq!(
        first.gpus.len(),
        8,
        "fake NVML must report 8 GPUs: {:?}",
        first.errors
    );
    c.bench_function("sampler_tick_8_gpus", |b| {
        b.iter(|| black_box(sampler.tick()))
    });

    let frame = sampler.tick();
    let size = serde_json::to_string(&frame).map(|s| s.len()).unwrap_or(0);
    eprintln!("frame with 8 GPUs and this host's disks: {size} bytes of JSON");
    c.bench_function("encode_frame_8_gpus", |b| {
        b.iter(|| black_box(serde_json::to_string(black_box(&frame))))
    });
    let _ = SAMPLED.set(frame);
}

/// A real frame (8 fake GPUs, this host's disks) for the fan-out benchmark.
static SAMPLED: std::sync::OnceLock<shared::Frame> = std::sync::OnceLock::new();

fn fan_out(c: &mut Criterion) {
    let frame = SAMPLED
        .get()
        .cloned()
        .unwrap_or_else(|| shared::Frame::empty("bench", 0, 0, 1000));
    let mut group = c.benchmark_group("hub_publish_and_deliver");
    for viewers in [1usize, 100, 1000] {
        let hub = HostFeed::new(
            "bench",
            Duration::from_secs(1),
            HostFeedConfig::for_interval(Duration::from_secs(1)),
        );
        let mut receivers: Vec<_> = (0..viewers).map(|_| hub.subscribe().frames).collect();
        group.bench_with_input(BenchmarkId::from_parameter(viewers), &viewers, |b, _| {
            b.iter(|| {
                hub.publish(frame.clone()).expect("encode");
                for rx in &mut receivers {
                    black_box(rx.try_recv().expect("delivered"));
                }
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = sampler_tick, fan_out
}
criterion_main!(benches);
