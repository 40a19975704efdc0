//! A verdict per job (docs/jobs.md#5-a-verdict-per-job): the tree's GPU questions asked of each
//! job's own GPUs, with the starved branch's questions answered from the job's own I/O: its disk
//! question names who reads the busy device (the job itself, or another job: contention), and its
//! checkpoint question looks at the job's own writes.
//!
//! A job's walk stops at its GPUs and its I/O: disk space and host RAM are the host's questions,
//! asked once in the host's diagnosis, not repeated on every job's row.

use super::ctx::{Ctx, NodeResult, any_yes};
use super::disk_io::disk_io;
use super::disks::DiskSeries;
use super::evidence::{Comparison, Evidence, Metric};
use super::gpu_memory::Out;
use super::gpus::GpuSeries;
use super::model::{Answer, Diagnosis, Finding, NodeId, PathNode, RuleId, Severity, Verdict};
use super::starvation::{self, Starved, Writes, checkpoint_stall, cpu_bound};
use super::stats::{Moments, median};
use super::suggestions::SuggestionId as S;
use super::system::SystemSeries;
use crate::frame::Frame;
use crate::jobs::{Job, JobKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One job's diagnosis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobDiagnosis {
    pub kind: JobKind,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The job as written everywhere ([`Job::label`]: kind, id, step and command name; never its
    /// user, which share links may hide).
    pub label: String,
    /// Its GPUs (indices) in the newest frame.
    pub gpus: Vec<u32>,
    pub verdict: Verdict,
    /// The worst of its findings; at least `unknown` when the verdict is `no_data`.
    pub severity: Severity,
    /// The nodes its walk visited: GPU memory, starved, and the branch below a starved answer.
    pub path: Vec<PathNode>,
    /// What the rules found on its GPUs and its I/O.
    pub findings: Vec<Finding>,
    /// Another job reading more from the busy device this job's GPUs wait on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<Contention>,
}

/// Another job's reads on the device a starved job waits on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Contention {
    pub kind: JobKind,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    pub label: String,
    /// The busy device (the host's busiest-read one).
    pub device: String,
    /// The other job's mean read rate over the window, bytes/s.
    pub read_bytes_per_sec: f64,
    /// This job's own mean read rate; absent when its reads were not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_read_bytes_per_sec: Option<f64>,
}

impl JobDiagnosis {
    /// Whether this is the diagnosis of `job` (same kind and id: a job's `step` is shown, not
    /// part of its identity, since it goes absent once a second step or container holds a GPU).
    pub fn is_of(&self, job: &Job) -> bool {
        self.kind == job.kind && self.id == job.id
    }
}

/// One job's own I/O over the window.
struct JobSeries {
    /// Its position in the newest frame's jobs, where it is looked for first in each frame.
    at: usize,
    kind: JobKind,
    id: String,
    step: Option<String>,
    label: String,
    gpus: Vec<u32>,
    reads: Moments,
    /// Reads per device by name, where the job's counters are its cgroup's (`io.stat`).
    reads_by_device: Vec<(String, Moments)>,
    writes_by_frame: Vec<Option<f64>>,
    write_median: Option<f64>,
}

fn same(job: &Job, kind: JobKind, id: &str) -> bool {
    job.kind == kind && job.id == id
}

/// The newest frame's jobs with GPUs, each with its reads and writes over the window (one pass;
/// a job is looked for at its newest position first, where it usually still is).
fn gather(frames: &[Frame]) -> Vec<JobSeries> {
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
            gpus: j.gpus.iter().map(|g| g.index).collect(),
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

/// The host's answer to *GPU memory too high?*, which each job reads for its own GPUs (the memory
/// of a GPU is one pool, whoever's job it is).
pub(crate) struct Memory<'a> {
    pub node: &'a NodeResult,
    /// Each GPU's answer.
    pub answers: &'a [(u32, Answer)],
    /// The memory rule's findings, one per GPU under pressure.
    pub findings: &'a [Finding],
}

