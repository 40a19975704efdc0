//! The numbers of a frame as named series, and a frame rebuilt from them (docs/history.md#series):
//! what the history store keeps of each tick, and how a stored moment becomes a frame again for
//! a rewind or an NDJSON export.
//!
//! A series is named by a scope (`gpu`, `disk`, ...), an item within it (GPU `0`, disk `nvme0n1`,
//! mount `/data`, job `slurm:4242:0`) and a metric of that scope ([`Scope::metrics`]). Only
//! figures are series; everything else of a frame (names, kinds, states, process lists, errors)
//! is its *shape*, kept apart whenever [`shape_hash`] changes. [`rebuild`] puts the two back
//! together: the shape's frame with every figure taken from the series, absent where a series
//! has no value.

use crate::frame::{BlockDevice, Frame, Gpu, GpuMemory, Mount, Psi, SystemStats};
use crate::jobs::{Job, JobGpu, JobPsi};
use crate::units::{Bytes, BytesPerSec, Percent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// What a series belongs to.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The host's CPU and memory; its item is empty.
    Host,
    /// A GPU, by NVML index.
    Gpu,
    /// A whole block device, by kernel name.
    Disk,
    /// A filesystem, by mount point.
    Mount,
    /// A job, by [`job_item`].
    Job,
    /// A job's part on one GPU, by [`job_gpu_item`].
    JobGpu,
}

/// The unit of a series' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Bytes,
    BytesPerSec,
    Percent,
    /// Operations per second.
    PerSec,
    Millis,
    Celsius,
    Watts,
    /// A plain count (requests in flight, inodes).
    Count,
}

/// One metric of a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub unit: Unit,
}

const fn m(name: &'static str, unit: Unit) -> Metric {
    Metric { name, unit }
}

const HOST: [Metric; 13] = [
    m("cpu_pct", Unit::Percent),
    m("iowait_pct", Unit::Percent),
    m("mem_total_bytes", Unit::Bytes),
    m("mem_available_bytes", Unit::Bytes),
    m("page_cache_bytes", Unit::Bytes),
    m("dirty_bytes", Unit::Bytes),
    m("writeback_bytes", Unit::Bytes),
    m("swap_total_bytes", Unit::Bytes),
    m("swap_used_bytes", Unit::Bytes),
    m("psi_io_some_pct", Unit::Percent),
    m("psi_io_full_pct", Unit::Percent),
    m("psi_memory_some_pct", Unit::Percent),
    m("psi_memory_full_pct", Unit::Percent),
];

const GPU: [Metric; 9] = [
    m("mem_used_bytes", Unit::Bytes),
    m("mem_total_bytes", Unit::Bytes),
    m("mem_reserved_bytes", Unit::Bytes),
    m("mem_free_bytes", Unit::Bytes),
    m("util_pct", Unit::Percent),
    m("mem_util_pct", Unit::Percent),
    m("temperature_c", Unit::Celsius),
    m("power_w", Unit::Watts),
    m("power_limit_w", Unit::Watts),
];

const DISK: [Metric; 8] = [
    m("read_bytes_per_sec", Unit::BytesPerSec),
    m("write_bytes_per_sec", Unit::BytesPerSec),
    m("read_iops", Unit::PerSec),
    m("write_iops", Unit::PerSec),
    m("util_pct", Unit::Percent),
    m("r_await_ms", Unit::Millis),
    m("w_await_ms", Unit::Millis),
    m("avg_queue_size", Unit::Count),
];

const MOUNT: [Metric; 5] = [
    m("total_bytes", Unit::Bytes),
    m("used_bytes", Unit::Bytes),
    m("available_bytes", Unit::Bytes),
    m("inodes_total", Unit::Count),
    m("inodes_used", Unit::Count),
];

const JOB: [Metric; 10] = [
    m("rss_bytes", Unit::Bytes),
    m("cpu_pct", Unit::Percent),
    m("read_bytes_per_sec", Unit::BytesPerSec),
    m("write_bytes_per_sec", Unit::BytesPerSec),
    m("read_iops", Unit::PerSec),
    m("write_iops", Unit::PerSec),
    m("psi_io_some_pct", Unit::Percent),
    m("psi_io_full_pct", Unit::Percent),
    m("psi_memory_some_pct", Unit::Percent),
    m("psi_memory_full_pct", Unit::Percent),
];

const JOB_GPU: [Metric; 3] = [
    m("mem_used_bytes", Unit::Bytes),
    m("mem_share_pct", Unit::Percent),
    m("util_pct", Unit::Percent),
];

impl Scope {
    pub const ALL: [Scope; 6] = [
        Scope::Host,
        Scope::Gpu,
        Scope::Disk,
        Scope::Mount,
        Scope::Job,
        Scope::JobGpu,
    ];

