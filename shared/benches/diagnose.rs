//! Cost of `diagnose` over a 5-minute window at 1 Hz (300 frames) with 8 GPUs, 16 block devices
//! and a few mounts (docs/performance.md#targets target: <= 100 us). Three cases: a healthy host, where only
//! the spine runs; a starved host with growing memory, where the branch and trends run too; and
//! that host running 4 jobs of 2 GPUs each, each diagnosed on its own GPUs and reads.

use criterion::{Criterion, criterion_group, criterion_main};
use shared::diagnosis::{Thresholds, diagnose};
use shared::{
    BlockDevice, Bytes, BytesPerSec, Frame, Gpu, GpuMemory, GpuProcess, GpuState, IoCounter, Job,
    JobGpu, JobIo, JobKind, Mount, MountKind, Percent, Presence, Psi, SystemStats,
};
use std::hint::black_box;

const GIB: u64 = 1024 * 1024 * 1024;
const MIB: f64 = 1024.0 * 1024.0;

/// Deterministic noise in 0..1.
fn noise(i: u64, k: u64) -> f64 {
    let x = (i * 2_654_435_761 + k * 40_503).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 40) as f64 / (1u64 << 24) as f64
}

fn frame(i: u64, starved: bool) -> Frame {
    let mut f = Frame::empty("node1", i, 1_700_000_000_000 + i * 1000, 1000);
    f.gpus = (0..8)
        .map(|g| {
            let total = 80 * GIB;
            let grow = if starved { i * 20 * 1024 * 1024 } else { 0 };
            let used = 50 * GIB + grow + (noise(i, g) * GIB as f64) as u64;
            let util = if starved { 30.0 } else { 85.0 } + 10.0 * noise(i, g + 8);
            Gpu {
                index: g as u32,
                uuid: Some(format!("GPU-{g}")),
                name: Some("NVIDIA H100 80GB HBM3".to_owned()),
                state: GpuState::Ok,
                memory: Some(GpuMemory {
                    total_bytes: Bytes(total),
                    used_bytes: Bytes(used),
                    reserved_bytes: Some(Bytes(0)),
                    free_bytes: Bytes(total - used),
                }),
                utilization_gpu_pct: Some(Percent(util)),
                utilization_memory_pct: Some(Percent(util / 2.0)),
                temperature_c: Some(60.0),
                power_w: Some(500.0),
                power_limit_w: Some(700.0),
                processes: Some(vec![GpuProcess {
                    pid: 1000 + g as u32,
                    presence: Presence::Visible,
                    name: Some("python".to_owned()),
                    user: None,
                    used_bytes: Some(Bytes(used - GIB)),
                    mig: None,
                }]),
                processes_t_ms: None,
                nvml_api: None,
                mig: Vec::new(),
            }
        })
        .collect();
    f.block_devices = (0..16)
        .map(|d| BlockDevice {
            name: format!("nvme{d}n1"),
            rotational: Some(false),
            partitions: Vec::new(),
            read_bytes_total: Some(Bytes(0)),
            write_bytes_total: Some(Bytes(0)),
            read_bytes_per_sec: Some(BytesPerSec((50.0 + 100.0 * noise(i, d + 20)) * MIB)),
            write_bytes_per_sec: Some(BytesPerSec(5.0 * MIB * noise(i, d + 40))),
            read_iops: Some(500.0),
            write_iops: Some(20.0),
            util_pct: Some(Percent(20.0)),
            r_await_ms: Some(0.2 + noise(i, d + 60)),
            w_await_ms: Some(0.1),
            avg_queue_size: Some(0.3),
            counters: None,
        })
        .collect();
    f.mounts = ["/", "/data", "/scratch", "/dev/shm"]
        .iter()
        .enumerate()
        .map(|(k, mp)| Mount {
            mount_point: (*mp).to_owned(),
            device: format!("/dev/nvme{k}n1p1"),
            fs_type: Some("ext4".to_owned()),
            kind: MountKind::LocalNvme,
            total_bytes: Some(Bytes(1000 * GIB)),
            used_bytes: Some(Bytes(400 * GIB + i * 1024 * 1024)),
            available_bytes: Some(Bytes(600 * GIB - i * 1024 * 1024)),
            inodes_total: Some(1_000_000),
            inodes_used: Some(100_000),
            read_only: Some(false),
        })
        .collect();
    f.system = Some(SystemStats {
        cpu_count: Some(64),
        cpu_pct: Some(Percent(40.0 + 10.0 * noise(i, 99))),
        iowait_pct: Some(Percent(1.0)),
        mem_total_bytes: Some(Bytes(512 * GIB)),
        mem_available_bytes: Some(Bytes(400 * GIB)),
        page_cache_bytes: Some(Bytes(50 * GIB)),
        dirty_bytes: Some(Bytes(0)),
        writeback_bytes: Some(Bytes(0)),
        swap_total_bytes: Some(Bytes(0)),
        swap_used_bytes: Some(Bytes(0)),
        psi_io: Some(Psi {
            some_avg10: Percent(0.5),
            full_avg10: None,
            some_total_us: None,
        }),
        psi_memory: Some(Psi {
            some_avg10: Percent(0.0),
            full_avg10: None,
            some_total_us: None,
        }),
    });
    f
}

/// 4 Slurm jobs of 2 GPUs each; job 0 reads most.
fn jobs(i: u64) -> Vec<Job> {
    (0..4u32)
        .map(|j| Job {
            kind: JobKind::Slurm,
            id: format!("{}", 4400 + j),
            step: Some("0".to_owned()),
            name: Some("python".to_owned()),
            user: Some("ana".to_owned()),
            gpus: (2 * j..2 * j + 2)
                .map(|index| JobGpu {
                    index,
                    uuid: None,
                    memory_used_bytes: Some(Bytes(50 * GIB)),
                    memory_share_pct: None,
                    utilization_pct: None,
                    mig: None,
                })
                .collect(),
            gpu_pids: vec![1000 + 2 * j, 1001 + 2 * j],
            workers: Some(8),
            rss_bytes: Some(Bytes(20 * GIB)),
            cpu_pct: Some(Percent(300.0)),
            cpu_from_cgroup: false,
            memory_from_cgroup: false,
            io: Some(JobIo {
                counter: IoCounter::ProcIo,
                read_iops: None,
                write_iops: None,
                devices: Vec::new(),
                read_bytes_per_sec: Some(BytesPerSec(
                    if j == 0 { 700.0 } else { 20.0 } * MIB * (1.0 + noise(i, u64::from(j))),
                )),
                write_bytes_per_sec: Some(BytesPerSec(MIB)),
                unreadable: 0,
            }),
            io_absent: None,
            psi_io: None,
            psi_memory: None,
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let th = Thresholds::default();
    for (name, starved, with_jobs) in [
        ("healthy", false, false),
        ("starved_growing", true, false),
        ("starved_growing_4jobs", true, true),
    ] {
        let frames: Vec<Frame> = (0..300)
            .map(|i| {
                let mut f = frame(i, starved);
                if with_jobs {
                    f.jobs = jobs(i);
                }
                f
            })
            .collect();
        let d = diagnose(&frames, &th, None);
        println!(
            "diagnose/{name}: verdict {}, {} findings, {} projections, job verdicts {:?}",
            d.verdict.id(),
            d.findings.len(),
            d.projections.len(),
            d.jobs.iter().map(|j| j.verdict.id()).collect::<Vec<_>>()
        );
        let prev = d;
        c.bench_function(&format!("diagnose/300x8gpu16disk/{name}"), |b| {
            b.iter(|| diagnose(black_box(&frames), &th, Some(&prev)))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
