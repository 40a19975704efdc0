//! Data sources behind small synchronous traits, one per kind of data the sampler reads.
//!
//! The sampler ([`crate::collect::sampler`]) owns one of each, built by [`Sources::system_default`], and calls
//! them from its own threads, never from async workers. Tests inject scripted fakes through the same
//! traits. A source reports a total failure as `Err`, and per-item trouble (one GPU lost, one mount
//! unreadable) as `errors` next to the values that did come back.

pub mod block;
pub mod gpu;
pub mod jobs;
pub mod meminfo;
pub mod mounts;
pub mod procfile;
pub mod system;

use shared::{BlockDevice, Gpu, Mount, NvmlStatus, Source, SourceError, SystemStats};
use std::path::PathBuf;
use std::time::Instant;

/// Values plus the per-item errors met while reading them.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading<T> {
    pub value: T,
    pub errors: Vec<SourceError>,
}

impl<T> Reading<T> {
    pub fn ok(value: T) -> Self {
        Reading {
            value,
            errors: Vec::new(),
        }
    }
}

/// A whole source failed this tick.
#[derive(Debug, thiserror::Error)]
pub enum SourceFailure {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse {what}: {reason}")]
    Parse { what: String, reason: String },
    #[error("{0}")]
    Procfs(#[from] procfs::ProcError),
    #[error("did not answer within {millis} ms")]
    Timeout { millis: u64 },
}

impl SourceFailure {
    /// This failure as the frame carries it.
    pub fn into_error(self, source: Source) -> SourceError {
        SourceError {
            source,
            item: None,
            message: self.to_string(),
        }
    }
}

/// What the GPU source found this tick: NVML's state, the GPUs, and per-GPU errors.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuReading {
    pub nvml: NvmlStatus,
    pub gpus: Vec<Gpu>,
    pub errors: Vec<SourceError>,
}

/// GPUs (NVML in production). Never fails as a whole: a missing driver is a status, not an error.
pub trait GpuSource: Send + 'static {
    fn sample(&mut self) -> GpuReading;
}

/// Mounted filesystems with their space and inodes.
pub trait MountSource: Send + 'static {
    fn sample(&mut self) -> Result<Reading<Vec<Mount>>, SourceFailure>;

    /// Whether every call of this source that can hang (on a file server, a FUSE daemon) already
    /// has a deadline of its own. The sampler then reads it on its own thread with
    /// [`MountSource::sample_until`], saving a thread hand-off per tick; otherwise it reads the
    /// source through a reader thread it waits for until the tick's deadline.
    fn bounds_its_calls(&self) -> bool {
        false
    }

    /// [`MountSource::sample`], waiting for no call past `deadline`.
    fn sample_until(&mut self, _deadline: Instant) -> Result<Reading<Vec<Mount>>, SourceFailure> {
        self.sample()
    }
}

/// Block devices with rates over the time since the previous call (none on the first).
pub trait BlockSource: Send + 'static {
    fn sample(&mut self) -> Result<Vec<BlockDevice>, SourceFailure>;
}

/// Host CPU and memory, with CPU shares over the time since the previous call.
pub trait SystemSource: Send + 'static {
    fn sample(&mut self) -> Result<SystemStats, SourceFailure>;
}

/// One of each source: what a sampler needs.
pub struct Sources {
    pub gpu: Box<dyn GpuSource>,
    pub mounts: Box<dyn MountSource>,
    pub block: Box<dyn BlockSource>,
    pub system: Box<dyn SystemSource>,
    pub jobs: Box<dyn jobs::JobSource>,
}

impl Sources {
    /// The real sources of this host. `nvml_lib` loads that libnvidia-ml instead of the system's.
    pub fn system_default(nvml_lib: Option<PathBuf>) -> Self {
        Sources {
            gpu: Box::new(gpu::NvmlSource::new(nvml_lib)),
            mounts: Box::new(mounts::ProcMounts::new()),
            block: Box::new(block::ProcDiskstats::new()),
            system: Box::new(system::ProcSystem::new()),
            jobs: Box::new(jobs::ProcJobs::system()),
        }
    }

    /// These sources with the jobs named from dcgm-exporter's job-mapping folder `dir`, if any.
    pub fn with_job_map(mut self, dir: Option<PathBuf>) -> Self {
        self.jobs = Box::new(jobs::ProcJobs::system().with_job_map(dir));
        self
    }
}
