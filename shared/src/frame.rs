//! `Frame`: everything vramio sampled on one host in one tick (docs/architecture.md#5-what-a-frame-holds).
//!
//! Built by the backend's sampler, carried by the hub, drawn by the frontend. A value that could not
//! be read is `None` (absent in JSON), never 0: a rate needs two samples, so the first frame has
//! none; a GPU that is lost keeps its index and uuid but loses its readings.

use crate::units::{Bytes, BytesPerSec, Percent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One tick of one host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Frame {
    /// Strictly increasing per host, never 0 (per process lifetime of that host's vramio): the
    /// sampler numbers its ticks from 1, and the feed that publishes a frame gives it that host's
    /// seq (a server's start, in ms since the epoch, onwards).
    pub seq: u64,
    /// When the tick started, in milliseconds since the Unix epoch.
    pub t_ms: u64,
    /// The host's name.
    pub host: String,
    /// The sampling interval in force, in milliseconds.
    pub interval_ms: u64,
    /// Whether NVML could be used at all on this host.
    pub nvml: NvmlStatus,
    /// GPUs in NVML index order. Empty when there is no driver (see `nvml`).
    pub gpus: Vec<Gpu>,
    /// Real filesystems (pseudo filesystems filtered), one per mount point.
    pub mounts: Vec<Mount>,
    /// Whole block devices with their partitions folded in; loop, zram and ram devices filtered.
    pub block_devices: Vec<BlockDevice>,
    /// Host CPU and memory. `None` when /proc could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemStats>,
    /// The GPU processes grouped into jobs (docs/jobs.md), biggest GPU memory first. Empty when
    /// no GPU process was listed, and in recordings made before jobs existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<crate::jobs::Job>,
    /// Failures of this tick, one per source (or per GPU); the other sources still report.
    pub errors: Vec<SourceError>,
    /// What each source cost the sampler this tick.
    pub cost: Vec<SourceCost>,
}

/// Whether NVML is usable on this host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NvmlStatus {
    /// NVML initialised; `driver_version` when the driver reported one.
    Ok {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        driver_version: Option<String>,
    },
    /// No NVIDIA driver (libnvidia-ml could not be loaded). Not an error on a machine without GPUs.
    NoDriver { message: String },
    /// The library loaded but NVML failed (init failed, or lost and being re-initialised).
    Error { message: String },
}

/// One GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gpu {
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub state: GpuState,
    /// `None` when the reading failed (e.g. the GPU is lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<GpuMemory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_gpu_pct: Option<Percent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_memory_pct: Option<Percent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// Processes holding memory on this GPU. `None` when the list could not be read. The list is
    /// read at a slower cadence than the other readings, so it may be older than the frame: see
    /// `processes_t_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<GpuProcess>>,
    /// When `processes` was read from NVML, in milliseconds since the Unix epoch; earlier than the
    /// frame's `t_ms` when the list is carried over from an earlier tick. Absent with no list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes_t_ms: Option<u64>,
    /// Which generation of NVML's versioned calls answered for this GPU. Absent when nothing was
    /// read from NVML (a lost GPU, an imported log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml_api: Option<GpuApis>,
    /// Its MIG instances while the GPU is in MIG mode (docs/jobs.md#mig), each its own memory
    /// pool; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigInstance>,
}

/// Which MIG instance of its GPU: the GPU instance and the compute instance within it, as NVML
/// numbers them (`nvidia-smi`'s `GI ID` and `CI ID`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct MigSlot {
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
}

/// One MIG instance of a GPU in MIG mode: a slice with memory of its own (compute instances of
/// one GPU instance share that GPU instance's memory, and each reports all of it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MigInstance {
    /// NVML's index of the MIG device on its GPU (0 to 6).
    pub index: u32,
    /// Its ids; absent when NVML did not give them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<MigSlot>,
    /// `MIG-…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<GpuMemory>,
    /// Absent where the driver has no per-instance utilization, as most do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_gpu_pct: Option<Percent>,
}

/// Which NVML call generations a GPU's readings came from. Drivers before R510 (the 470 and 495
/// branches) have neither `nvmlDeviceGetMemoryInfo_v2` nor the `_v3` process lists, and some
/// newer ones (WSL) fail the v2 memory call: vramio then falls back to the older call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GpuApis {
    /// The memory call that answered this tick; absent when memory was not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryApi>,
    /// The process-list calls that answered for `processes`; absent with no list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<ProcessApi>,
}