impl Memory<'_> {
    /// The node and findings for the GPUs `subjects` only.
    fn of(&self, gpus: &[GpuSeries]) -> (NodeResult, Vec<Finding>) {
        let mine = |subject: Option<&str>| gpus.iter().any(|g| Some(g.subject.as_str()) == subject);
        let node = NodeResult {
            answer: any_yes(
                self.answers
                    .iter()
                    .filter(|(i, _)| gpus.iter().any(|g| g.index == *i))
                    .map(|(_, a)| *a),
            ),
            evidence: self
                .node
                .evidence
                .iter()
                .filter(|e| mine(e.subject.as_deref()))
                .cloned()
                .collect(),
        };
        let findings = self
            .findings
            .iter()
            .filter(|f| mine(f.subject.as_deref()))
            .cloned()
            .collect();
        (node, findings)
    }
}

/// A verdict for each job of the newest frame that holds a GPU, in the frame's order (biggest GPU
/// memory first). `disks` is gathered on first need and kept for the host's own use.
pub(crate) fn evaluate(
    ctx: &Ctx<'_>,
    host_gpus: &[GpuSeries],
    memory: Memory<'_>,
    sys: &SystemSeries,
    disks: &mut Option<DiskSeries>,
) -> Vec<JobDiagnosis> {
    let jobs = gather(ctx.frames);
    let mut out = Vec::with_capacity(jobs.len());
    for (k, job) in jobs.iter().enumerate() {
        let gpus: Vec<GpuSeries> = host_gpus
            .iter()
            .filter(|g| job.gpus.contains(&g.index))
            .cloned()
            .collect();
        if gpus.is_empty() {
            continue;
        }
        out.push(one(ctx, &gpus, &memory, sys, disks, &jobs, k));
    }
    out
}

fn one(
    ctx: &Ctx<'_>,
    gpus: &[GpuSeries],
    memory: &Memory<'_>,
    sys: &SystemSeries,
    disks: &mut Option<DiskSeries>,
    jobs: &[JobSeries],
    k: usize,
) -> JobDiagnosis {
    let job = &jobs[k];
    let prev = ctx
        .prev
        .and_then(|p| p.jobs.iter().find(|d| d.kind == job.kind && d.id == job.id));
    let (mem, findings) = memory.of(gpus);
    let mut out = Out {
        findings,
        ..Out::default()
    };
    let mut path = vec![node(NodeId::GpuMemory, &mem)];
    let mut contention = None;
    let verdict = if mem.answer == Answer::Yes {
        Verdict::GpuMemoryPressure
    } else {
        let held = prev.is_some_and(|p| p.verdict.is_starvation());
        let mut st = starvation::starved(ctx, gpus, held);
        // Held by this job's own starvation: since when is the job's, not the host's.
        if let Some(since) = starved_since(prev) {
            for e in &mut st.node.evidence {
                if let Some(h) = e.held.as_mut() {
                    h.since_ms = since;
                }
            }
        }
        path.push(node(NodeId::GpuStarved, &st.node));
        if st.node.answer == Answer::Yes {
            let disks = disks.get_or_insert_with(|| super::disks::gather(ctx));
            let host = Host { disks, sys, jobs };
            let (visited, rule, c) = branch(ctx, &host, k, (gpus, &st), &mut out);
            path.extend(visited.iter().map(|(id, r)| node(*id, r)));
            contention = c;
            match rule {
                RuleId::InputBoundDisk => Verdict::InputBoundDisk,
                RuleId::InputBoundCpu => Verdict::InputBoundCpu,
                RuleId::CheckpointStall => Verdict::CheckpointStall,
                _ => Verdict::GpuUnderutilized,
            }
        } else if mem.answer == Answer::Unknown || st.node.answer == Answer::Unknown {
            Verdict::NoData
        } else {
            Verdict::Healthy
        }
    };
    // A finding this job already had keeps its start; a starvation keeps its start while the
    // job stays starved, whichever leaf or GPUs it names now.
    for f in &mut out.findings {
        let same = prev.and_then(|p| {
            p.findings
                .iter()
                .find(|p| p.rule == f.rule && p.subject == f.subject)
        });
        if let Some(p) = same {
            f.since_ms = p.since_ms;
        } else if is_starvation_rule(f.rule)
            && let Some(since) = starved_since(prev)
        {
            f.since_ms = since;
        }
    }
    let mut severity = out
        .findings
        .iter()
        .fold(Severity::Ok, |s, f| s.worst(f.severity));
    if verdict == Verdict::NoData {
        severity = severity.worst(Severity::Unknown);
    }
    JobDiagnosis {
        kind: job.kind,
        id: job.id.clone(),
        step: job.step.clone(),
        label: job.label.clone(),
        gpus: job.gpus.clone(),
        verdict,
        severity,
        path,
        findings: out.findings,
        contention,
    }
}

