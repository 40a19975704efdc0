//! Jobs: the GPU processes of one host grouped by what launched them (a Slurm job, a Kubernetes
//! pod, a container, a systemd unit, or a process tree), with each job's GPUs, GPU memory, host
//! memory, CPU and disk I/O (docs/jobs.md).
//!
//! A figure that could not be measured is absent, never 0; where the reason is worth telling (the
//! I/O counters need root, a network filesystem is not counted), the job says it next to the
//! figure.

use crate::units::{Bytes, BytesPerSec, Percent, format_bytes, format_rate};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What groups a job's processes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// A Slurm job (`id` the job id, `step` the step: `0`, `batch`, `extern`, ...).
    Slurm,
    /// A Kubernetes pod (`id` its UID, `step` the container id).
    Pod,
    /// A Docker, containerd or Podman container (`id` its id).
    Container,
    /// A systemd unit (`id` the unit's name).
    Unit,
    /// None of the above: the topmost process of the same user below a shell, tmux, screen,
    /// sshd or init (`id` its pid).
    Process,
    /// A job named by the site's scheduler in dcgm-exporter's HPC job-mapping files
    /// (`--job-map-dir`): `id` the job id written for the GPUs its processes are on.
    Hpc,
}

impl JobKind {
    /// The kind as it appears on the wire and in `check --json`.
    pub fn id(self) -> &'static str {
        match self {
            JobKind::Slurm => "slurm",
            JobKind::Pod => "pod",
            JobKind::Container => "container",
            JobKind::Unit => "unit",
            JobKind::Process => "process",
            JobKind::Hpc => "hpc",
        }
    }
}

/// One job on one host in one tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Job {
    pub kind: JobKind,
    /// The job's id within its kind: the Slurm job id, the pod UID, the container id, the unit
    /// name, or the pid of a process tree's top.
    pub id: String,
    /// A Slurm step, or the container of a pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// What a person recognises it by: the `comm` of its top process (`python3`, `torchrun`),
    /// never the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The owner's login name (or uid) of its GPU processes; absent when unknown or hidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The GPUs its processes hold memory on, by index.
    pub gpus: Vec<JobGpu>,
    /// The pids of its processes that NVML lists, ascending.
    pub gpu_pids: Vec<u32>,
    /// Its other processes found under those (DataLoader workers and the like); absent when the
    /// process table could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// Resident memory of all its processes ([`Job::memory_from_cgroup`] says how it was
    /// counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<Bytes>,
    /// CPU of all its processes since its previous measurement, in percent of one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<Percent>,
    /// `cpu_pct` is its cgroup's CPU time (every process the cgroup ran, those that exited
    /// meanwhile too), not a sum over the processes found.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cpu_from_cgroup: bool,
    /// `rss_bytes` is its cgroup's anonymous plus mapped file memory (a page its forked workers
    /// share is counted once), not a sum of its processes' RSS (which counts it once per worker).
    #[serde(default, skip_serializing_if = "is_false")]
    pub memory_from_cgroup: bool,
    /// Disk I/O of its processes; absent with [`Job::io_absent`] saying why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<JobIo>,
    /// Why [`Job::io`] is absent (the counters need root, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_absent: Option<String>,
    /// Pressure stall information of the job's cgroup (cgroup v2), where the kernel has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_io: Option<JobPsi>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_memory: Option<JobPsi>,
}

/// One GPU of a job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobGpu {
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Summed over the job's processes on this GPU; absent when NVML gave none of their figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_bytes: Option<Bytes>,
    /// Its processes' share of the GPU's memory, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_share_pct: Option<Percent>,
    /// The device's utilization when this job is the only one on it (then it is the job's);
    /// absent when the GPU is shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<Percent>,
    /// The MIG instance this part of the job runs on (a job on two slices of one GPU has a part
    /// for each); its memory share is then of the slice's memory, and its utilization the
    /// slice's, which most drivers do not give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<crate::frame::MigSlot>,
}

impl JobGpu {
    /// `0`, or `0 (MIG 1/0)` for a part on a MIG instance (GPU instance 1, compute instance 0).
    pub fn place(&self) -> String {
        match self.mig {
            Some(m) => format!(
                "{} (MIG {}/{})",
                self.index, m.gpu_instance_id, m.compute_instance_id
            ),
            None => self.index.to_string(),
        }
    }
}