    /// Its name on the wire.
    pub fn id(self) -> &'static str {
        match self {
            Scope::Host => "host",
            Scope::Gpu => "gpu",
            Scope::Disk => "disk",
            Scope::Mount => "mount",
            Scope::Job => "job",
            Scope::JobGpu => "job_gpu",
        }
    }

    pub fn from_id(id: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.id() == id)
    }

    /// Its metrics, in the order [`visit`] hands their values.
    pub fn metrics(self) -> &'static [Metric] {
        match self {
            Scope::Host => &HOST,
            Scope::Gpu => &GPU,
            Scope::Disk => &DISK,
            Scope::Mount => &MOUNT,
            Scope::Job => &JOB,
            Scope::JobGpu => &JOB_GPU,
        }
    }

    /// The index of the metric named `name`.
    pub fn metric(self, name: &str) -> Option<usize> {
        self.metrics().iter().position(|m| m.name == name)
    }
}

/// A job's item: `kind:id`, or `kind:id:step`.
pub fn job_item(job: &Job) -> String {
    let kind = serde_json::to_value(job.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    match &job.step {
        Some(step) => format!("{kind}:{}:{step}", job.id),
        None => format!("{kind}:{}", job.id),
    }
}

/// A job's part on a GPU: the job's item, `@` and the GPU's place (`0`, `0 (MIG 1/0)`).
pub fn job_gpu_item(job_item: &str, gpu: &JobGpu) -> String {
    format!("{job_item}@{}", gpu.place())
}

/// Whether a stored series' item belongs to the job `key` (`kind:id`): its own series are
/// `kind:id` or `kind:id:step`, its part on a GPU that and `@place`.
pub fn of_job(key: &str, item: &str) -> bool {
    item.strip_prefix(key)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(':') || rest.starts_with('@'))
}

/// Whether a series is kept by a `job=KEY` filter (`GET /api/history`): a job's series only
/// when they are that job's; every other scope's always.
pub fn kept_for_job(job: Option<&str>, scope: Scope, item: &str) -> bool {
    match (job, scope) {
        (Some(key), Scope::Job | Scope::JobGpu) => of_job(key, item),
        _ => true,
    }
}

fn bytes(b: Option<Bytes>) -> Option<f64> {
    b.map(|b| b.0 as f64)
}
fn pct(p: Option<Percent>) -> Option<f64> {
    p.map(|p| p.0)
}
fn rate(r: Option<BytesPerSec>) -> Option<f64> {
    r.map(|r| r.0)
}
/// A stored byte figure back as bytes (it was one, so it is whole and not negative).
fn to_bytes(v: Option<f64>) -> Option<Bytes> {
    v.filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| Bytes(v.round() as u64))
}
fn to_count(v: Option<f64>) -> Option<u64> {
    to_bytes(v).map(|b| b.0)
}

fn host_values(s: &SystemStats) -> [Option<f64>; 13] {
    let psi = |p: Option<Psi>| (p.map(|p| p.some_avg10.0), p.and_then(|p| pct(p.full_avg10)));
    let (io_some, io_full) = psi(s.psi_io);
    let (mem_some, mem_full) = psi(s.psi_memory);
    [
        pct(s.cpu_pct),
        pct(s.iowait_pct),
        bytes(s.mem_total_bytes),
        bytes(s.mem_available_bytes),
        bytes(s.page_cache_bytes),
        bytes(s.dirty_bytes),
        bytes(s.writeback_bytes),
        bytes(s.swap_total_bytes),
        bytes(s.swap_used_bytes),
        io_some,
        io_full,
        mem_some,
        mem_full,
    ]
}

fn set_host(s: &mut SystemStats, v: &[Option<f64>]) {
    let psi = |some: Option<f64>, full: Option<f64>| {
        some.map(|some| Psi {
            some_avg10: Percent(some),
            full_avg10: full.map(Percent),
            some_total_us: None,
        })
    };
    s.cpu_pct = v[0].map(Percent);
    s.iowait_pct = v[1].map(Percent);
    s.mem_total_bytes = to_bytes(v[2]);
    s.mem_available_bytes = to_bytes(v[3]);
    s.page_cache_bytes = to_bytes(v[4]);
    s.dirty_bytes = to_bytes(v[5]);
    s.writeback_bytes = to_bytes(v[6]);
    s.swap_total_bytes = to_bytes(v[7]);
    s.swap_used_bytes = to_bytes(v[8]);
    s.psi_io = psi(v[9], v[10]);
    s.psi_memory = psi(v[11], v[12]);
}

