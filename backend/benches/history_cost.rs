//! What the history costs, on the real store (docs/history.md#costs-measured): the host of the
//! targets (8 GPUs, 16 disks, 20 mounts, 4 jobs, the host), frames made up second by second with
//! noisy figures, through the same sink and writer thread as `serve`:
//!
//! 1. fills `VRAMIO_HISTORY_DAYS` (default 30) days as fast as the writer takes them, and prints
//!    the bytes of each tier and of the file, before and after `compact`;
//! 2. the thread CPU of keeping one second at 1 Hz: the sink's work on the sampler thread for one
//!    frame, a 10 s batch row's commit (a tenth of it), and an hour's seal (a 3600th);
//! 3. reading 24 h, 7 d and 30 d for a chart (1200 points a series), and the JSON it becomes;
//! 4. rewinding to a moment three days back (the frames rebuilt and diagnosed).
//!
//! `VRAMIO_HISTORY_DAYS=0` measures part 2 alone.
//!
//! `cargo bench -p vramio --bench history_cost`; `VRAMIO_HISTORY_KEEP=/DIR` keeps the filled
//! store there (for `VRAMIO_COST_HISTORY=/DIR` of the agent_cost bench).

use shared::{
    BlockDevice, Bytes, BytesPerSec, Frame, Gpu, GpuMemory, GpuState, Job, JobGpu, JobIo, JobKind,
    Mount, MountKind, Percent, SystemStats,
};
use std::time::{Duration, Instant};
use vramio::history::{DEFAULT_MAX_BYTES, History, Store};

fn cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// xorshift64.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

const GIB: u64 = 1 << 30;

/// The host of the targets at second `t` (of the run).
fn frame(t: u64, t0_ms: u64, r: &mut Rng, used: &mut [u64], disks: &mut [f64]) -> Frame {
    let mut f = Frame::empty("bench-host", t + 1, t0_ms + t * 1000, 1000);
    let idle = (t / 1800) % 4 == 3;
    let busy = |r: &mut Rng| {
        if idle {
            0.0
        } else {
            (85.0 + 15.0 * r.unit()).round()
        }
    };
    for i in 0..8u32 {
        let held = if idle {
            2 * GIB
        } else {
            (40 + (t / 3600 + u64::from(i)) % 30) * GIB
        };
        f.gpus.push(Gpu {
            memory: Some(GpuMemory {
                total_bytes: Bytes(80 * GIB),
                used_bytes: Bytes(held),
                reserved_bytes: Some(Bytes(512 << 20)),
                free_bytes: Bytes(80 * GIB - held),
            }),
            utilization_gpu_pct: Some(Percent(busy(r))),
            utilization_memory_pct: Some(Percent(busy(r))),
            temperature_c: Some((55.0 + 20.0 * r.unit()).round()),
            power_w: Some((300.0 + 400.0 * r.unit()).round()),
            power_limit_w: Some(700.0),
            ..Gpu::unread(
                i,
                Some(format!("GPU-{i:08}")),
                Some("H100".into()),
                GpuState::Ok,
            )
        });
    }
    for (d, level) in disks.iter_mut().enumerate() {
        // Each disk's load wanders (an epoch reading its shards, then a quiet spell) and every
        // second is noisy around it: rates in whole 512-byte sectors, as the kernel counts.
        *level = (*level + (r.unit() - 0.5) * 0.1).clamp(0.0, 1.0);
        let load = if idle { 0.0 } else { *level };
        let noisy =
            |r: &mut Rng, top: f64| (load * top * (0.8 + 0.4 * r.unit()) / 512.0).round() * 512.0;
        let read = noisy(r, 900e6);
        let write = noisy(r, 100e6) / 4.0;
        let util = (load * 100.0 * (0.9 + 0.1 * r.unit()) * 10.0).round() / 10.0;
        f.block_devices.push(BlockDevice {
            name: format!("nvme{d}n1"),
            rotational: Some(false),
            partitions: Vec::new(),
            read_bytes_total: None,
            write_bytes_total: None,
            read_bytes_per_sec: Some(BytesPerSec(read)),
            write_bytes_per_sec: Some(BytesPerSec(write)),
            read_iops: Some((read / 131_072.0).round()),
            write_iops: Some((write / 131_072.0).round()),
            util_pct: Some(Percent(util.min(100.0))),
            r_await_ms: (read > 0.0).then(|| (0.2 + load * 2.0 * r.unit() * 100.0).round() / 100.0),
            w_await_ms: (write > 0.0).then(|| (0.1 + load * r.unit() * 100.0).round() / 100.0),
            avg_queue_size: Some((load * 64.0 * r.unit() * 100.0).round() / 100.0),
            counters: None,
        });
    }
    for (m, u) in used.iter_mut().enumerate() {
        *u += (r.unit() * 4096.0).round() as u64 * 4096;
        f.mounts.push(Mount {
            mount_point: format!("/data{m}"),
            device: format!("/dev/sd{m}"),
            fs_type: Some("ext4".into()),
            kind: MountKind::LocalSsd,
            total_bytes: Some(Bytes(4 << 40)),
            used_bytes: Some(Bytes(*u)),
            available_bytes: Some(Bytes((4u64 << 40) - *u)),
            inodes_total: Some(1 << 28),
            inodes_used: Some(1 << 20),
            read_only: Some(false),
        });
    }
    f.system = Some(SystemStats {
        cpu_count: Some(64),
        cpu_pct: Some(Percent(busy(r))),
        iowait_pct: Some(Percent((r.unit() * 100.0).round() / 10.0)),
        mem_total_bytes: Some(Bytes(512 * GIB)),
        mem_available_bytes: Some(Bytes((200 + t / 3600 % 100) * GIB)),
        page_cache_bytes: Some(Bytes(100 * GIB)),
        dirty_bytes: Some(Bytes((r.unit() * 1e9) as u64 / 4096 * 4096)),
        writeback_bytes: Some(Bytes(0)),
        swap_total_bytes: Some(Bytes(0)),
        swap_used_bytes: Some(Bytes(0)),
        psi_io: None,
        psi_memory: None,
    });
    for j in 0..4u32 {
        let mut job = Job::new(JobKind::Slurm, format!("{}", 4000 + j), vec![1000 + j]);
        job.step = Some("0".into());
        job.rss_bytes = Some(Bytes((20 + t / 3600 % 10) * GIB));
        job.cpu_pct = Some(Percent(busy(r)));
        job.gpus = (0..2)
            .map(|k| JobGpu {
                index: j * 2 + k,
                uuid: None,
                memory_used_bytes: Some(Bytes(40 * GIB)),
                memory_share_pct: Some(Percent(50.0)),
                utilization_pct: Some(Percent(busy(r))),
                mig: None,
            })
            .collect();
        job.io = Some(JobIo {
            counter: shared::IoCounter::ProcIo,
            read_bytes_per_sec: Some(BytesPerSec((r.unit() * 5e8).round())),
            write_bytes_per_sec: Some(BytesPerSec((r.unit() * 5e7).round())),
            unreadable: 0,
            read_iops: None,
            write_iops: None,
            devices: Vec::new(),
        });
        f.jobs.push(job);
    }
    f
}

