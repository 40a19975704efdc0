//! One `/metrics` scrape (issue 9: <= 200 µs for 8 GPUs, 16 block devices, 20 mounts and 64 GPU
//! processes; a hub of 256 such hosts <= 20 ms), timed the way a scrape runs: each host's newest
//! frame decoded from the JSON the hub holds (a new frame since the last scrape) and its
//! diagnosis, then encoded by `prometheus-client`. Also the encoding alone.
//!
//! `cargo bench -p vramio --bench metrics_scrape`.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use shared::diagnosis::{Thresholds, diagnose};
use shared::{BlockDevice, Frame, Gpu, GpuProcess, Mount, MountKind, Presence};
use std::hint::black_box;
use std::time::Duration;
use vramio::host_feed::fleet::Fleet;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::metrics::{HostData, Options, Scrape};

/// The golden frame grown to 8 GPUs x 8 processes, 16 disks and 20 mounts.
fn big_frame(t_ms: u64) -> Frame {
    let fixture = include_str!("../../tests/fixtures/protocol/server-frame.json");
    let msg: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
    let mut frame: Frame = serde_json::from_value(msg["frame"].clone()).expect("frame");
    let gpu: Gpu = frame.gpus[0].clone();
    let process: GpuProcess = gpu.processes.as_ref().expect("processes")[0].clone();
    frame.gpus = (0..8)
        .map(|i| {
            let mut g = gpu.clone();
            g.index = i;
            g.uuid = Some(format!("GPU-{i:08}-0000-0000-0000-000000000000"));
            g.processes = Some(
                (0..8)
                    .map(|p| GpuProcess {
                        pid: 10_000 + i * 8 + p,
                        presence: Presence::Visible,
                        name: Some(format!("python{p}")),
                        ..process.clone()
                    })
                    .collect(),
            );
            g
        })
        .collect();
    let disk: BlockDevice = frame.block_devices[0].clone();
    frame.block_devices = (0..16)
        .map(|i| BlockDevice {
            name: format!("nvme{i}n1"),
            ..disk.clone()
        })
        .collect();
    let mount: Mount = frame.mounts[0].clone();
    frame.mounts = (0..20)
        .map(|i| Mount {
            mount_point: format!("/data/{i}"),
            device: format!("/dev/nvme{}n1p1", i % 16),
            kind: MountKind::LocalNvme,
            ..mount.clone()
        })
        .collect();
    frame.t_ms = t_ms;
    frame
}

/// The golden frame with 8 GPUs, its 3 processes on each, 1 disk and 1 mount (the hub
/// benchmark's peer).
fn typical_frame(t_ms: u64) -> Frame {
    let mut frame = big_frame(t_ms);
    let fixture = include_str!("../../tests/fixtures/protocol/server-frame.json");
    let msg: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
    let golden: Frame = serde_json::from_value(msg["frame"].clone()).expect("frame");
    for g in &mut frame.gpus {
        g.processes = golden.gpus[0].processes.clone();
    }
    frame.block_devices.truncate(1);
    frame.mounts.truncate(1);
    frame
}

/// `hosts` hubs, each holding a minute of `make`'s frames and the diagnosis of them.
fn fleet(hosts: usize, make: fn(u64) -> Frame) -> (Fleet, Vec<Frame>) {
    let interval = Duration::from_secs(1);
    let frames: Vec<Frame> = (0..60)
        .map(|i| make(1_800_000_000_000 + i * 1000))
        .collect();
    let diagnosis = diagnose(&frames, &Thresholds::default(), None);
    let hubs = (0..hosts)
        .map(|h| {
            let hub = HostFeed::new(
                format!("node-{h:03}"),
                interval,
                HostFeedConfig::for_interval(interval),
            );
            for f in &frames {
                hub.publish(f.clone()).expect("publish");
            }
            hub.publish_diagnosis(60, &diagnosis).expect("diagnosis");
            hub
        })
        .collect();
    (Fleet::new(hubs), frames)
}

fn bench(c: &mut Criterion) {
    let frame = big_frame(1_800_000_000_000);
    let frames: Vec<Frame> = (0..60)
        .map(|i| big_frame(1_800_000_000_000 + i * 1000))
        .collect();
    let diagnosis = diagnose(&frames, &Thresholds::default(), None);
    let typed = Scrape {
        options: Options::default(),
        hosts: vec![HostData::up("node", frame, Some(diagnosis))],
        viewers: Some(1),
        history: None,
    };
    let size = typed.clone().render().expect("render").len();
    println!("one host: {size} bytes of exposition");
    c.bench_function("encode one host (typed frame)", |b| {
        b.iter(|| black_box(typed.clone().render().expect("render")))
    });

    let hub = Options {
        hub_mode: true,
        show_users: false,
    };
    let big: fn(u64) -> Frame = big_frame;
    let typical: fn(u64) -> Frame = typical_frame;
    for (hosts, options, make, what) in [
        (
            1,
            Options::default(),
            big,
            "8 GPUs x 8 processes, 16 disks, 20 mounts",
        ),
        (256, hub, typical, "8 GPUs x 3 processes, 1 disk, 1 mount"),
        (256, hub, big, "8 GPUs x 8 processes, 16 disks, 20 mounts"),
    ] {
        let (fleet, frames) = fleet(hosts, make);
        let last = frames.last().expect("frames").clone();
        let mut group = c.benchmark_group(format!("scrape {hosts} host(s) of {what}"));
        if hosts > 1 {
            group.sample_size(20);
        }
        group.bench_function("decode + encode", |b| {
            b.iter_batched(
                // A new frame on every host since the last scrape: each is decoded once.
                || {
                    for hub in fleet.hubs() {
                        hub.publish(last.clone()).expect("publish");
                    }
                },
                |()| {
                    let scrape = Scrape::of_fleet(&fleet, options, 1);
                    black_box(scrape.render().expect("render"))
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_function("decode only", |b| {
            b.iter_batched(
                || {
                    for hub in fleet.hubs() {
                        hub.publish(last.clone()).expect("publish");
                    }
                },
                |()| black_box(Scrape::of_fleet(&fleet, options, 1)),
                BatchSize::PerIteration,
            )
        });
        let decoded = Scrape::of_fleet(&fleet, options, 1);
        group.bench_function("encode only", |b| {
            b.iter(|| black_box(decoded.clone().render().expect("render")))
        });
        group.bench_function("encode only, one pass", |b| {
            b.iter(|| black_box(decoded.clone().render_whole().expect("render")))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