fn is_starvation_rule(r: RuleId) -> bool {
    matches!(
        r,
        RuleId::InputBoundDisk
            | RuleId::InputBoundCpu
            | RuleId::CheckpointStall
            | RuleId::GpuUnderutilized
    )
}

/// When the job's previous diagnosis, if starved, first reported its starvation.
fn starved_since(prev: Option<&JobDiagnosis>) -> Option<u64> {
    let p = prev.filter(|p| p.verdict.is_starvation())?;
    p.findings
        .iter()
        .filter(|f| is_starvation_rule(f.rule))
        .map(|f| f.since_ms)
        .min()
}

fn node(id: NodeId, r: &NodeResult) -> PathNode {
    PathNode {
        node: id,
        question: id.question().to_owned(),
        answer: r.answer,
        evidence: r.evidence.clone(),
    }
}

impl JobSeries {
    /// Its mean reads from `device`: from its per-device counters where it has them (a device
    /// it never read from is a measured 0), else all its reads (its processes' counters do not
    /// say which device).
    fn reads_from(&self, device: &str) -> Option<f64> {
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
fn top_other_reader(jobs: &[JobSeries], k: usize, device: &str) -> Option<(usize, f64)> {
    jobs.iter()
        .enumerate()
        .filter(|(i, _)| *i != k)
        .filter_map(|(i, j)| Some((i, j.reads_from(device)?)))
        .reduce(|a, b| if b.1 > a.1 { b } else { a })
}

/// The host's series a job's starved branch reads, and every job's I/O.
struct Host<'a> {
    disks: &'a DiskSeries,
    sys: &'a SystemSeries,
    jobs: &'a [JobSeries],
}

/// The starved branch for job `k`: disk (with who reads), CPU, its own checkpoint writes, else
/// underutilized. Pushes the finding; returns the visited nodes, the rule and any contention.
fn branch(
    ctx: &Ctx<'_>,
    host: &Host<'_>,
    k: usize,
    (gpus, st): (&[GpuSeries], &Starved),
    out: &mut Out,
) -> (Vec<(NodeId, NodeResult)>, RuleId, Option<Contention>) {
    let Host { disks, sys, jobs } = *host;
    let job = &jobs[k];
    let th = ctx.th;
    let gpu_text = st
        .node
        .evidence
        .iter()
        .filter(|e| e.metric == Metric::GpuUtilizationMean)
        .filter_map(|e| {
            Some(format!(
                "{} averages {:.0}% utilization",
                e.subject.as_deref()?,
                e.value?
            ))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let subject = st
        .gpus
        .iter()
        .filter_map(|&i| gpus.get(i).map(|g| g.subject.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut evidence: Vec<Evidence> = st.node.evidence.clone();
    let mut visited = Vec::with_capacity(3);
    let mib = |v: f64| v / (1024.0 * 1024.0);

    let mut disk = disk_io(ctx, disks, sys);
    let device = disks.busiest.as_ref().map(|b| b.name.clone());
    if disk.answer == Answer::Yes
        && let Some(dev) = device
    {
        // Capped: a broken recording's rates can sum past f64, and JSON has no infinity.
        let device_mean = disks
            .busiest
            .as_ref()
            .and_then(|b| b.read.mean())
            .unwrap_or(0.0)
            .min(f64::MAX);
        let share_level = (th.job_read_fraction * device_mean).min(f64::MAX);
        let own = job.reads_from(&dev);
        let mut ev = ctx.ev(
            Metric::JobReadRateMean,
            Some(&job.label),
            own,
            Some((Comparison::Ge, share_level)),
        );
        ev.detail = Some(match own {
            Some(_) => format!("{dev} reads {:.0} MiB/s on average", mib(device_mean)),
            None => "this job's reads were not measured (see its I/O)".to_owned(),
        });
        disk.evidence.push(ev);
        let other = top_other_reader(jobs, k, &dev).filter(|(_, r)| {
            *r >= share_level && own.is_none_or(|o| *r > o) && *r >= th.min_read_bytes_per_sec
        });
        let contention = other.map(|(i, r)| {
            let o = &jobs[i];
            let mut ev = ctx.ev(Metric::JobReadRateMean, Some(&o.label), Some(r), None);
            ev.detail = Some(format!("another job reading from {dev}"));
            disk.evidence.push(ev);
            Contention {
                kind: o.kind,
                id: o.id.clone(),
                step: o.step.clone(),
                label: o.label.clone(),
                device: dev.clone(),
                read_bytes_per_sec: r,
                own_read_bytes_per_sec: own,
            }
        });
        if contention.is_none() && own.is_some_and(|o| o < share_level) {
            // Busy, but not with this job's reads (nor another job's): its GPUs wait on
            // something else, which the rest of the branch looks for.
            disk.answer = Answer::No;
            if let Some(e) = disk
                .evidence
                .iter_mut()
                .rev()
                .find(|e| e.metric == Metric::JobReadRateMean)
            {
                e.detail = Some(format!(
                    "{dev} is busy ({:.0} MiB/s on average), but not with this job's reads",
                    mib(device_mean)
                ));
            }
        } else {
            let own_text = match own {
                Some(o) => format!("this job reads {:.0} MiB/s of it", mib(o)),
                None => "this job's own reads were not measured".to_owned(),
            };
            let why = match &contention {
                Some(c) => format!(
                    "{gpu_text} while {dev} reads {:.0} MiB/s on average and {} reads {:.0} MiB/s of it; {own_text}",
                    mib(device_mean),
                    c.label,
                    mib(c.read_bytes_per_sec)
                ),
                None => format!(
                    "{gpu_text} while {dev} reads {:.0} MiB/s on average and {own_text}",
                    mib(device_mean)
                ),
            };
            let ids = if contention.is_some() {
                vec![S::SeparateReaders, S::StageOnLocalNvme, S::CacheInRam]
            } else {
                vec![
                    S::DataloaderWorkers,
                    S::StageOnLocalNvme,
                    S::CacheInRam,
                    S::ShardedFormats,
                ]
            };
            evidence.extend(disk.evidence.iter().cloned());
            visited.push((NodeId::DiskIo, disk));
            push(
                ctx,
                out,
                Found {
                    rule: RuleId::InputBoundDisk,
                    subject: Some(dev),
                    confidence: 0.7,
                    ids,
                    why,
                },
                evidence,
            );
            return (visited, RuleId::InputBoundDisk, contention);
        }
    }
    let disk_unknown = disk.answer == Answer::Unknown;
    visited.push((NodeId::DiskIo, disk));
    let cpu = cpu_bound(ctx, sys);
    if cpu.answer == Answer::Yes {
        let busy = cpu.evidence.first().and_then(|e| e.value).unwrap_or(0.0);
        evidence.extend(cpu.evidence.iter().cloned());
        visited.push((NodeId::CpuBound, cpu));
        let why = format!(
            "{gpu_text} while the host's CPUs are {busy:.0}% busy and reads are not the limit"
        );
        let ids = vec![S::DataloaderWorkers, S::GpuDecoding, S::ShardedFormats];
        push(
            ctx,
            out,
            Found {
                rule: RuleId::InputBoundCpu,
                subject: Some(subject),
                confidence: 0.6,
                ids,
                why,
            },
            evidence,
        );
        return (visited, RuleId::InputBoundCpu, None);
    }
    let cpu_unknown = cpu.answer == Answer::Unknown;
    visited.push((NodeId::CpuBound, cpu));
    // The job's own writes where they were measured, else every device's.
    let own_writes = job.write_median.is_some();
    let writes = if own_writes {
        Writes {
            by_frame: &job.writes_by_frame,
            median: job.write_median,
        }
    } else {
        Writes::from(disks)
    };
    let mut ck = checkpoint_stall(ctx, gpus, &st.gpus, writes);
    if let Some(e) = ck.evidence.first_mut() {
        let whose = if own_writes {
            "this job's writes"
        } else {
            "all devices' writes (this job's were not measured)"
        };
        e.detail = Some(match e.detail.take() {
            Some(d) => format!("{whose}: {d}"),
            None => whose.to_owned(),
        });
    }
    let ck_unknown = ck.answer == Answer::Unknown;
    if ck.answer == Answer::Yes {
        let (a, d) = ck
            .evidence
            .first()
            .and_then(|e| e.samples)
            .unwrap_or((0, 0));
        evidence.extend(ck.evidence.iter().cloned());
        visited.push((NodeId::CheckpointStall, ck));
        let why = format!("{gpu_text}; {a} of {d} utilization dips coincide with its write bursts");
        let ids = vec![S::AsyncCheckpoint, S::SaveWeightsOnly];
        push(
            ctx,
            out,
            Found {
                rule: RuleId::CheckpointStall,
                subject: Some(subject),
                confidence: 0.75,
                ids,
                why,
            },
            evidence,
        );
        return (visited, RuleId::CheckpointStall, None);
    }
    visited.push((NodeId::CheckpointStall, ck));
    let unknowns = [disk_unknown, cpu_unknown, ck_unknown]
        .iter()
        .filter(|u| **u)
        .count() as f64;
    let why = format!("{gpu_text}; neither the disk, the CPUs nor its own writes explain it");
    let ids = vec![S::FewerSyncPoints, S::DataloaderWorkers];
    let found = Found {
        rule: RuleId::GpuUnderutilized,
        subject: Some(subject),
        // Less sure when the disk, CPU or write data was missing.
        confidence: 0.6 - 0.1 * unknowns,
        ids,
        why,
    };
    push(ctx, out, found, evidence);
    (visited, RuleId::GpuUnderutilized, None)
}

/// What the starved branch found for a job, before it becomes a [`Finding`].
struct Found {
    rule: RuleId,
    subject: Option<String>,
    confidence: f64,
    ids: Vec<S>,
    why: String,
}

fn push(ctx: &Ctx<'_>, out: &mut Out, found: Found, evidence: Vec<Evidence>) {
    let Found {
        rule,
        subject,
        confidence,
        ids,
        why,
    } = found;
    out.findings.push(Finding {
        rule,
        severity: Severity::Warning,
        confidence,
        subject,
        since_ms: ctx.now_ms,
        evidence,
        suggestions: ids.into_iter().map(|id| id.with_why(why.clone())).collect(),
    });
}

impl Diagnosis {
    /// The diagnosis of `job`, if it has one.
    pub fn of_job(&self, job: &Job) -> Option<&JobDiagnosis> {
        self.jobs.iter().find(|d| d.is_of(job))
    }
}

#[cfg(test)]
#[path = "per_job_tests.rs"]
mod tests;
