//! Which findings the suggestions panel lists first and which projection a card shows. Order: the
//! findings behind the verdict, then the others by severity (critical, warning, unknown, ok); the
//! diagnosis' own (spine) order breaks ties.

use shared::diagnosis::{Finding, Projection, ProjectionKind, RuleId, Severity, Verdict};

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

/// Most severe first.
fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Critical => 0,
        Severity::Warning => 1,
        Severity::Unknown => 2,
        Severity::Ok => 3,
    }
}

/// `findings` in the panel's order (see the module docs).
pub fn order_findings(findings: &[Finding], verdict: Verdict) -> Vec<&Finding> {
    let mut out: Vec<&Finding> = findings.iter().collect();
    // A stable sort keeps the spine order among equals.
    out.sort_by_key(|f| (!explains(verdict, f.rule), severity_rank(f.severity)));
    out
}

/// The projection of `kind` about `subject` (`gpu 0`, a mount point), if there is one.
pub fn projection_for<'a>(
    projections: &'a [Projection],
    kind: ProjectionKind,
    subject: &str,
) -> Option<&'a Projection> {
    projections
        .iter()
        .filter(|p| p.kind == kind && p.subject == subject && p.seconds.is_finite())
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule: RuleId, severity: Severity) -> Finding {
        Finding {
            rule,
            severity,
            confidence: 1.0,
            subject: None,
            evidence: vec![],
            suggestions: vec![],
        }
    }

    fn rules(list: &[&Finding]) -> Vec<RuleId> {
        list.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn the_verdicts_findings_come_first_then_by_severity() {
        let all = vec![
            finding(RuleId::GpuMemoryPressure, Severity::Warning),
            finding(RuleId::GpuMemoryOrphan, Severity::Warning),
            finding(RuleId::InputBoundDisk, Severity::Warning),
            finding(RuleId::DiskSpaceRisk, Severity::Critical),
            finding(RuleId::DevShm, Severity::Warning),
            finding(RuleId::Headroom, Severity::Ok),
        ];
        assert_eq!(
            rules(&order_findings(&all, Verdict::GpuMemoryPressure)),
            vec![
                RuleId::GpuMemoryPressure,
                RuleId::GpuMemoryOrphan,
                RuleId::DiskSpaceRisk,
                RuleId::InputBoundDisk,
                RuleId::DevShm,
                RuleId::Headroom
            ]
        );
        assert_eq!(
            rules(&order_findings(&all, Verdict::InputBoundDisk))[..2],
            [RuleId::InputBoundDisk, RuleId::DiskSpaceRisk]
        );
        // Within the verdict's own findings, the worse first.
        assert_eq!(
            rules(&order_findings(&all, Verdict::DiskSpaceRisk))[..2],
            [RuleId::DiskSpaceRisk, RuleId::DevShm]
        );
        assert!(order_findings(&[], Verdict::Healthy).is_empty());
    }

    #[test]
    fn every_verdict_has_a_rule_that_explains_it() {
        let all = [
            RuleId::GpuMemoryPressure,
            RuleId::GpuMemoryNotHeldByJob,
            RuleId::GpuMemoryOrphan,
            RuleId::GpuUnavailable,
            RuleId::InputBoundDisk,
            RuleId::InputBoundCpu,
            RuleId::CheckpointStall,
            RuleId::GpuUnderutilized,
            RuleId::DiskSpaceRisk,
            RuleId::DevShm,
            RuleId::HostMemoryPressure,
            RuleId::Headroom,
        ];
        for v in Verdict::ALL {
            assert!(all.iter().any(|r| explains(v, *r)), "{v:?}");
        }
    }

    #[test]
    fn projections_match_their_subject_exactly() {
        let p = |subject: &str, kind, seconds| Projection {
            subject: subject.to_owned(),
            kind,
            seconds,
            slope_per_s: 1.0,
        };
        let list = vec![
            p("gpu 1", ProjectionKind::TimeToFullGpuMemory, 720.0),
            p("gpu 10", ProjectionKind::TimeToFullGpuMemory, 60.0),
            p("/data", ProjectionKind::TimeToFullDisk, 2400.0),
            p("/", ProjectionKind::TimeToFullDisk, f64::INFINITY),
        ];
        let gpu1 = projection_for(&list, ProjectionKind::TimeToFullGpuMemory, "gpu 1");
        assert_eq!(gpu1.map(|p| p.seconds), Some(720.0));
        assert!(projection_for(&list, ProjectionKind::TimeToFullDisk, "gpu 1").is_none());
        let data = projection_for(&list, ProjectionKind::TimeToFullDisk, "/data");
        assert_eq!(data.map(|p| p.seconds), Some(2400.0));
        assert!(projection_for(&list, ProjectionKind::TimeToFullDisk, "/").is_none());
        assert!(projection_for(&list, ProjectionKind::TimeToFullDisk, "/dat").is_none());
    }
}
