//! The diagnosis: which resource holds a GPU job back, why, and what to change (docs/diagnosis.md).
//!
//! [`diagnose`] takes one host's frames over a window (oldest first), the [`Thresholds`] and the
//! previous [`Diagnosis`] (for hysteresis), and walks the tree of [`tree()`]:
//! *GPU memory too high?* -> *GPU starved?* (-> *disk I/O slow?* -> *CPU-bound?* -> *checkpoint
//! stall?*) -> *disk space at risk?* -> *host RAM pressure?* -> healthy. Each node answers yes, no or
//! unknown (missing data is unknown, never no) with its evidence.
//!
//! Rules and their combination:
//! - A condition holds when it is met in at least `hold_fraction` of the samples that have data
//!   (N of M), with at least `min_samples` of them; one spike never decides.
//! - Hysteresis: a finding present in `prev` (same rule and subject; for the starved branch, a
//!   starved verdict in `prev`) is counted against levels `hysteresis_pct_points` easier (GPU
//!   memory holds at 85% instead of 90%, starvation below 55% instead of 50%), so it neither
//!   clears on one dip nor flickers around the threshold; it clears once the window falls below
//!   the lower level.
//! - Verdict: the leaf the walk reaches. `yes` follows the yes edge; `no` and `unknown` follow the
//!   no edge. Reaching `healthy` with any spine node unknown gives `no_data` instead. Every rule
//!   runs, so all findings are listed, whichever decides the verdict.
//! - Severity: the worst finding (ok < unknown < warning < critical), at least `unknown` for
//!   `no_data`, so `check` exits non-zero on any warning or critical even off the verdict's branch.
//!
//! Cost: one frame-major pass for the GPUs, one for the host, one over all block devices (sums,
//! no name lookups) and one for the busiest device (chosen from cumulative counters); slow series
//! (mount usage, GPU process lists) are read on the trend subsample of at most `trend_max_points`
//! frames; a trend is fitted (Theil-Sen, O(points^2)) only when a Mann-Kendall test says the
//! series rises; no allocation per sample.

mod ctx;
mod disk_io;
mod disk_space;
mod disks;
mod evidence;
mod gpu_memory;
mod gpus;
mod headroom;
mod host_memory;
mod job_branch;
mod job_series;
mod mig;
mod model;
mod no_data;
pub(crate) mod per_job;
mod starvation;
mod stats;
mod suggestions;
mod system;
mod thresholds;
mod tree;
mod trend;
pub mod words;

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;

pub use evidence::{Comparison, Evidence, Held, Metric, Threshold, Unit};
pub use model::{
    Answer, Diagnosis, Finding, NoDataCause, NodeId, PathNode, Projection, ProjectionKind, RuleId,
    Severity, Verdict,
};
pub use per_job::{Contention, JobDiagnosis};
pub use suggestions::{Suggestion, SuggestionId};
pub use thresholds::Thresholds;
pub use tree::{NODES, ROOT, TreeEdge, TreeNode, leaf_label, tree};

use crate::frame::Frame;
use ctx::{Ctx, NodeResult};
use gpu_memory::Out;
use gpus::GpuSeries;
use tree::Edge;

/// Whether a node is on the spine (an unknown there makes a healthy walk `no_data`).
fn on_spine(n: NodeId) -> bool {
    matches!(
        n,
        NodeId::GpuMemory | NodeId::GpuStarved | NodeId::DiskSpace | NodeId::HostMemory
    )
}

fn slot(n: NodeId) -> usize {
    NODES.iter().position(|x| *x == n).unwrap_or(0)
}

