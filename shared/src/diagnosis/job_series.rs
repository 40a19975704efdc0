//! One job's own I/O over the window (its reads, per device where its counters are its cgroup's,
//! and its writes per frame), gathered in one pass for every job of the newest frame; read by
//! each job's starved branch ([`super::job_branch`]).

use super::stats::{Moments, median};
use crate::frame::Frame;
use crate::jobs::{Job, JobKind};

/// One job's own I/O over the window.
pub(crate) struct JobSeries {
    /// Its position in the newest frame's jobs, where it is looked for first in each frame.
    pub(crate) at: usize,
    pub(crate) kind: JobKind,
    pub(crate) id: String,
    pub(crate) step: Option<String>,
    pub(crate) label: String,
    pub(crate) user: Option<String>,
    pub(crate) gpus: Vec<u32>,
    /// The MIG instances its processes run on in the newest frame, by GPU index.
    pub(crate) mig: Vec<(u32, crate::frame::MigSlot)>,
    pub(crate) reads: Moments,
    /// Reads per device by name, where the job's counters are its cgroup's (`io.stat`).
    pub(crate) reads_by_device: Vec<(String, Moments)>,
    pub(crate) writes_by_frame: Vec<Option<f64>>,
    pub(crate) write_median: Option<f64>,
}

fn same(job: &Job, kind: JobKind, id: &str) -> bool {
    job.kind == kind && job.id == id
}

/// The newest frame's jobs with GPUs, each with its reads and writes over the window (one pass;
/// a job is looked for at its newest position first, where it usually still is).
pub(crate) fn gather(frames: &[Frame]) -> Vec<JobSeries> {
    let Some(newest) = frames.last() else {
        return Vec::new();
    };
    let mut all: Vec<JobSeries> = newest
        .jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| !j.gpus.is_empty())
        .map(|(at, j)| JobSeries {
            at,
            kind: j.kind,
            id: j.id.clone(),
            step: j.step.clone(),
            label: j.label(),
            user: j.user.clone(),
            gpus: j.gpu_indices(),
            mig: j
                .gpus
                .iter()
                .filter_map(|g| Some((g.index, g.mig?)))
                .collect(),
            reads: Moments::default(),
            reads_by_device: Vec::new(),
            writes_by_frame: vec![None; frames.len()],
            write_median: None,
        })
        .collect();
    for (i, f) in frames.iter().enumerate() {
        for s in &mut all {
            let key = |j: &&Job| same(j, s.kind, &s.id);
            let job = f
                .jobs
                .get(s.at)
                .filter(key)
                .or_else(|| f.jobs.iter().find(key));
            let Some(io) = job.and_then(|j| j.io.as_ref()) else {
                continue;
            };
            if let Some(r) = io.read_bytes_per_sec {
                s.reads.add(r.0);
            }
            for d in &io.devices {
                let pos = match s.reads_by_device.iter().position(|(n, _)| *n == d.name) {
                    Some(p) => p,
                    None => {
                        s.reads_by_device.push((d.name.clone(), Moments::default()));
                        s.reads_by_device.len() - 1
                    }
                };
                s.reads_by_device[pos].1.add(d.read_bytes_per_sec.0);
            }
            s.writes_by_frame[i] = io.write_bytes_per_sec.map(|w| w.0);
        }
    }
    let mut buf = Vec::new();
    for s in &mut all {
        buf.clear();
        buf.extend(s.writes_by_frame.iter().flatten());
        s.write_median = median(&mut buf);
    }
    all
}

impl JobSeries {
    /// Its mean reads from `device`: from its per-device counters where it has them (a device
    /// it never read from is a measured 0), else all its reads (its processes' counters do not
    /// say which device).
    pub(crate) fn reads_from(&self, device: &str) -> Option<f64> {
        let mean = if self.reads_by_device.is_empty() {
            self.reads.mean()
        } else {
            Some(
                self.reads_by_device
                    .iter()
                    .find(|(n, _)| n == device)
                    .and_then(|(_, m)| m.mean())
                    .unwrap_or(0.0),
            )
        };
        mean.map(|m| m.min(f64::MAX))
    }
}

/// The job reading the most from `device` other than job `k`: `(index, mean bytes/s)`.
pub(crate) fn top_other_reader(jobs: &[JobSeries], k: usize, device: &str) -> Option<(usize, f64)> {
    jobs.iter()
        .enumerate()
        .filter(|(i, _)| *i != k)
        .filter_map(|(i, j)| Some((i, j.reads_from(device)?)))
        .reduce(|a, b| if b.1 > a.1 { b } else { a })
}