/// `nvmlDeviceGetMemoryInfo_v2` (with `reserved`) or `nvmlDeviceGetMemoryInfo` (without).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryApi {
    V2,
    V1,
}

/// `nvmlDevice{Compute,Graphics}RunningProcesses_v3` or their `_v2` predecessors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessApi {
    V3,
    V2,
}

/// Whether a GPU answered this tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GpuState {
    Ok,
    /// NVML says the GPU has fallen off the bus (`NVML_ERROR_GPU_IS_LOST`).
    Lost,
    /// Readings failed for another reason; see the frame's `errors`.
    Error,
}

/// GPU memory from NVML's `nvmlDeviceGetMemoryInfo_v2`, or `nvmlDeviceGetMemoryInfo` (v1) where
/// v2 is missing or fails (see [`Gpu::nvml_api`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuMemory {
    pub total_bytes: Bytes,
    pub used_bytes: Bytes,
    /// Reserved by the driver and firmware, not usable by processes. Absent where only v1
    /// answered (v1 has no such figure; its `used` includes what v2 calls reserved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_bytes: Option<Bytes>,
    pub free_bytes: Bytes,
}

/// A process holding GPU memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuProcess {
    /// Host pid as NVML reports it.
    pub pid: u32,
    /// Whether vramio could see the process, and so whether a missing name means it exited.
    pub presence: Presence,
    /// `comm` of the process; `None` unless `presence` is `visible`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Login name of its owner (or the uid where the name service does not know it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// `None` when NVML does not know (e.g. under MIG without privileges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<Bytes>,
    /// The MIG instance it runs on, when its GPU is in MIG mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<MigSlot>,
}

/// Whether a GPU process's pid could be looked up here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Found in this `/proc`: name and user are read from it.
    Visible,
    /// vramio sees the host's pids and this one is gone: it exited, yet NVML still lists it (an
    /// orphan holding memory).
    Exited,
    /// NVML reports host pids, which this `/proc` cannot show (vramio runs in a child PID
    /// namespace, or `/proc` denies access): the process may well be alive. Never an orphan.
    NotVisible,
}

/// A mounted filesystem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Mount {
    pub mount_point: String,
    /// Mount source (`/dev/nvme0n1p2`, `server:/export`, `tmpfs`).
    pub device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
    pub kind: MountKind,
    /// Size, used and available space: absent only in an imported log without them (`df -i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<Bytes>,
    /// Available to unprivileged users (`f_bavail`), which is what a training job sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_used: Option<u64>,
    /// Absent where the source does not say (an imported `df`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// What kind of storage backs a mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MountKind {
    LocalNvme,
    LocalSsd,
    LocalHdd,
    /// A local block device whose medium is not known.
    Local,
    Network,
    Tmpfs,
    Overlay,
    Other,
}

/// A whole block device, with `iostat -x` semantics for the rates over the last interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BlockDevice {
    pub name: String,
    /// From `/sys/block/<name>/queue/rotational`; `None` when sysfs does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// Partitions of this disk present in /proc/diskstats (counted in the disk's own figures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<String>,
    /// Cumulative bytes read since boot (sectors x 512); absent in an imported `iostat` log,
    /// which has only rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes_total: Option<Bytes>,
    /// Cumulative bytes written since boot (sectors x 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes_total: Option<Bytes>,
    /// Rates below need two samples: absent on the first frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes_per_sec: Option<BytesPerSec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_sec: Option<BytesPerSec>,
    /// Completed reads per second (`r/s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_iops: Option<f64>,
    /// Completed writes per second (`w/s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_iops: Option<f64>,
    /// Share of the interval the device had I/O in flight (`%util`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util_pct: Option<Percent>,
    /// Mean time per read, queueing included (`r_await`); absent when no read completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r_await_ms: Option<f64>,
    /// Mean time per write (`w_await`); absent when no write completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w_await_ms: Option<f64>,
    /// Average number of requests in flight (`aqu-sz`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_queue_size: Option<f64>,
    /// The raw /proc/diskstats counters behind the rates (for `/metrics`, where `rate()` works on
    /// them); absent from sources that do not have them (an imported log, an older peer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<BlockCounters>,
}

