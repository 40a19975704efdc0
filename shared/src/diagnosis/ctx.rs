//! `Ctx`: the window under diagnosis (frames, thresholds, the previous diagnosis for hysteresis)
//! and the helpers every rule uses to build evidence.

use super::evidence::{Comparison, Evidence, Held, Metric, Threshold};
use super::model::{Answer, Diagnosis, RuleId};
use super::stats::{Band, Dir, Tally};
use super::thresholds::Thresholds;
use crate::frame::Frame;

pub(crate) struct Ctx<'a> {
    pub frames: &'a [Frame],
    pub th: &'a Thresholds,
    pub prev: Option<&'a Diagnosis>,
    /// Seconds the window covers; `None` without frames.
    pub window_s: Option<f64>,
    /// `t_ms` of the newest frame (0 only for an empty window, where no rule runs).
    pub now_ms: u64,
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
        let (t0_ms, now_ms, window_s) = match (frames.first(), frames.last()) {
            (Some(a), Some(b)) => (
                a.t_ms,
                b.t_ms,
                Some(b.t_ms.saturating_sub(a.t_ms).saturating_add(b.interval_ms) as f64 / 1000.0),
            ),
            _ => (0, 0, None),
        };
        Ctx {
            frames,
            th,
            prev,
            window_s,
            now_ms,
            t0_ms,
        }
    }

    /// Seconds since the first frame of the window.
    pub fn t_s(&self, f: &Frame) -> f64 {
        f.t_ms.saturating_sub(self.t0_ms) as f64 / 1000.0
    }

    /// When the previous diagnosis' finding of `rule` for `subject` was first reported, if it had
    /// one (hysteresis).
    /// In the host's findings; a MIG instance (`gpu 0 mig 1/0`), which only a job's findings name,
    /// in the jobs'.
    pub fn held_since(&self, rule: RuleId, subject: &str) -> Option<u64> {
        let instance = super::mig::is_instance_subject(subject);
        self.prev.and_then(|p| {
            p.findings
                .iter()
                .chain(p.jobs.iter().filter(|_| instance).flat_map(|j| &j.findings))
                .find(|f| f.rule == rule && f.subject.as_deref() == Some(subject))
                .map(|f| f.since_ms)
        })
    }

    /// `since_ms` for a finding of `rule` on `subject`: carried over while it persists.
    pub fn since(&self, rule: RuleId, subject: &str) -> u64 {
        self.held_since(rule, subject).unwrap_or(self.now_ms)
    }

    /// The band to count against: relaxed by the hysteresis band when the finding was held.
    pub fn band(&self, band: Band, rule: RuleId, subject: &str) -> Band {
        band.relaxed(
            self.held_since(rule, subject).is_some(),
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
    pub fn tally_ev(&self, metric: Metric, subject: &str, t: &Tally) -> Evidence {
        let mut e = self.ev(
            metric,
            Some(subject),
            t.last,
            Some((t.band.comparison(), t.band.warn)),
        );
        e.samples = Some((t.warn, t.of));
        e
    }

    /// `ev` marked as held when the tally still holds only because the previous diagnosis had
    /// the finding of `rule` on its subject (its band was relaxed, see [`Ctx::band`]).
    pub fn hold(&self, mut ev: Evidence, rule: RuleId, t: &Tally) -> Evidence {
        let since = ev.subject.as_deref().and_then(|s| self.held_since(rule, s));
        let Some(since_ms) = since else {
            return ev;
        };
        let d = self.th.hysteresis_pct_points;
        let entered_at = match t.band.dir {
            Dir::AtLeast => t.band.warn + d,
            Dir::Below => t.band.warn - d,
        };
        if self.severity(t).is_some() {
            ev.held = Some(Held {
                since_ms,
                entered_at,
                clears_at: t.band.warn,
            });
        } else if let Some(th) = ev.threshold.as_mut() {
            // The level did not hold even relaxed (the finding stands for another reason, such as
            // a projection): it is compared with its entry level, as a reader expects.
            th.value = entered_at;
        }
        ev
    }

    /// Evidence for a single value, compared with a threshold when `cmp` is given.
    pub fn ev(
        &self,
        metric: Metric,
        subject: Option<&str>,
        value: Option<f64>,
        cmp: Option<(Comparison, f64)>,
    ) -> Evidence {
        let mut e = Evidence::new(metric);
        e.subject = subject.map(str::to_owned);
        e.value = value;
        e.threshold = cmp.map(|(comparison, value)| Threshold { comparison, value });
        e.window_s = self.window_s;
        e
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

/// Formats seconds for suggestion texts, as every other duration is written.
pub(crate) fn duration(s: f64) -> String {
    super::words::duration_text(s)
}
