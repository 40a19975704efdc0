//! `Ctx`: the window under diagnosis (frames, thresholds, the previous diagnosis for hysteresis)
//! and the helpers every rule uses to build evidence.

use super::model::{Answer, Diagnosis, Evidence, RuleId};
use super::stats::{Band, Tally};
use super::thresholds::Thresholds;
use crate::frame::Frame;

pub(crate) struct Ctx<'a> {
    pub frames: &'a [Frame],
    pub th: &'a Thresholds,
    pub prev: Option<&'a Diagnosis>,
    pub window_s: f64,
    t0_ms: u64,
}

/// A node's answer with its evidence.
#[derive(Clone, Debug)]
pub(crate) struct NodeResult {
    pub answer: Answer,
    pub evidence: Vec<Evidence>,
}

impl<'a> Ctx<'a> {
    pub fn new(frames: &'a [Frame], th: &'a Thresholds, prev: Option<&'a Diagnosis>) -> Self {
        let (t0_ms, window_s) = match (frames.first(), frames.last()) {
            (Some(a), Some(b)) => (
                a.t_ms,
                b.t_ms.saturating_sub(a.t_ms).saturating_add(b.interval_ms) as f64 / 1000.0,
            ),
            _ => (0, 0.0),
        };
        Ctx {
            frames,
            th,
            prev,
            window_s,
            t0_ms,
        }
    }

    /// Seconds since the first frame of the window.
    pub fn t_s(&self, f: &Frame) -> f64 {
        f.t_ms.saturating_sub(self.t0_ms) as f64 / 1000.0
    }

    /// Whether the previous diagnosis held a finding of `rule` for `subject` (hysteresis).
    pub fn held_before(&self, rule: RuleId, subject: &str) -> bool {
        self.prev.is_some_and(|p| {
            p.findings
                .iter()
                .any(|f| f.rule == rule && f.subject.as_deref() == Some(subject))
        })
    }

    /// The band to count against: relaxed by the hysteresis band when the finding was held.
    pub fn band(&self, band: Band, rule: RuleId, subject: &str) -> Band {
        band.relaxed(
            self.held_before(rule, subject),
            self.th.hysteresis_pct_points,
        )
    }

    /// Severity of a tally under the window rules (N of M, minimum samples).
    pub fn severity(&self, t: &Tally) -> Option<super::model::Severity> {
        t.severity(self.th.hold_fraction, self.th.min_samples)
    }

    pub fn enough(&self, t: &Tally) -> bool {
        t.enough(self.th.min_samples)
    }

    /// Evidence for a tally: newest value against the warning level, with `(held, of)`.
    pub fn tally_ev(&self, metric: &str, subject: &str, unit: &str, t: &Tally) -> Evidence {
        Evidence {
            metric: metric.to_owned(),
            subject: Some(subject.to_owned()),
            value: t.last,
            unit: unit.to_owned(),
            threshold: Some(t.band.warn),
            comparison: t.band.comparison().to_owned(),
            window_s: self.window_s,
            samples: Some((t.warn, t.of)),
            detail: None,
        }
    }

    /// Evidence for a single value compared with a threshold.
    pub fn ev(
        &self,
        metric: &str,
        subject: Option<&str>,
        value: Option<f64>,
        unit: &str,
        cmp: Option<(&str, f64)>,
    ) -> Evidence {
        Evidence {
            metric: metric.to_owned(),
            subject: subject.map(str::to_owned),
            value,
            unit: unit.to_owned(),
            threshold: cmp.map(|c| c.1),
            comparison: cmp.map_or("", |c| c.0).to_owned(),
            window_s: self.window_s,
            samples: None,
            detail: None,
        }
    }
}

/// Combines per-item answers into a node answer: yes if any item says yes, else unknown if any
/// item is unknown (or there are no items), else no.
pub(crate) fn any_yes(answers: impl IntoIterator<Item = Answer>) -> Answer {
    let mut seen = false;
    let mut unknown = false;
    for a in answers {
        seen = true;
        match a {
            Answer::Yes => return Answer::Yes,
            Answer::Unknown => unknown = true,
            Answer::No => {}
        }
    }
    if unknown || !seen {
        Answer::Unknown
    } else {
        Answer::No
    }
}

/// Formats bytes as GiB with one decimal, for suggestion texts.
pub(crate) fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / (1024.0 * 1024.0 * 1024.0))
}

/// Formats seconds as minutes (or hours past two hours), for suggestion texts.
pub(crate) fn duration(s: f64) -> String {
    if s >= 7200.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} min", s / 60.0)
    }
}
