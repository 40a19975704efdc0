//! Which projection a card shows: the soonest finite forecast of its kind for its subject. (The
//! findings' order is `shared::diagnosis::words::order_findings`.)

use shared::diagnosis::{Projection, ProjectionKind};

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