fn mb(b: u64) -> f64 {
    b as f64 / 1e6
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // The writer's warnings (a failed seal, a trim) show on stderr.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .try_init();
    let days: u64 = std::env::var("VRAMIO_HISTORY_DAYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = std::env::temp_dir().join(format!("vramio-history-cost-{}", std::process::id()));
    if let Ok(hours) = std::env::var("VRAMIO_HISTORY_GROWTH") {
        growth(&dir, hours.parse().unwrap_or(24));
        return;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let secs = days * 86_400;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let t0_ms = (now_ms - secs * 1000) / 1000 * 1000;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut used = vec![1u64 << 40; 20];
    let mut disks = vec![0.5f64; 16];
    let thresholds = shared::diagnosis::Thresholds::default();

    let end = t0_ms + secs * 1000;
    // `VRAMIO_HISTORY_DAYS=0`: writing only (part 2).
    if days > 0 {
        // 1. Fill.
        let started = Instant::now();
        {
            let (history, sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens");
            let mut diagnoser = vramio::host_feed::diagnoser::Diagnoser::new(
                thresholds.clone(),
                vramio::host_feed::diagnoser::DEFAULT_WINDOW,
            )
            .diagnosing_every(vramio::host_feed::diagnoser::DIAGNOSE_EVERY)
            .with_history(Some(sink.blocking()));
            for t in 0..secs {
                diagnoser.record(frame(t, t0_ms, &mut rng, &mut used, &mut disks));
            }
            drop(diagnoser);
            history.close();
            let s = history.status();
            assert_eq!(s.dropped + s.failed + s.full, 0, "{s:?}");
        }
        let filled = started.elapsed();
        let (mut store, _) = Store::open(&dir).expect("opens");
        let (before, before_disk) = (store.file_bytes(), store.disk_bytes());
        let tiers = store.tier_sizes().expect("sizes");
        store.compact().expect("compacts");
        let (after, after_disk) = (store.file_bytes(), store.disk_bytes());
        let series = 13 + 8 * 9 + 16 * 8 + 20 * 5 + 4 * 10 + 8 * 3;
        println!(
            "history_cost: {series} series (8 GPUs, 16 disks, 20 mounts, 4 jobs on 2 GPUs each, the host), {days} d filled in {filled:.0?} through the sink and writer"
        );
        for (name, blocks, bytes) in &tiers {
            println!("  tier {name}: {blocks} blocks, {:.1} MB", mb(*bytes));
        }
        println!(
            "  file {:.1} MB long, {:.1} MB on disk; after compact {:.1} MB long, {:.1} MB on disk (target: at most 200 MB for 30 days)",
            mb(before),
            mb(before_disk),
            mb(after),
            mb(after_disk)
        );

        // 3. Reads for a chart.
        for (label, span) in [
            ("24 h", 86_400_000u64),
            ("7 d", 7 * 86_400_000),
            ("30 d", 30 * 86_400_000),
        ] {
            let span = span.min(secs * 1000);
            let mut times = Vec::new();
            let mut bytes = 0;
            let mut step = 0;
            for _ in 0..5 {
                let t = Instant::now();
                let a = store.read(end - span, end, 1200).expect("reads");
                let json = serde_json::to_vec(&a).expect("json");
                times.push(t.elapsed());
                bytes = json.len();
                step = a.step_ms;
            }
            println!(
                "  read {label} for a chart (1200 points a series, all series, as JSON): median {:.1?}, {:.1} MB of JSON, points of {} s",
                median(times),
                mb(bytes as u64),
                step / 1000
            );
        }
        drop(store);

        // 4. Rewind three days back (the history handle, as the route uses it).
        let (history, sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens");
        let back = end.saturating_sub(3 * 86_400_000);
        let mut times = Vec::new();
        for k in 0..if days > 3 { 5 } else { 0 } {
            let t = Instant::now();
            let m = history
                .moment(back - k * 60_000, &thresholds)
                .expect("reads")
                .expect("a moment");
            times.push(t.elapsed());
            assert!(m.step_ms >= 1000);
        }
        if !times.is_empty() {
            println!(
                "  rewind to a moment 3 days back (frames rebuilt from minutes, diagnosed): median {:.1?}",
                median(times)
            );
        }
        let mut times = Vec::new();
        for k in 0..5 {
            let t = Instant::now();
            let m = history
                .moment(end - 3_600_000 - k * 60_000, &thresholds)
                .expect("reads")
                .expect("a moment");
            times.push(t.elapsed());
            assert_eq!(m.step_ms, 1000);
        }
        println!(
            "  rewind to a moment 1 h back (60 frames rebuilt from seconds, diagnosed): median {:.1?}",
            median(times)
        );
        drop(sink);
        history.close();
        drop(history);
    }

    // 2. Writing at 1 Hz, by parts, on a fresh store.
    let live = dir.join("live");
    let (history, mut sink) = History::open(&live, DEFAULT_MAX_BYTES).expect("opens");
    // An hour from an hour's start: its seal is one block a series.
    let hour = end - end % 3_600_000 + 3_600_000;
    let frames: Vec<Frame> = (0..3600)
        .map(|t| frame(t, hour, &mut rng, &mut used, &mut disks))
        .collect();
    // The sink's frames stamped over the last ten minutes: it drops frames stamped over an hour
    // ahead of the clock (cheaply), which the next hour's would be.
    let recent_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        - 600_000;
    let mut spent = Duration::ZERO;
    for (k, f) in frames[..600].iter().enumerate() {
        let mut f = f.clone();
        f.t_ms = recent_ms + k as u64 * 1000;
        let c0 = cpu();
        sink.frame(&f);
        spent += cpu() - c0;
        // The writer keeps up at 1 Hz; here it must not drop what is measured next (the sleep
        // is the sampler's own, not the history's: it is not counted).
        std::thread::sleep(Duration::from_micros(200));
    }
    let per_frame = spent / 600;
    let dropped = history.status().dropped;
    assert_eq!(dropped, 0, "the sink's frames all went to the writer");
    sink.flush();
    drop(sink);
    history.close();
    drop(history);
    let (store, _) = Store::open(&live).expect("opens");
    drop(store);
    let writer = writer_cpu(&live, &frames, hour);
    println!(
        "  at 1 Hz: the sink on the sampler thread {per_frame:.1?} a frame; the writer thread {:.1?} a 10 s commit, {:.1?} an hourly seal",
        writer.0, writer.1
    );
    let pct =
        (per_frame.as_secs_f64() + writer.0.as_secs_f64() / 10.0 + writer.1.as_secs_f64() / 3600.0)
            * 100.0;
    println!("  = {pct:.4}% of one core (target: at most +0.005%)");
    let _ = std::fs::remove_dir_all(&live);
    match std::env::var("VRAMIO_HISTORY_KEEP") {
        // For the agent_cost bench's `VRAMIO_COST_HISTORY=/DIR`: the agent on a full store.
        Ok(keep) if !keep.is_empty() => {
            let _ = std::fs::remove_dir_all(&keep);
            std::fs::rename(&dir, &keep).expect("keeps the filled store");
            println!("  the filled store is kept in {keep}");
        }
        _ => {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// The writer's two costs on the real store: one 10 s row committed (median of 360), and the
/// hour they make sealed.
fn writer_cpu(dir: &std::path::Path, frames: &[Frame], end_ms: u64) -> (Duration, Duration) {
    let _ = std::fs::remove_dir_all(dir);
    let (history, _sink) = History::open(dir, DEFAULT_MAX_BYTES).expect("opens");
    drop(_sink);
    history.close();
    drop(history);
    let (store, _) = Store::open(dir).expect("opens");
    let mut ids = Ids::default();
    let mut commits = Vec::new();
    for (w, chunk) in frames.chunks(10).enumerate() {
        let mut batch = vramio::history::Batch::default();
        let mut row = Vec::new();
        for f in chunk {
            ids.push(f, &mut batch, &mut row);
        }
        batch.rows.push(((end_ms / 1000 / 10 + w as u64) * 10, row));
        let c0 = cpu();
        store.commit(&batch).expect("commits");
        commits.push(cpu() - c0);
    }
    let c0 = cpu();
    let sealed = store.seal(end_ms / 1000 + 3600 + 9).expect("seals");
    assert!(sealed.blocks > 0, "{sealed:?}");
    let seal = cpu() - c0;
    (median(commits), seal)
}

/// The file's size as the live writer grows it: one 10 s row a commit, a seal an hour.
fn growth(dir: &std::path::Path, hours: u64) {
    let _ = std::fs::remove_dir_all(dir);
    let (mut store, _) = Store::open(dir).expect("opens");
    let mut rng = Rng(3);
    let mut used = vec![1u64 << 40; 20];
    let mut disks = vec![0.5f64; 16];
    let start_s = 1_764_500_000 - 1_764_500_000 % 3600;
    let mut ids = Ids::default();
    for w in 0..hours * 360 {
        let mut batch = vramio::history::Batch::default();
        let mut row = Vec::new();
        for k in 0..10 {
            let t = w * 10 + k;
            let f = frame(t, start_s * 1000, &mut rng, &mut used, &mut disks);
            ids.push(&f, &mut batch, &mut row);
        }
        batch.rows.push((start_s + w * 10, row));
        store.commit(&batch).expect("commits");
        let now = start_s + w * 10 + 10;
        if now % 3600 == 0 {
            store.seal(now).expect("seals");
            let h = (now - start_s) / 3600;
            if h % 6 == 0 {
                let data: u64 = store.tier_sizes().expect("sizes").iter().map(|t| t.2).sum();
                println!(
                    "  after {h} h: file {:.1} MB, blocks {:.1} MB, live data {:.1} MB",
                    mb(store.file_bytes()),
                    mb(data),
                    mb(store.live_bytes().expect("stats"))
                );
                let t = Instant::now();
                let r = store.compact();
                println!(
                    "    compact: {r:?} in {:.1?}, file {:.1} MB",
                    t.elapsed(),
                    mb(store.file_bytes())
                );
            }
        }
    }
}

/// Series ids as the sink gives them, for writing rows straight to a store.
#[derive(Default)]
struct Ids {
    ids: std::collections::HashMap<(shared::series::Scope, String), u32>,
    next: u32,
}

impl Ids {
    /// Appends `f`'s values to `row`, and its new items to `batch`.
    fn push(&mut self, f: &Frame, batch: &mut vramio::history::Batch, row: &mut Vec<u8>) {
        let mut values = Vec::new();
        let (ids, next) = (&mut self.ids, &mut self.next);
        shared::series::visit(f, |scope, item, vs| {
            let base = *ids.entry((scope, item.to_owned())).or_insert_with(|| {
                let b = *next;
                *next += scope.metrics().len() as u32;
                batch
                    .items
                    .push((vramio::history::item_key(scope, item), b));
                b
            });
            for (i, v) in vs.iter().enumerate() {
                if let Some(v) = v {
                    values.push((base + i as u32, *v));
                }
            }
        });
        vramio::history::push_sample(row, f.t_ms, &values);
    }
}
