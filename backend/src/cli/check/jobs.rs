//! The `jobs` of `vramio check --json`: each job of the window's last frame in a flat shape for
//! scripts (docs/jobs.md#3-where-jobs-show). A figure that could not be measured is absent, never 0.

use serde::Serialize;
use shared::diagnosis::words::{Tz, job_reason};
use shared::diagnosis::{Contention, Diagnosis, Finding, Severity, Verdict};
use shared::{Frame, IoCounter, Job, JobKind};

/// One job as `check --json` prints it.
#[derive(Debug, Serialize)]
pub struct JobReport<'a> {
    pub kind: JobKind,
    pub id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<&'a str>,
    pub gpus: Vec<GpuReport>,
    pub gpu_pids: &'a [u32],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_bytes_per_sec: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_sec: Option<f64>,
    /// Read and write requests per second (from the cgroup's `io.stat`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_iops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_iops: Option<f64>,
    /// Each block device, by name (from the cgroup's `io.stat`).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub io_devices: &'a [shared::JobDeviceIo],
    /// Which counters the two rates come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_counter: Option<IoCounter>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_absent: Option<&'a str>,
    /// Processes whose counters could not be read: the rates leave them out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_unreadable: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<f64>,
    /// `cpu_pct` and `rss_bytes` are the job's cgroup's, not sums over its processes
    /// (docs/jobs.md#2-the-figures-of-a-job).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cpu_from_cgroup: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub memory_from_cgroup: bool,
    /// The job's own verdict (docs/jobs.md#5-a-verdict-per-job); absent for a job the window's
    /// diagnosis had none for (no GPU in the window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// The verdict's deciding evidence in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Another job reading more from the busy device this job waits on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contention: Option<&'a Contention>,
    /// What the rules found on its GPUs and its I/O, with evidence and suggestions.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub findings: &'a [Finding],
}

/// One GPU of a job.
#[derive(Debug, Serialize)]
pub struct GpuReport {
    pub index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<f64>,
    /// The MIG instance of this part (`gpu_instance_id`, `compute_instance_id`), on a GPU in MIG
    /// mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mig: Option<shared::MigSlot>,
}

impl<'a> JobReport<'a> {
    /// `job` with its verdict from `d` (times in `tz`).
    pub fn of(job: &'a Job, d: &'a Diagnosis, tz: Tz) -> Self {
        let io = job.io.as_ref();
        let verdict = d.of_job(job);
        JobReport {
            kind: job.kind,
            id: &job.id,
            step: job.step.as_deref(),
            name: job.name.as_deref(),
            user: job.user.as_deref(),
            gpus: job
                .gpus
                .iter()
                .map(|g| GpuReport {
                    index: g.index,
                    memory_used_bytes: g.memory_used_bytes.map(|b| b.0),
                    utilization_pct: g.utilization_pct.map(|p| p.0),
                    mig: g.mig,
                })
                .collect(),
            gpu_pids: &job.gpu_pids,
            read_bytes_per_sec: io.and_then(|io| io.read_bytes_per_sec).map(|r| r.0),
            write_bytes_per_sec: io.and_then(|io| io.write_bytes_per_sec).map(|r| r.0),
            read_iops: io.and_then(|io| io.read_iops),
            write_iops: io.and_then(|io| io.write_iops),
            io_devices: io.map_or(&[], |io| io.devices.as_slice()),
            io_counter: io.map(|io| io.counter),
            io_absent: job.io_absent.as_deref(),
            io_unreadable: io.map(|io| io.unreadable).filter(|n| *n > 0),
            workers: job.workers,
            rss_bytes: job.rss_bytes.map(|b| b.0),
            cpu_pct: job.cpu_pct.map(|p| p.0),
            cpu_from_cgroup: job.cpu_from_cgroup && job.cpu_pct.is_some(),
            memory_from_cgroup: job.memory_from_cgroup && job.rss_bytes.is_some(),
            verdict: verdict.map(|v| v.verdict),
            severity: verdict.map(|v| v.severity),
            reason: verdict.map(|v| job_reason(v, tz)),
            contention: verdict.and_then(|v| v.contention.as_ref()),
            findings: verdict.map_or(&[], |v| v.findings.as_slice()),
        }
    }
}

/// The jobs of the newest frame (jobs are measured every few seconds, so the newest says most).
pub fn latest(frames: &[Frame]) -> &[Job] {
    frames.last().map_or(&[], |f| f.jobs.as_slice())
}