/// Which counters a job's I/O figures come from; they count different things.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum IoCounter {
    /// `read_bytes` / `write_bytes` of `/proc/<pid>/io`, summed over the job's processes: bytes
    /// sent to or fetched from the block layer. Page-cache hits are not counted; a write is
    /// counted when it dirties the cache, not when it reaches the disk. Network filesystems
    /// (NFS, Lustre, CephFS) are not counted.
    ProcIo,
    /// The job's cgroup v2 `io.stat`: bytes and requests the job's cgroup issued to each block
    /// device, its exited processes included. Network filesystems are not counted either.
    CgroupIoStat,
}

/// A job's disk I/O over the time since the previous tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobIo {
    pub counter: IoCounter,
    /// Rates need two readings: absent on the job's first tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes_per_sec: Option<BytesPerSec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_sec: Option<BytesPerSec>,
    /// Processes whose counters could not be read (they are not in the sums).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreadable: u32,
    /// Read and write requests per second (`cgroup_io_stat` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_iops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_iops: Option<f64>,
    /// Each block device the job did I/O on, by the kernel's name (`cgroup_io_stat` only; the
    /// totals leave out device-mapper and md devices, whose I/O their disks count again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<JobDeviceIo>,
}

/// A job's I/O on one block device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobDeviceIo {
    pub name: String,
    pub read_bytes_per_sec: BytesPerSec,
    pub write_bytes_per_sec: BytesPerSec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_iops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_iops: Option<f64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The `io.pressure` or `memory.pressure` of a job's cgroup, ten-second averages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobPsi {
    pub some_avg10: Percent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_avg10: Option<Percent>,
}

impl Job {
    /// A job of `kind` and `id` whose GPU processes are `gpu_pids`, with nothing else known yet:
    /// no GPUs, figures or owner (each filled in as it is measured).
    pub fn new(kind: JobKind, id: impl Into<String>, gpu_pids: Vec<u32>) -> Self {
        Job {
            kind,
            id: id.into(),
            step: None,
            name: None,
            user: None,
            gpus: Vec::new(),
            gpu_pids,
            workers: None,
            rss_bytes: None,
            cpu_pct: None,
            cpu_from_cgroup: false,
            memory_from_cgroup: false,
            io: None,
            io_absent: None,
            psi_io: None,
            psi_memory: None,
        }
    }

    /// How a person names the job: `slurm 4412.0`, `pod 9f1c…`, `process 2211 (python train.py)`.
    pub fn label(&self) -> String {
        let mut s = self.id_label();
        if let Some(name) = &self.name {
            s.push_str(&format!(" ({name})"));
        }
        s
    }

    /// The kind, id and step alone: `slurm 4412.0`, `container 0123456789ab`.
    pub fn id_label(&self) -> String {
        let mut s = format!("{} {}", self.kind.id(), short_id(self.kind, &self.id));
        if let Some(step) = &self.step {
            s.push_str(match self.kind {
                JobKind::Slurm => ".",
                _ => "/",
            });
            s.push_str(short_id(JobKind::Container, step));
        }
        s
    }

    /// The indices of its GPUs, ascending, once each (a job on two MIG instances of one GPU has
    /// two parts there).
    pub fn gpu_indices(&self) -> Vec<u32> {
        let mut indices: Vec<u32> = self.gpus.iter().map(|g| g.index).collect();
        indices.sort_unstable();
        indices.dedup();
        indices
    }

    /// GPU memory held on all its GPUs; absent when no figure was known.
    pub fn gpu_memory(&self) -> Option<Bytes> {
        self.gpus
            .iter()
            .filter_map(|g| g.memory_used_bytes)
            .map(|b| b.0)
            .reduce(u64::saturating_add)
            .map(Bytes)
    }
}

impl IoCounter {
    /// What a figure from these counters counts, said next to it.
    pub fn note(self) -> &'static str {
        match self {
            IoCounter::ProcIo => {
                "block-layer bytes from /proc/<pid>/io; page-cache hits and NFS, Lustre or CephFS reads are not counted"
            }
            IoCounter::CgroupIoStat => {
                "the job's cgroup io.stat, per device, exited processes included; page-cache hits and NFS, Lustre or CephFS reads are not counted"
            }
        }
    }
}

