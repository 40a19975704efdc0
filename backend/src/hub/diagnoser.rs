//! The diagnosis stage: keeps a sliding window of this host's frames and runs
//! `shared::diagnosis::diagnose` over it, deciding when the result is worth sending.
//!
//! Fed by the sampler thread right after each tick (diagnosis is pure and takes tens of µs), it
//! hands the hub a new diagnosis when the verdict, severity, path or set of findings changes, and
//! at least every [`RESEND_EVERY`] so evidence figures stay fresh on the page.
//!
//! For a host sampled live every frame joins the window, but the window is diagnosed only every
//! [`DIAGNOSE_EVERY`] of frame time ([`Diagnoser::diagnosing_every`]): its rules need several
//! samples of the 60 s window to agree before a verdict moves, so diagnosing it again at each 1 Hz
//! frame (or 10 Hz at `--interval 100ms`) would find the same answer a little sooner at twice (or
//! twenty times) the cost. A frame that comes no sooner than that after the last one is diagnosed
//! at once. A replay diagnoses every frame, as its verdict timeline does, so a jump lands on the
//! diagnosis that playing through gives.

use shared::Frame;
use shared::diagnosis::{
    Answer, Diagnosis, NodeId, RuleId, Severity, Thresholds, Verdict, diagnose,
};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The window the live diagnosis looks at (DESIGN section 6: "the last 60 s").
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(60);
/// A diagnosis is re-sent at least this often even when nothing changed.
pub const RESEND_EVERY: Duration = Duration::from_secs(5);
/// How often a live host's window is diagnosed, in frame time (about: a frame within half an
/// interval of it counts, so 1 Hz frames are diagnosed every second one, not every third by
/// jitter).
pub const DIAGNOSE_EVERY: Duration = Duration::from_secs(2);

/// What identifies a diagnosis for "did it change": everything but the evidence figures (values,
/// confidence, window, projections), which move every tick.
#[derive(Debug, PartialEq, Eq)]
struct Signature {
    verdict: Verdict,
    severity: Severity,
    path: Vec<(NodeId, Answer)>,
    findings: Vec<(RuleId, Option<String>, Severity)>,
    /// Why there is no data: a cause that changes (no driver, then a GPU lost) is news.
    no_data: Option<std::mem::Discriminant<shared::diagnosis::NoDataCause>>,
}

fn signature(d: &Diagnosis) -> Signature {
    Signature {
        verdict: d.verdict,
        severity: d.severity,
        path: d.path.iter().map(|n| (n.node, n.answer)).collect(),
        no_data: d.no_data.as_ref().map(std::mem::discriminant),
        findings: d
            .findings
            .iter()
            .map(|f| (f.rule, f.subject.clone(), f.severity))
            .collect(),
    }
}

pub struct Diagnoser {
    window: VecDeque<Frame>,
    span_ms: u64,
    thresholds: Thresholds,
    prev: Option<Diagnosis>,
    sent: Option<(Signature, Instant)>,
    /// `t_ms` of the newest frame of the last diagnosis.
    diagnosed_at: Option<u64>,
    /// Frame time between diagnoses (0: every frame).
    every_ms: u64,
}

