//! The `vramio_job_*` families of `/metrics` (docs/jobs.md#3-where-jobs-show): each host's jobs from its
//! newest frame, at most [`MAX_JOBS`] per host, biggest GPU memory first (the frame's order), so
//! a node with hundreds of short jobs cannot grow a scrape without bound. A job is labelled by
//! `kind` and `job_id` (not `job`, which Prometheus sets to the scrape job and would rename to
//! `exported_job`); its name and user are on `vramio_job_info` only (the user only where users
//! are shown). Each job's own verdict comes from the host's diagnosis (`vramio_job_verdict`,
//! `vramio_job_severity`, and who it contends with).

use super::families::{Labels, Out};
use super::{HostData, Scrape};
use shared::Job;
use std::borrow::Cow;
use std::fmt;

/// Jobs per host with series; the rest are counted in `vramio_jobs_unlisted`.
pub const MAX_JOBS: usize = 64;

impl Scrape {
    /// Each host's first [`MAX_JOBS`] jobs. Two jobs with the same kind and id (a rootless
    /// container named like another, say) would give two series the same labels, which makes
    /// Prometheus refuse the whole scrape: only the first of them (the bigger) has series.
    fn jobs(&self) -> impl Iterator<Item = (&HostData, &Job)> {
        self.up_hosts().flat_map(|(h, f)| {
            let listed = &f.jobs[..f.jobs.len().min(MAX_JOBS)];
            listed.iter().enumerate().filter_map(move |(i, j)| {
                let repeat = listed[..i].iter().any(|o| o.kind == j.kind && o.id == j.id);
                (!repeat).then_some((h, j))
            })
        })
    }

    fn job_labels<'a>(&self, host: &'a HostData, job: &'a Job) -> Labels<'a> {
        let mut labels = self.base(host);
        labels.push(("kind", Cow::Borrowed(job.kind.id())));
        labels.push(("job_id", Cow::Borrowed(job.id.as_str())));
        labels
    }
}