/// Diagnoses one host over `frames` (oldest first). See the module docs for the rules.
pub fn diagnose(frames: &[Frame], thresholds: &Thresholds, prev: Option<&Diagnosis>) -> Diagnosis {
    let ctx = Ctx::new(frames, thresholds, prev);
    let Some(newest) = frames.last() else {
        let mut ev = ctx.ev(Metric::Frames, None, Some(0.0), None);
        ev.detail = Some("no frames in the window".to_owned());
        return Diagnosis {
            verdict: Verdict::NoData,
            severity: Severity::Unknown,
            path: vec![PathNode {
                node: ROOT,
                question: ROOT.question().to_owned(),
                answer: Answer::Unknown,
                evidence: vec![ev],
            }],
            findings: Vec::new(),
            projections: Vec::new(),
            window_s: None,
            t_ms: None,
            no_data: Some(NoDataCause::NoFrames),
            jobs: Vec::new(),
        };
    };
    let mut out = Out::default();
    let mut results: [Option<NodeResult>; NODES.len()] = Default::default();

    let gpus = gpus::gather(&ctx);
    // A GPU in MIG mode is also each of its instances, memory pools of their own: a full one is
    // pressure while the GPU as a whole has room (docs/jobs.md#mig).
    let instances = mig::gather_mig(&ctx, &mig::instances_of(newest));
    let mem = if instances.is_empty() {
        gpu_memory::evaluate(&ctx, &gpus, &mut out)
    } else {
        let pools: Vec<GpuSeries> = gpus.iter().cloned().chain(instances).collect();
        gpu_memory::evaluate(&ctx, &pools, &mut out)
    };
    // The jobs read their GPUs' memory answers and findings, not the refinements' (which are
    // about memory no job holds).
    let mem_findings = out.findings.len();
    gpu_memory::refinements(&ctx, &gpus, &mut out);

    let sys = system::gather(&ctx);
    let starved = starvation::starved(&ctx, &gpus, prev.is_some_and(|p| p.verdict.is_starvation()));
    let mut disks = None;
    if starved.node.answer == Answer::Yes {
        let disks = disks.get_or_insert_with(|| disks::gather(&ctx));
        for (id, r) in starvation::classify(&ctx, &gpus, &starved, disks, &sys, &mut out) {
            results[slot(id)] = Some(r);
        }
    }
    let jobs = per_job::evaluate(
        &ctx,
        &gpus,
        per_job::Memory {
            node: &mem,
            answers: &out.gpu_answers,
            findings: &out.findings[..mem_findings],
        },
        &sys,
        &mut disks,
    );
    results[slot(NodeId::GpuMemory)] = Some(mem);
    results[slot(NodeId::GpuStarved)] = Some(starved.node);
    results[slot(NodeId::DiskSpace)] = Some(disk_space::evaluate(&ctx, !gpus.is_empty(), &mut out));
    results[slot(NodeId::HostMemory)] = Some(host_memory::evaluate(&ctx, &sys, &mut out));
    headroom::evaluate(&ctx, &gpus, &mut out);

    let (path, leaf, spine_unknown) = walk(&mut results);
    let verdict = if leaf == Verdict::Healthy && spine_unknown {
        Verdict::NoData
    } else {
        leaf
    };
    let no_data = (verdict == Verdict::NoData).then(|| no_data::cause(&ctx, &gpus, &path));
    let severity = Severity::of(&out.findings, verdict);
    Diagnosis {
        verdict,
        severity,
        path,
        findings: out.findings,
        projections: out.projections,
        window_s: ctx.window_s,
        t_ms: Some(newest.t_ms),
        no_data,
        jobs,
    }
}

/// Follows the edges from the root: the visited nodes, the leaf, and whether a spine node was
/// unknown. A node without a result (not evaluated) answers unknown.
fn walk(results: &mut [Option<NodeResult>; NODES.len()]) -> (Vec<PathNode>, Verdict, bool) {
    let mut path = Vec::with_capacity(NODES.len());
    let mut node = ROOT;
    let mut spine_unknown = false;
    // The tree is acyclic; the bound only guards against a future edit that is not.
    for _ in 0..NODES.len() {
        let r = results[slot(node)].take().unwrap_or(NodeResult {
            answer: Answer::Unknown,
            evidence: Vec::new(),
        });
        spine_unknown |= on_spine(node) && r.answer == Answer::Unknown;
        let (yes, no) = node.edges();
        let next = if r.answer == Answer::Yes { yes } else { no };
        path.push(PathNode {
            node,
            question: node.question().to_owned(),
            answer: r.answer,
            evidence: r.evidence,
        });
        match next {
            Edge::Node(n) => node = n,
            Edge::Leaf(v) => return (path, v, spine_unknown),
        }
    }
    (path, Verdict::NoData, true)
}
