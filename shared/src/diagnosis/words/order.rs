//! The order the findings panel (and the report) lists findings in: those behind the verdict
//! first, then the others by severity (critical, warning, unknown, ok); the diagnosis' own spine
//! order breaks ties.

use crate::diagnosis::model::{Finding, RuleId, Verdict};
use std::cmp::Reverse;

/// Whether `rule` explains `verdict` (the verdict's own rule and its refinements).
pub fn explains(verdict: Verdict, rule: RuleId) -> bool {
    match verdict {
        Verdict::GpuMemoryPressure => matches!(
            rule,
            RuleId::GpuMemoryPressure | RuleId::GpuMemoryNotHeldByJob | RuleId::GpuMemoryOrphan
        ),
        Verdict::InputBoundDisk => rule == RuleId::InputBoundDisk,
        Verdict::InputBoundCpu => rule == RuleId::InputBoundCpu,
        Verdict::CheckpointStall => rule == RuleId::CheckpointStall,
        Verdict::GpuUnderutilized => rule == RuleId::GpuUnderutilized,
        Verdict::DiskSpaceRisk => matches!(rule, RuleId::DiskSpaceRisk | RuleId::DevShm),
        Verdict::HostMemoryPressure => rule == RuleId::HostMemoryPressure,
        Verdict::Healthy => rule == RuleId::Headroom,
        Verdict::NoData => rule == RuleId::GpuUnavailable,
    }
}

/// `findings` in the panel's order (see the module docs).
pub fn order_findings(findings: &[Finding], verdict: Verdict) -> Vec<&Finding> {
    let mut out: Vec<&Finding> = findings.iter().collect();
    // A stable sort keeps the spine order among equals.
    out.sort_by_key(|f| (!explains(verdict, f.rule), Reverse(f.severity.rank())));
    out
}