impl Diagnoser {
    pub fn new(thresholds: Thresholds, window: Duration) -> Self {
        Diagnoser {
            window: VecDeque::new(),
            span_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX),
            thresholds,
            prev: None,
            sent: None,
            diagnosed_at: None,
            every_ms: 0,
        }
    }

    /// Diagnoses the window only every `every` of frame time instead of at every frame (a host
    /// sampled live: see the module docs).
    pub fn diagnosing_every(self, every: Duration) -> Self {
        Diagnoser {
            every_ms: u64::try_from(every.as_millis()).unwrap_or(u64::MAX),
            ..self
        }
    }

    /// Adds `frame` to the window, diagnoses the window when its period has passed (at every
    /// frame without one, see [`Diagnoser::diagnosing_every`]), and returns the diagnosis when it
    /// should be sent (changed, or not sent for [`RESEND_EVERY`]).
    pub fn observe(&mut self, frame: Frame) -> Option<&Diagnosis> {
        self.observe_or_force(frame, false)
    }

    fn observe_or_force(&mut self, frame: Frame, force: bool) -> Option<&Diagnosis> {
        let newest = frame.t_ms;
        // The wall clock stepped back (NTP, a bad RTC): the old frames no longer line up in time.
        if self.window.back().is_some_and(|last| newest < last.t_ms) {
            self.window.clear();
            self.diagnosed_at = None;
        }
        let due = force
            || self.diagnosed_at.is_none_or(|at| {
                newest.saturating_sub(at) >= self.every_ms.saturating_sub(frame.interval_ms / 2)
            });
        // Bound by count too, whatever the timestamps say.
        let cap = usize::try_from(self.span_ms / frame.interval_ms.max(1))
            .unwrap_or(usize::MAX)
            .saturating_add(2);
        self.window.push_back(frame);
        while self.window.len() > cap {
            self.window.pop_front();
        }
        while self
            .window
            .front()
            .is_some_and(|f| newest.saturating_sub(f.t_ms) > self.span_ms)
        {
            self.window.pop_front();
        }
        if !due {
            return None;
        }
        self.diagnosed_at = Some(newest);
        let frames = self.window.make_contiguous();
        let d = diagnose(frames, &self.thresholds, self.prev.as_ref());
        let sig = signature(&d);
        // The next diagnosis comes a period later: re-send now if waiting for it would leave the
        // page more than RESEND_EVERY without one.
        let resend_after = RESEND_EVERY.saturating_sub(Duration::from_millis(self.every_ms));
        let due = match &self.sent {
            None => true,
            Some((last, at)) => *last != sig || at.elapsed() >= resend_after,
        };
        self.prev = Some(d);
        if due {
            self.sent = Some((sig, Instant::now()));
            self.prev.as_ref()
        } else {
            None
        }
    }

    /// Publishes `frame` to `hub`, diagnoses it, and hands the hub the diagnosis when it is due:
    /// one tick of a host sampled here or played from a recording. The frame is stamped and
    /// encoded, then diagnosed and the diagnosis encoded, and only then are both stored, one
    /// right after the other: a session woken for the frame finds the diagnosis too and sends
    /// both in one write (one wake-up and one `sendto`, not two).
    pub fn publish_to(&mut self, hub: &crate::hub::Hub, mut frame: Frame) {
        let prepared = match hub.prepare(&mut frame) {
            Ok(prepared) => prepared,
            Err(e) => return tracing::error!(error = %e, "cannot encode frame"),
        };
        let seq = prepared.seq();
        let diagnosis = self.observe(frame).map(|d| hub.encode_diagnosis(seq, d));
        prepared.commit();
        match diagnosis {
            Some(Ok(entry)) => hub.store_diagnosis(entry),
            Some(Err(e)) => tracing::error!(error = %e, "cannot encode diagnosis"),
            None => {}
        }
    }

    /// Forgets the window and the diagnosis before, then diagnoses `frames` (oldest first) one by
    /// one, as if they had just played: a replay that jumps. The first ones rebuild the window
    /// and the hysteresis; the diagnosis at the last one is returned and counts as sent.
    pub fn restart(&mut self, frames: &[Frame]) -> Option<&Diagnosis> {
        self.window.clear();
        self.prev = None;
        self.sent = None;
        self.diagnosed_at = None;
        if let Some((last, before)) = frames.split_last() {
            for f in before {
                self.observe(f.clone());
            }
            self.observe_or_force(last.clone(), true);
        }
        if let Some(d) = &self.prev {
            self.sent = Some((signature(d), Instant::now()));
        }
        self.prev.as_ref()
    }

    /// Takes up a replay at a moment whose diagnosis is known (worked out from the verdict
    /// timeline's checkpoints): `window` is the frames up to it, `diagnosis` its diagnosis, which
    /// counts as sent and carries the hysteresis on.
    pub fn resume(&mut self, window: &[Frame], diagnosis: Diagnosis) -> &Diagnosis {
        self.window.clear();
        self.window.extend(window.iter().cloned());
        self.diagnosed_at = diagnosis.t_ms;
        self.sent = Some((signature(&diagnosis), Instant::now()));
        self.prev.insert(diagnosis)
    }

    /// The window's span in milliseconds.
    pub fn span_ms(&self) -> u64 {
        self.span_ms
    }

    /// Frames currently in the window.
    pub fn window_len(&self) -> usize {
        self.window.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(t_ms: u64) -> Frame {
        Frame::empty("h", t_ms / 1000, t_ms, 1000)
    }

    #[test]
    fn window_is_bounded_by_time() {
        let mut d = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
        for s in 0..30 {
            d.observe(frame(s * 1000));
        }
        assert_eq!(d.window_len(), 11);
    }

    #[test]
    fn a_clock_step_back_starts_the_window_over() {
        let mut d = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
        for s in 0..5 {
            d.observe(frame(100_000 + s * 1000));
        }
        d.observe(frame(50_000));
        assert_eq!(d.window_len(), 1);
        // Frames an hour apart in the past of the newest would not all fit: the count bounds it.
        let mut d = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
        for _ in 0..100 {
            d.observe(frame(100_000));
        }
        assert_eq!(d.window_len(), 12);
    }

    #[test]
    fn the_signature_ignores_figures_and_sees_every_decision() {
        let base =
            shared::diagnosis::diagnose(&[frame(0), frame(1000)], &Thresholds::default(), None);
        let mut figures = base.clone();
        figures.window_s = figures.window_s.map(|w| w + 1.0);
        figures.t_ms = figures.t_ms.map(|t| t + 1000);
        for n in &mut figures.path {
            for e in &mut n.evidence {
                e.value = e.value.map(|v| v + 1.0);
            }
        }
        assert_eq!(
            signature(&figures),
            signature(&base),
            "figures alone are no change"
        );

        let mut verdict = base.clone();
        verdict.verdict = Verdict::InputBoundDisk;
        assert_ne!(signature(&verdict), signature(&base));
        let mut severity = base.clone();
        severity.severity = Severity::Critical;
        assert_ne!(signature(&severity), signature(&base));
        let mut answer = base.clone();
        if let Some(n) = answer.path.first_mut() {
            n.answer = match n.answer {
                Answer::Yes => Answer::No,
                _ => Answer::Yes,
            };
        }
        assert_ne!(signature(&answer), signature(&base));
    }

    #[test]
    fn a_restart_forgets_the_old_window_and_diagnoses_the_new_one() {
        let mut d = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
        for s in 0..30 {
            d.observe(frame(1_000_000 + s * 1000));
        }
        let at = d
            .restart(&[frame(5000), frame(6000), frame(7000)])
            .map(|x| x.t_ms);
        assert_eq!(at, Some(Some(7000)), "the diagnosis is the last frame's");
        assert_eq!(d.window_len(), 3);
        assert!(d.observe(frame(8000)).is_none(), "it counts as sent");
        assert!(d.restart(&[]).is_none());
    }

    #[test]
    fn sends_on_first_then_only_on_change_or_resend_period() {
        let mut d = Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW);
        assert!(d.observe(frame(0)).is_some(), "the first diagnosis is sent");
        assert!(d.observe(frame(1000)).is_none(), "an unchanged one is not");
        d.sent = d.sent.take().map(|(s, at)| (s, at - RESEND_EVERY));
        assert!(d.observe(frame(2000)).is_some(), "re-sent after the period");
    }

    /// `t_ms` of the newest frame of each diagnosis made while `frames` are observed.
    fn diagnosed(d: &mut Diagnoser, frames: impl IntoIterator<Item = Frame>) -> Vec<u64> {
        let mut at = Vec::new();
        for f in frames {
            d.observe(f);
            if let Some(t) = d.prev.as_ref().and_then(|p| p.t_ms)
                && at.last() != Some(&t)
            {
                at.push(t);
            }
        }
        at
    }

    #[test]
    fn the_window_is_diagnosed_every_two_seconds_of_frame_time() {
        let mut d =
            Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
        let at_1hz = diagnosed(&mut d, (0..9).map(|s| frame(s * 1000)));
        assert_eq!(at_1hz, [0, 2000, 4000, 6000, 8000]);
        assert_eq!(d.window_len(), 9, "every frame joins the window");

        // A jittery 1 Hz still diagnoses every second frame, not every third.
        let mut d =
            Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
        let jitter = diagnosed(&mut d, [0, 1010, 1990, 3005, 3990].map(frame));
        assert_eq!(jitter, [0, 1990, 3990]);

        // At 10 Hz, every twentieth frame.
        let mut d =
            Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
        let fast = (0..41).map(|i| Frame::empty("h", 0, i * 100, 100));
        assert_eq!(diagnosed(&mut d, fast), [0, 2000, 4000]);

        // Frames farther apart than that are each diagnosed, and so is the first one after the
        // clock stepped back.
        let mut d =
            Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
        let slow = [0, 5000, 10_000].map(|t| Frame::empty("h", 0, t, 5000));
        assert_eq!(diagnosed(&mut d, slow), [0, 5000, 10_000]);
        let mut d =
            Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
        assert_eq!(
            diagnosed(&mut d, [50_000, 51_000, 20_000].map(frame)),
            [50_000, 20_000]
        );

        // An unchanged diagnosis is still re-sent within RESEND_EVERY: at the diagnosed frame
        // before it runs out, not the one after.
        let mut d =
            Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
        assert!(d.observe(frame(0)).is_some());
        let back = RESEND_EVERY - DIAGNOSE_EVERY;
        d.sent = d.sent.take().map(|(s, at)| (s, at - back));
        assert!(d.observe(frame(1000)).is_none(), "not diagnosed");
        assert!(d.observe(frame(2000)).is_some(), "re-sent {back:?} after");

        // Without a period (a replay), every frame.
        let mut d = Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW);
        assert_eq!(
            diagnosed(&mut d, (0..3).map(|s| frame(s * 1000))),
            [0, 1000, 2000]
        );
    }
}
