//! What an importer reads out of a log: samples of rows, each field `None` where the log does
//! not have it (a log that lacks a metric leaves it absent in the frames, never 0), and notes.
//!
//! The rows are the logs' own vocabulary, decoupled from [`shared::Frame`]; `ingest::frames`
//! turns merged samples into frames.

/// One moment of one log: one report of `iostat`, one snapshot of `nvidia-smi`, the rows of one
/// `--query-gpu` loop iteration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Milliseconds since the Unix epoch, when the log says (zone-less times are read as UTC);
    /// `None` for a log without timestamps, which is aligned by order at `--interval`.
    pub t_ms: Option<u64>,
    /// 1-based line where the sample starts (for notes).
    pub line: usize,
    pub gpus: Vec<GpuRow>,
    pub processes: Vec<ProcessRow>,
    /// The MIG instances of GPUs in MIG mode (the table's `MIG devices:` block).
    pub mig: Vec<MigRow>,
    pub disks: Vec<DiskRow>,
    pub mounts: Vec<MountRow>,
    pub cpu: Option<CpuRow>,
}

/// One GPU in one sample. Memory in bytes (MiB x 1,048,576 as nvidia-smi prints it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuRow {
    /// NVML index (`index`, dmon's `gpu` column, the table's GPU number).
    pub index: Option<u32>,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub pci_bus_id: Option<String>,
    pub driver_version: Option<String>,
    pub memory_total_bytes: Option<u64>,
    pub memory_used_bytes: Option<u64>,
    pub memory_free_bytes: Option<u64>,
    pub memory_reserved_bytes: Option<u64>,
    /// `utilization.gpu` / dmon `sm`, percent.
    pub util_gpu_pct: Option<f64>,
    /// `utilization.memory` / dmon `mem`, percent.
    pub util_mem_pct: Option<f64>,
    pub temperature_c: Option<f64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
}

/// A process holding GPU memory in one sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessRow {
    /// The GPU by index (pmon, the table) or by uuid (`--query-compute-apps`).
    pub gpu_index: Option<u32>,
    pub gpu_uuid: Option<String>,
    pub pid: u32,
    pub name: Option<String>,
    pub used_bytes: Option<u64>,
    /// The MIG instance it runs on (the table's `GI ID` and `CI ID`).
    pub mig: Option<shared::MigSlot>,
}

/// One MIG instance in one sample: `|  0    1   0   0  |   3751MiB / 20096MiB | ...`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MigRow {
    pub gpu_index: Option<u32>,
    pub slot: Option<shared::MigSlot>,
    /// nvidia-smi's `MIG Dev`, NVML's MIG device index.
    pub device: Option<u32>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
}

/// One block device in one `iostat -x` report (rates over the report's interval).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskRow {
    pub device: String,
    /// `r/s`, `w/s`.
    pub read_iops: Option<f64>,
    pub write_iops: Option<f64>,
    /// `rkB/s`/`rMB/s`/`rsec/s`, converted to bytes per second.
    pub read_bytes_per_sec: Option<f64>,
    pub write_bytes_per_sec: Option<f64>,
    /// `r_await`, `w_await` in ms; the old layout's single `await` goes to both only when it
    /// has no split columns (then `await_ms` alone is set).
    pub r_await_ms: Option<f64>,
    pub w_await_ms: Option<f64>,
    pub await_ms: Option<f64>,
    /// `aqu-sz` / `avgqu-sz`.
    pub avg_queue_size: Option<f64>,
    /// `%util`.
    pub util_pct: Option<f64>,
}

/// One filesystem in a `df` snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MountRow {
    /// The `Filesystem` column (device or source).
    pub source: String,
    pub fs_type: Option<String>,
    pub mount_point: String,
    pub size_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    pub avail_bytes: Option<u64>,
    pub inodes_total: Option<u64>,
    pub inodes_used: Option<u64>,
    pub inodes_free: Option<u64>,
}

/// `iostat`'s `avg-cpu` block, percent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuRow {
    pub user_pct: Option<f64>,
    pub nice_pct: Option<f64>,
    pub system_pct: Option<f64>,
    pub iowait_pct: Option<f64>,
    pub steal_pct: Option<f64>,
    pub idle_pct: Option<f64>,
}

/// Something the user should know about an import: a bad line (`line` set) or a fact about the
/// whole file (no timestamps, the since-boot report skipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub line: Option<usize>,
    pub message: String,
}

/// What an importer notes for a file without timestamps.
pub const UNTIMED: &str = "no timestamps: samples are aligned by order";

impl Note {
    /// [`UNTIMED`], for the whole file.
    pub fn untimed() -> Note {
        Note::file(UNTIMED)
    }
    pub fn at(line: usize, message: impl Into<String>) -> Note {
        Note {
            line: Some(line),
            message: message.into(),
        }
    }
    pub fn file(message: impl Into<String>) -> Note {
        Note {
            line: None,
            message: message.into(),
        }
    }
}

/// Where an importer puts what it found; the caller drains it as it goes, so memory stays
/// bounded by one sample whatever the input's size.
#[derive(Debug, Default)]
pub struct Emit {
    pub samples: Vec<Sample>,
    pub notes: Vec<Note>,
}

/// A push parser for one format: fed every line in order, then `finish`.
pub trait Importer {
    /// One line, 1-based `no`, without its line ending (`\n`, `\r\n`), decoded lossily; lines
    /// longer than [`super::lines::MAX_LINE_BYTES`] never arrive (the reader notes them).
    fn line(&mut self, no: usize, line: &str, out: &mut Emit);
    /// The input ended: emit the sample in progress, if it is complete enough to keep (a last
    /// line cut off mid-field is noted and dropped).
    fn finish(&mut self, out: &mut Emit);
}