impl Job {
    /// One line for a report: the label, the owner, the GPUs with their memory, the I/O (or why
    /// it is missing) and the processes.
    /// `slurm 4412.0 (python3 train.py), alice: GPU 0 50.0 GiB, GPU 1 48.2 GiB; read 912 MiB/s,
    /// write 0 B/s; 8 other processes, RSS 24.0 GiB, CPU 310%`.
    pub fn summary_text(&self) -> String {
        let mut s = self.label();
        if let Some(user) = &self.user {
            s.push_str(&format!(", {user}"));
        }
        let gpus: Vec<String> = self
            .gpus
            .iter()
            .map(|g| {
                let mem = g
                    .memory_used_bytes
                    .map_or_else(|| "memory unknown".to_owned(), format_bytes);
                format!("GPU {} {mem}", g.place())
            })
            .collect();
        s.push_str(": ");
        s.push_str(&if gpus.is_empty() {
            "no GPU".to_owned()
        } else {
            gpus.join(", ")
        });
        let rate = |r: Option<BytesPerSec>| r.map_or_else(|| "—".to_owned(), format_rate);
        match (&self.io, &self.io_absent) {
            (Some(io), _) => {
                s.push_str(&format!(
                    "; read {}, write {}",
                    rate(io.read_bytes_per_sec),
                    rate(io.write_bytes_per_sec)
                ));
                let devices: Vec<String> = io
                    .devices
                    .iter()
                    .map(|d| {
                        format!(
                            "{} {}/{}",
                            d.name,
                            format_rate(d.read_bytes_per_sec),
                            format_rate(d.write_bytes_per_sec)
                        )
                    })
                    .collect();
                if !devices.is_empty() {
                    s.push_str(&format!(" ({})", devices.join(", ")));
                }
            }
            (None, Some(why)) => s.push_str(&format!("; I/O unknown: {why}")),
            (None, None) => s.push_str("; I/O unknown"),
        }
        if let Some(n) = self.workers {
            s.push_str(&format!("; {n} other processes"));
        }
        if let Some(rss) = self.rss_bytes {
            s.push_str(&format!(", RSS {}", format_bytes(rss)));
        }
        if let Some(cpu) = self.cpu_pct {
            s.push_str(&format!(", CPU {:.0}%", cpu.0));
        }
        s
    }
}

/// Container ids and pod UIDs are long; 12 characters tell them apart, as `docker ps` shows.
fn short_id(kind: JobKind, id: &str) -> &str {
    match kind {
        JobKind::Container | JobKind::Pod => id.get(..12).unwrap_or(id),
        _ => id,
    }
}

/// Whether `b` is false (a flag left out of the JSON).
fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(kind: JobKind, id: &str, step: Option<&str>) -> Job {
        Job {
            step: step.map(Into::into),
            ..Job::new(kind, id, Vec::new())
        }
    }

    #[test]
    fn labels_name_the_kind_id_and_step() {
        assert_eq!(
            job(JobKind::Slurm, "4412", Some("0")).label(),
            "slurm 4412.0"
        );
        let c = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            job(JobKind::Container, c, None).label(),
            "container 0123456789ab"
        );
        let mut p = job(JobKind::Process, "2211", None);
        p.name = Some("python train.py".into());
        assert_eq!(p.label(), "process 2211 (python train.py)");
    }

    #[test]
    fn summaries_say_what_is_unknown_and_why() {
        let mut j = job(JobKind::Slurm, "4412", Some("0"));
        j.user = Some("alice".into());
        j.gpus = vec![JobGpu {
            index: 1,
            uuid: None,
            memory_used_bytes: Some(Bytes(50 << 30)),
            memory_share_pct: None,
            utilization_pct: None,
            mig: None,
        }];
        j.io_absent = Some("needs root".into());
        j.workers = Some(8);
        assert_eq!(
            j.summary_text(),
            "slurm 4412.0, alice: GPU 1 50.0 GiB; I/O unknown: needs root; 8 other processes"
        );
        j.io_absent = None;
        j.io = Some(JobIo {
            read_iops: None,
            write_iops: None,
            devices: Vec::new(),
            counter: IoCounter::ProcIo,
            read_bytes_per_sec: Some(BytesPerSec(2.0 * 1024.0 * 1024.0)),
            write_bytes_per_sec: None,
            unreadable: 0,
        });
        j.cpu_pct = Some(Percent(310.4));
        assert_eq!(
            j.summary_text(),
            "slurm 4412.0, alice: GPU 1 50.0 GiB; read 2.0 MiB/s, write —; 8 other processes, CPU 310%"
        );
    }

    #[test]
    fn gpu_memory_is_absent_without_figures_and_summed_with_them() {
        let mut j = job(JobKind::Unit, "a.service", None);
        let g = |index, b: Option<u64>| JobGpu {
            index,
            uuid: None,
            memory_used_bytes: b.map(Bytes),
            memory_share_pct: None,
            utilization_pct: None,
            mig: None,
        };
        j.gpus = vec![g(0, None)];
        assert_eq!(j.gpu_memory(), None);
        j.gpus = vec![g(0, Some(5)), g(1, None), g(2, Some(7))];
        assert_eq!(j.gpu_memory(), Some(Bytes(12)));
    }
}