fn gpu_values(g: &Gpu) -> [Option<f64>; 9] {
    let mem = g.memory.as_ref();
    [
        mem.map(|m| m.used_bytes.0 as f64),
        mem.map(|m| m.total_bytes.0 as f64),
        mem.and_then(|m| bytes(m.reserved_bytes)),
        mem.map(|m| m.free_bytes.0 as f64),
        pct(g.utilization_gpu_pct),
        pct(g.utilization_memory_pct),
        g.temperature_c,
        g.power_w,
        g.power_limit_w,
    ]
}

fn set_gpu(g: &mut Gpu, v: &[Option<f64>]) {
    g.memory = match (to_bytes(v[0]), to_bytes(v[1]), to_bytes(v[3])) {
        (Some(used_bytes), Some(total_bytes), Some(free_bytes)) => Some(GpuMemory {
            total_bytes,
            used_bytes,
            reserved_bytes: to_bytes(v[2]),
            free_bytes,
        }),
        _ => None,
    };
    g.utilization_gpu_pct = v[4].map(Percent);
    g.utilization_memory_pct = v[5].map(Percent);
    g.temperature_c = v[6];
    g.power_w = v[7];
    g.power_limit_w = v[8];
}

fn disk_values(d: &BlockDevice) -> [Option<f64>; 8] {
    [
        rate(d.read_bytes_per_sec),
        rate(d.write_bytes_per_sec),
        d.read_iops,
        d.write_iops,
        pct(d.util_pct),
        d.r_await_ms,
        d.w_await_ms,
        d.avg_queue_size,
    ]
}

fn set_disk(d: &mut BlockDevice, v: &[Option<f64>]) {
    d.read_bytes_per_sec = v[0].map(BytesPerSec);
    d.write_bytes_per_sec = v[1].map(BytesPerSec);
    d.read_iops = v[2];
    d.write_iops = v[3];
    d.util_pct = v[4].map(Percent);
    d.r_await_ms = v[5];
    d.w_await_ms = v[6];
    d.avg_queue_size = v[7];
    // Cumulative counters are not series: a rebuilt frame has none rather than stale ones.
    d.read_bytes_total = None;
    d.write_bytes_total = None;
    d.counters = None;
}

fn mount_values(m: &Mount) -> [Option<f64>; 5] {
    [
        bytes(m.total_bytes),
        bytes(m.used_bytes),
        bytes(m.available_bytes),
        m.inodes_total.map(|n| n as f64),
        m.inodes_used.map(|n| n as f64),
    ]
}

fn set_mount(m: &mut Mount, v: &[Option<f64>]) {
    m.total_bytes = to_bytes(v[0]);
    m.used_bytes = to_bytes(v[1]);
    m.available_bytes = to_bytes(v[2]);
    m.inodes_total = to_count(v[3]);
    m.inodes_used = to_count(v[4]);
}

fn job_values(j: &Job) -> [Option<f64>; 10] {
    let io = j.io.as_ref();
    let psi = |p: &Option<JobPsi>| (p.map(|p| p.some_avg10.0), p.and_then(|p| pct(p.full_avg10)));
    let (io_some, io_full) = psi(&j.psi_io);
    let (mem_some, mem_full) = psi(&j.psi_memory);
    [
        bytes(j.rss_bytes),
        pct(j.cpu_pct),
        io.and_then(|io| rate(io.read_bytes_per_sec)),
        io.and_then(|io| rate(io.write_bytes_per_sec)),
        io.and_then(|io| io.read_iops),
        io.and_then(|io| io.write_iops),
        io_some,
        io_full,
        mem_some,
        mem_full,
    ]
}

fn set_job(j: &mut Job, v: &[Option<f64>]) {
    let psi = |some: Option<f64>, full: Option<f64>| {
        some.map(|some| JobPsi {
            some_avg10: Percent(some),
            full_avg10: full.map(Percent),
        })
    };
    j.rss_bytes = to_bytes(v[0]);
    j.cpu_pct = v[1].map(Percent);
    if let Some(io) = &mut j.io {
        io.read_bytes_per_sec = v[2].map(BytesPerSec);
        io.write_bytes_per_sec = v[3].map(BytesPerSec);
        io.read_iops = v[4];
        io.write_iops = v[5];
        // Per-device figures are not series.
        io.devices.clear();
    }
    j.psi_io = psi(v[6], v[7]);
    j.psi_memory = psi(v[8], v[9]);
}

fn job_gpu_values(g: &JobGpu) -> [Option<f64>; 3] {
    [
        bytes(g.memory_used_bytes),
        pct(g.memory_share_pct),
        pct(g.utilization_pct),
    ]
}

fn set_job_gpu(g: &mut JobGpu, v: &[Option<f64>]) {
    g.memory_used_bytes = to_bytes(v[0]);
    g.memory_share_pct = v[1].map(Percent);
    g.utilization_pct = v[2].map(Percent);
}

