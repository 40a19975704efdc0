//! The diagnosis stage: keeps a sliding window of this host's frames and runs
//! `shared::diagnosis::diagnose` over it, deciding when the result is worth sending.
//!
//! Fed by the sampler thread right after each tick (diagnosis is pure and takes tens of µs), it
//! hands the hub a new diagnosis when the verdict, severity, path or set of findings changes, and
//! at least every [`RESEND_EVERY`] so evidence figures stay fresh on the page.
//!
//! For a host sampled live every frame joins the window, but the window is diagnosed only every
//! [`DIAGNOSE_EVERY`] of frame time ([`Diagnoser::diagnosing_every`]), as often as an unchanged
//! diagnosis is re-sent anyway: its rules need 60% of the 60 s window to agree before a verdict
//! moves, so diagnosing it again at each 1 Hz frame (or 10 Hz at `--interval 100ms`) would find
//! the same answer a little sooner at four (or forty) times the cost. What cannot wait is
//! diagnosed at once: a frame whose sources answer differently from the frame before (NVML gone
//! or back, a GPU lost, failing or gone, a memory reading missing, a mount or disk gone, an error
//! more or fewer; [`same_sources`]), and a frame that comes no sooner than the period after the
//! last one. A replay diagnoses every frame, as its verdict timeline does, so a jump lands on the
//! diagnosis that playing through gives.

use shared::Frame;
use shared::diagnosis::{
    Answer, Diagnosis, NodeId, RuleId, Severity, Thresholds, Verdict, diagnose,
};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The window the live diagnosis looks at (docs/diagnosis.md#when-it-runs: "the last 60 s").
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(60);
/// A diagnosis is re-sent at least this often even when nothing changed.
pub const RESEND_EVERY: Duration = Duration::from_secs(5);
/// How often a live host's window is diagnosed, in frame time (about: a frame within half an
/// interval of it counts, so 1 Hz frames are diagnosed every fourth one, not every fifth by
/// jitter). Within [`RESEND_EVERY`], so each diagnosis made is sent.
pub const DIAGNOSE_EVERY: Duration = Duration::from_secs(4);

/// Whether `a` and `b` had the same sources answer for the same devices: the same NVML status,
/// the same GPUs in the same states with a memory reading or without, as many mounts, disks and
/// errors. Compares no figures, so every frame of a steady host passes; a change here can move a
/// verdict at once (`no_data`, a lost GPU, a mount gone), so it is diagnosed without waiting.
fn same_sources(a: &Frame, b: &Frame) -> bool {
    std::mem::discriminant(&a.nvml) == std::mem::discriminant(&b.nvml)
        && a.gpus.len() == b.gpus.len()
        && a.gpus.iter().zip(&b.gpus).all(|(x, y)| {
            x.index == y.index && x.state == y.state && x.memory.is_some() == y.memory.is_some()
        })
        && a.mounts.len() == b.mounts.len()
        && a.block_devices.len() == b.block_devices.len()
        && a.errors.len() == b.errors.len()
}

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
    /// Where each published frame and verdict is kept (docs/history.md), when it is.
    history: Option<crate::history::Sink>,
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
            history: None,
        }
    }

    /// Hands each frame published and each verdict to `sink` (a sampled host's history).
    pub fn with_history(self, sink: Option<crate::history::Sink>) -> Self {
        Diagnoser {
            history: sink,
            ..self
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
            })
            || self
                .window
                .back()
                .is_some_and(|last| !same_sources(last, &frame));
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
    pub fn publish_to(&mut self, hub: &crate::host_feed::HostFeed, mut frame: Frame) {
        let prepared = match hub.prepare(&mut frame) {
            Ok(prepared) => prepared,
            Err(e) => return tracing::error!(error = %e, "cannot encode frame"),
        };
        let seq = prepared.seq();
        if let Some(h) = &mut self.history {
            h.frame(&frame);
        }
        let diagnosis = self.observe(frame).map(|d| hub.encode_diagnosis(seq, d));
        prepared.commit();
        if let (Some(h), Some(d)) = (&mut self.history, &self.prev) {
            h.diagnosis(d);
        }
        match diagnosis {
            Some(Ok(entry)) => hub.store_diagnosis(entry),
            Some(Err(e)) => tracing::error!(error = %e, "cannot encode diagnosis"),
            None => {}
        }
    }

    /// One frame into the history only (an import): its figures, and the verdict as the live
    /// diagnosis would have had it.
    pub fn record(&mut self, frame: Frame) {
        if let Some(h) = &mut self.history {
            h.frame(&frame);
        }
        self.observe(frame);
        if let (Some(h), Some(d)) = (&mut self.history, &self.prev) {
            h.diagnosis(d);
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
#[path = "diagnoser_tests.rs"]
mod tests;