/// Cumulative /proc/diskstats counters of a whole disk since boot (partitions folded in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BlockCounters {
    /// Reads completed.
    pub reads_completed_total: u64,
    /// Writes completed.
    pub writes_completed_total: u64,
    /// Milliseconds with at least one request in flight (`io_ticks`).
    pub io_time_ms_total: u64,
    /// Milliseconds in flight summed over requests (`time_in_queue`).
    pub weighted_io_time_ms_total: u64,
}

/// Host CPU and memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SystemStats {
    /// Absent in an imported log that does not say (an `iostat` log without its header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_count: Option<u32>,
    /// Busy share of all CPUs over the interval (everything but idle and iowait).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<Percent>,
    /// Share of CPU time idle while I/O was outstanding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowait_pct: Option<Percent>,
    /// Memory figures: absent in an imported log without them (`iostat` has only CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_total_bytes: Option<Bytes>,
    /// `MemAvailable`: what can be allocated without swapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_available_bytes: Option<Bytes>,
    /// `Cached` (page cache) from /proc/meminfo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_cache_bytes: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_bytes: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback_bytes: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_total_bytes: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_used_bytes: Option<Bytes>,
    /// Pressure stall information for I/O; absent when the kernel has no PSI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_io: Option<Psi>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_memory: Option<Psi>,
}

/// One PSI resource (`/proc/pressure/*`), ten-second averages in percent.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Psi {
    pub some_avg10: Percent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_avg10: Option<Percent>,
    /// `some total=`: microseconds since boot that some task waited on the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub some_total_us: Option<u64>,
}

/// A part of the sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Gpu,
    Mounts,
    BlockDevices,
    System,
    /// Grouping GPU processes into jobs and reading their processes' counters.
    Jobs,
}

impl Source {
    pub const ALL: [Source; 5] = [
        Source::Gpu,
        Source::Mounts,
        Source::BlockDevices,
        Source::System,
        Source::Jobs,
    ];

    /// The id as it appears on the wire.
    pub fn id(self) -> &'static str {
        match self {
            Source::Gpu => "gpu",
            Source::Mounts => "mounts",
            Source::BlockDevices => "block_devices",
            Source::System => "system",
            Source::Jobs => "jobs",
        }
    }
}

/// A failure of one source (or one item of it) in one tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceError {
    pub source: Source,
    /// Which item failed (`gpu 1`, `/mnt/data`); absent when the whole source failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    pub message: String,
}

/// Time one source took this tick.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceCost {
    pub source: Source,
    pub micros: u64,
}

impl Frame {
    /// A frame with nothing sampled yet (used by tests and as a builder start).
    pub fn empty(host: impl Into<String>, seq: u64, t_ms: u64, interval_ms: u64) -> Self {
        Frame {
            seq,
            t_ms,
            host: host.into(),
            interval_ms,
            nvml: NvmlStatus::Ok {
                driver_version: None,
            },
            gpus: Vec::new(),
            mounts: Vec::new(),
            block_devices: Vec::new(),
            system: None,
            jobs: Vec::new(),
            errors: Vec::new(),
            cost: Vec::new(),
        }
    }

    /// The errors this frame carries for one source.
    pub fn errors_for(&self, source: Source) -> impl Iterator<Item = &SourceError> {
        self.errors.iter().filter(move |e| e.source == source)
    }
}

impl Gpu {
    /// A GPU known by its identity whose readings this tick are all missing (lost, or its
    /// source did not answer).
    pub fn unread(index: u32, uuid: Option<String>, name: Option<String>, state: GpuState) -> Self {
        Gpu {
            index,
            uuid,
            name,
            state,
            memory: None,
            utilization_gpu_pct: None,
            utilization_memory_pct: None,
            temperature_c: None,
            power_w: None,
            power_limit_w: None,
            processes: None,
            processes_t_ms: None,
            nvml_api: None,
            mig: Vec::new(),
        }
    }
}

impl GpuMemory {
    pub fn used_pct(&self) -> Option<Percent> {
        self.used_bytes.percent_of(self.total_bytes)
    }
}

impl Mount {
    /// Used share as `df` shows it: used / (used + available to non-root).
    pub fn used_pct(&self) -> Option<Percent> {
        let (used, avail) = (self.used_bytes?, self.available_bytes?);
        used.percent_of(Bytes(used.0.saturating_add(avail.0)))
    }
    pub fn inodes_used_pct(&self) -> Option<Percent> {
        match (self.inodes_used, self.inodes_total) {
            (Some(u), Some(t)) => Bytes(u).percent_of(Bytes(t)),
            _ => None,
        }
    }
}