/// Hands every item of `frame` to `f` with its values, in its scope's metric order (`None`
/// where the frame has no figure). The host comes only when the frame has system figures.
pub fn visit(frame: &Frame, mut f: impl FnMut(Scope, &str, &[Option<f64>])) {
    if let Some(s) = &frame.system {
        f(Scope::Host, "", &host_values(s));
    }
    let mut item = String::new();
    for g in &frame.gpus {
        item.clear();
        push_u32(&mut item, g.index);
        f(Scope::Gpu, &item, &gpu_values(g));
    }
    for d in &frame.block_devices {
        f(Scope::Disk, &d.name, &disk_values(d));
    }
    for m in &frame.mounts {
        f(Scope::Mount, &m.mount_point, &mount_values(m));
    }
    for j in &frame.jobs {
        let key = job_item(j);
        f(Scope::Job, &key, &job_values(j));
        for g in &j.gpus {
            f(Scope::JobGpu, &job_gpu_item(&key, g), &job_gpu_values(g));
        }
    }
}

fn push_u32(s: &mut String, n: u32) {
    use std::fmt::Write;
    let _ = write!(s, "{n}");
}

/// `shape` (a frame whose figures are ignored) at `t_ms`, with every figure from `value(scope,
/// item, metric index)`: what a stored moment was, as a frame. Figures that are not series
/// (cumulative counters, per-device job I/O, PSI totals) are absent.
pub fn rebuild(
    shape: &Frame,
    t_ms: u64,
    mut value: impl FnMut(Scope, &str, usize) -> Option<f64>,
) -> Frame {
    let mut frame = shape.clone();
    frame.t_ms = t_ms;
    frame.cost.clear();
    let mut values = |scope: Scope, item: &str| -> Vec<Option<f64>> {
        (0..scope.metrics().len())
            .map(|i| value(scope, item, i))
            .collect()
    };
    if let Some(s) = &mut frame.system {
        set_host(s, &values(Scope::Host, ""));
    }
    for g in &mut frame.gpus {
        set_gpu(g, &values(Scope::Gpu, &g.index.to_string()));
    }
    for d in &mut frame.block_devices {
        let v = values(Scope::Disk, &d.name);
        set_disk(d, &v);
    }
    for mnt in &mut frame.mounts {
        let v = values(Scope::Mount, &mnt.mount_point);
        set_mount(mnt, &v);
    }
    for j in &mut frame.jobs {
        let key = job_item(j);
        set_job(j, &values(Scope::Job, &key));
        for g in &mut j.gpus {
            let v = values(Scope::JobGpu, &job_gpu_item(&key, g));
            set_job_gpu(g, &v);
        }
    }
    frame
}

/// A hash of everything of `frame` that is not a series: when it changes, the store keeps the
/// frame as the shape of what follows. Error messages are left out (only which source and item
/// failed counts), so a message that quotes a changing figure does not make a new shape a tick.
pub fn shape_hash(frame: &Frame) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    frame.host.hash(&mut h);
    frame.interval_ms.hash(&mut h);
    match &frame.nvml {
        crate::frame::NvmlStatus::Ok { driver_version } => (0u8, driver_version).hash(&mut h),
        crate::frame::NvmlStatus::NoDriver { .. } => 1u8.hash(&mut h),
        crate::frame::NvmlStatus::Error { .. } => 2u8.hash(&mut h),
    }
    for g in &frame.gpus {
        (g.index, &g.uuid, &g.name, g.state as u8).hash(&mut h);
        (g.memory.is_some(), g.mig.len()).hash(&mut h);
        for p in g.processes.iter().flatten() {
            (p.pid, p.presence as u8, &p.name, &p.user, p.mig).hash(&mut h);
        }
    }
    for mnt in &frame.mounts {
        (&mnt.mount_point, &mnt.device, &mnt.fs_type, mnt.kind as u8).hash(&mut h);
        mnt.read_only.hash(&mut h);
    }
    for d in &frame.block_devices {
        (&d.name, d.rotational, &d.partitions).hash(&mut h);
    }
    frame.system.as_ref().map(|s| s.cpu_count).hash(&mut h);
    for j in &frame.jobs {
        (j.kind as u8, &j.id, &j.step, &j.name, &j.user).hash(&mut h);
        (
            &j.gpu_pids,
            j.workers,
            j.cpu_from_cgroup,
            j.memory_from_cgroup,
        )
            .hash(&mut h);
        (j.io.as_ref().map(|io| io.counter as u8), &j.io_absent).hash(&mut h);
        for g in &j.gpus {
            (g.index, &g.uuid, g.mig).hash(&mut h);
        }
    }
    for e in &frame.errors {
        (e.source as u8, &e.item).hash(&mut h);
    }
    h.0
}

/// FNV-1a: the same hash on every platform and build (the std hasher is not promised to be),
/// since shapes are compared across restarts.
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
#[path = "series_tests.rs"]
mod tests;