pub(super) fn encode(s: &Scrape, out: &mut Out) -> fmt::Result {
    out.gauge(
        "vramio_jobs_unlisted",
        "Jobs on the host beyond the 64 with series (the smallest by GPU memory).",
        s.up_hosts().map(|(h, f)| {
            let beyond = f.jobs.len().saturating_sub(MAX_JOBS);
            (s.base(h), beyond as f64)
        }),
    )?;
    out.gauge(
        "vramio_job_info",
        "A job holding GPU memory (1): kind (slurm, pod, container, unit, process, hpc), job_id, step, \
         name (the comm of its top process), and its user where users are shown.",
        s.jobs().map(|(h, j)| {
            let mut labels = s.job_labels(h, j);
            labels.push(("step", Cow::Borrowed(j.step.as_deref().unwrap_or(""))));
            labels.push(("name", Cow::Borrowed(j.name.as_deref().unwrap_or(""))));
            if s.options.show_users {
                labels.push(("user", Cow::Borrowed(j.user.as_deref().unwrap_or(""))));
            }
            (labels, 1.0)
        }),
    )?;
    out.gauge(
        "vramio_job_gpu_memory_used_bytes",
        "GPU memory the job's processes hold on one GPU.",
        s.jobs().flat_map(|(h, j)| {
            j.gpus.iter().filter_map(move |g| {
                let mut labels = s.job_labels(h, j);
                labels.push(("gpu", Cow::Owned(g.index.to_string())));
                labels.push(("uuid", Cow::Borrowed(g.uuid.as_deref().unwrap_or(""))));
                // A job's parts on two MIG instances of one GPU are two series.
                let (gi, ci) = g.mig.map_or((String::new(), String::new()), |m| {
                    (
                        m.gpu_instance_id.to_string(),
                        m.compute_instance_id.to_string(),
                    )
                });
                labels.push(("gpu_instance", Cow::Owned(gi)));
                labels.push(("compute_instance", Cow::Owned(ci)));
                Some((labels, g.memory_used_bytes?.0 as f64))
            })
        }),
    )?;
    let io = |pick: fn(&shared::JobIo) -> Option<f64>| {
        s.jobs()
            .filter_map(move |(h, j)| Some((s.job_labels(h, j), pick(j.io.as_ref()?)?)))
    };
    out.gauge(
        "vramio_job_read_bytes_per_second",
        "Bytes the job's processes read from block devices per second, over the last few seconds \
         (/proc/<pid>/io read_bytes; network filesystems are not counted).",
        io(|io| io.read_bytes_per_sec.map(|r| r.0)),
    )?;
    out.gauge(
        "vramio_job_write_bytes_per_second",
        "Bytes the job's processes wrote towards block devices per second (/proc/<pid>/io \
         write_bytes, counted when the page cache is dirtied).",
        io(|io| io.write_bytes_per_sec.map(|r| r.0)),
    )?;
    let per_device = |pick: fn(&shared::JobDeviceIo) -> Option<f64>| {
        s.jobs().flat_map(move |(h, j)| {
            j.io.iter().flat_map(|io| &io.devices).filter_map(move |d| {
                let mut labels = s.job_labels(h, j);
                labels.push(("device", Cow::Borrowed(d.name.as_str())));
                Some((labels, pick(d)?))
            })
        })
    };
    out.gauge(
        "vramio_job_device_read_bytes_per_second",
        "Bytes the job's cgroup read from one block device per second (cgroup v2 io.stat).",
        per_device(|d| Some(d.read_bytes_per_sec.0)),
    )?;
    out.gauge(
        "vramio_job_device_write_bytes_per_second",
        "Bytes the job's cgroup wrote to one block device per second (cgroup v2 io.stat).",
        per_device(|d| Some(d.write_bytes_per_sec.0)),
    )?;
    out.gauge(
        "vramio_job_device_reads_per_second",
        "Read requests the job's cgroup issued to one block device per second (io.stat rios).",
        per_device(|d| d.read_iops),
    )?;
    out.gauge(
        "vramio_job_device_writes_per_second",
        "Write requests the job's cgroup issued to one block device per second (io.stat wios).",
        per_device(|d| d.write_iops),
    )?;
    let each = |pick: fn(&Job) -> Option<f64>| {
        s.jobs()
            .filter_map(move |(h, j)| Some((s.job_labels(h, j), pick(j)?)))
    };
    out.gauge(
        "vramio_job_cpu_cores",
        "CPU the job's processes used, in cores, over the last few seconds.",
        each(|j| j.cpu_pct.map(|p| p.0 / 100.0)),
    )?;
    out.gauge(
        "vramio_job_resident_memory_bytes",
        "Resident host memory of the job's processes.",
        each(|j| j.rss_bytes.map(|b| b.0 as f64)),
    )?;
    out.gauge(
        "vramio_job_processes",
        "The job's processes: those holding GPU memory and the others below them.",
        each(|j| Some((j.gpu_pids.len() as u64 + u64::from(j.workers?)) as f64)),
    )?;
    out.gauge(
        "vramio_job_io_pressure_ratio",
        "Share of time some task of the job's cgroup waited on I/O (cgroup v2 io.pressure some \
         avg10, 0..1).",
        each(|j| j.psi_io.map(|p| p.some_avg10.0 / 100.0)),
    )?;
    let judged = || {
        s.jobs().filter_map(move |(h, j)| {
            let d = h.diagnosis.as_deref()?.of_job(j)?;
            Some((s.job_labels(h, j), d))
        })
    };
    out.gauge(
        "vramio_job_verdict",
        "The job's own verdict (1), one series per job labelled with its verdict id and the \
         subject of the finding behind it (a device, a GPU); docs/jobs.md#5-a-verdict-per-job.",
        judged().map(|(mut labels, d)| {
            let subject = d
                .findings
                .iter()
                .find(|f| shared::diagnosis::words::explains(d.verdict, f.rule))
                .and_then(|f| f.subject.clone())
                .unwrap_or_default();
            labels.push(("verdict", Cow::Borrowed(d.verdict.id())));
            labels.push(("subject", Cow::Owned(subject)));
            (labels, 1.0)
        }),
    )?;
    out.gauge(
        "vramio_job_severity",
        "The worst severity of the job's findings: 0 ok, 1 warning, 2 critical, 3 unknown.",
        judged().map(|(labels, d)| (labels, f64::from(d.severity.exit_code()))),
    )?;
    out.gauge(
        "vramio_job_contention_read_bytes_per_second",
        "Another job's mean reads on the busy device this starved job waits on, labelled with \
         the device and the other job (by_kind, by_job_id).",
        judged().filter_map(|(mut labels, d)| {
            let c = d.contention.as_ref()?;
            labels.push(("device", Cow::Borrowed(c.device.as_str())));
            labels.push(("by_kind", Cow::Borrowed(c.kind.id())));
            labels.push(("by_job_id", Cow::Borrowed(c.id.as_str())));
            Some((labels, c.read_bytes_per_sec))
        }),
    )
}
