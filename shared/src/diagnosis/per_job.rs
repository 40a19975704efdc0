//! A verdict per job (docs/jobs.md#5-a-verdict-per-job): the tree's GPU questions asked of each
//! job's own GPUs, with the starved branch's questions answered from the job's own I/O: its disk
//! question names who reads the busy device (the job itself, or another job: contention), and its
//! checkpoint question looks at the job's own writes.
//!
//! A job's walk stops at its GPUs and its I/O: disk space and host RAM are the host's questions,
//! asked once in the host's diagnosis, not repeated on every job's row.

use super::ctx::{Ctx, NodeResult, any_yes};
use super::disks::DiskSeries;
use super::gpu_memory::Out;
use super::gpus::GpuSeries;
use super::job_branch::{Host, branch};
use super::job_series::{JobSeries, gather};
use super::model::{Answer, Diagnosis, Finding, NodeId, PathNode, RuleId, Severity, Verdict};
use super::starvation::{self, starvation_rule};
use super::system::SystemSeries;
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
    /// The owner's login name, as the newest frame's job has it; absent when unknown, and for
    /// viewers who may not see user names ([`Diagnosis::without_users`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
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
        // A GPU the job runs on through MIG instances is those instances to it.
        let on_mig = |index: u32| job.mig.iter().any(|(i, _)| *i == index);
        let gpus: Vec<GpuSeries> = host_gpus
            .iter()
            .filter(|g| job.gpus.contains(&g.index) && !on_mig(g.index))
            .cloned()
            .collect();
        let slices = if job.mig.is_empty() {
            Vec::new()
        } else {
            super::mig::gather_mig(ctx, &job.mig)
        };
        if gpus.is_empty() && slices.is_empty() {
            continue;
        }
        out.push(one(ctx, (&gpus, &slices), &memory, sys, disks, &jobs, k));
    }
    out
}

/// One job's verdict: `gpus` are the host's series of its whole GPUs, `slices` those of its MIG
/// instances.
fn one(
    ctx: &Ctx<'_>,
    (whole, slices): (&[GpuSeries], &[GpuSeries]),
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
    let (mut mem, findings) = memory.of(whole);
    let mut out = Out {
        findings,
        ..Out::default()
    };
    if !slices.is_empty() {
        // Each instance's memory is a pool of its own: the memory rule is asked of it here.
        let mut own = Out::default();
        let sliced = super::gpu_memory::evaluate(ctx, slices, &mut own);
        mem.answer = if whole.is_empty() {
            sliced.answer
        } else {
            any_yes([mem.answer, sliced.answer])
        };
        mem.evidence.extend(sliced.evidence);
        out.findings.extend(own.findings);
    }
    let all: Vec<GpuSeries>;
    let gpus: &[GpuSeries] = if slices.is_empty() {
        whole
    } else {
        all = whole.iter().chain(slices).cloned().collect();
        &all
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
        } else if starvation_rule(f.rule)
            && let Some(since) = starved_since(prev)
        {
            f.since_ms = since;
        }
    }
    let severity = Severity::of(&out.findings, verdict);
    JobDiagnosis {
        kind: job.kind,
        id: job.id.clone(),
        step: job.step.clone(),
        label: job.label.clone(),
        user: job.user.clone(),
        gpus: job.gpus.clone(),
        verdict,
        severity,
        path,
        findings: out.findings,
        contention,
    }
}

/// When the job's previous diagnosis, if starved, first reported its starvation.
fn starved_since(prev: Option<&JobDiagnosis>) -> Option<u64> {
    let p = prev.filter(|p| p.verdict.is_starvation())?;
    p.findings
        .iter()
        .filter(|f| starvation_rule(f.rule))
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

impl Diagnosis {
    /// The diagnosis of `job`, if it has one.
    pub fn of_job(&self, job: &Job) -> Option<&JobDiagnosis> {
        self.jobs.iter().find(|d| d.is_of(job))
    }
}

#[cfg(test)]
#[path = "per_job_tests.rs"]
mod tests;
