//! Plain per-host state behind the store: the latest frame, a bounded history of chart samples, and
//! the rule that decides whether an incoming frame is new, a duplicate or from a restarted server.
//!
//! No signals here; `store.rs` wraps [`Hosts`] in one and is its only writer. Tested natively.

use shared::window::Ring;
use shared::{Frame, HostState, HostSummary};
use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;

/// How far back the charts reach (docs/architecture.md#1-who-uses-it-and-for-what: "live", the last 15 minutes).
pub const CHART_WINDOW_MS: u64 = 15 * 60 * 1000;

/// Upper bound on samples kept per host, so a 100 ms interval cannot grow memory past 3600 samples
/// (it then covers 6 minutes instead of 15).
pub const MAX_HISTORY: usize = 3600;

/// Samples needed to cover [`CHART_WINDOW_MS`] at `interval_ms`, capped at [`MAX_HISTORY`].
pub fn history_capacity(interval_ms: u64) -> usize {
    let samples = CHART_WINDOW_MS.div_ceil(interval_ms.max(1));
    usize::try_from(samples).map_or(MAX_HISTORY, |n| n.clamp(1, MAX_HISTORY))
}

/// A shared frame that compares by identity: memos holding it notice a new frame without
/// comparing every field of the old one.
#[derive(Clone, Debug)]
pub struct FrameRef(pub Arc<Frame>);

impl PartialEq for FrameRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for FrameRef {
    type Target = Frame;
    fn deref(&self) -> &Frame {
        &self.0
    }
}

/// A host's latest summary (a hub's overview), compared by identity like [`FrameRef`]: the store
/// replaces it only when a new one differs.
#[derive(Clone, Debug)]
pub struct SummaryRef(pub Arc<HostSummary>);

impl PartialEq for SummaryRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for SummaryRef {
    type Target = HostSummary;
    fn deref(&self) -> &HostSummary {
        &self.0
    }
}

/// The few numbers of one frame the charts draw, so 15 minutes of history stay small.
pub use shared::history::{DiskSample, GpuSample, Sample};

/// What happened to a frame handed to [`HostData::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    New,
    /// Already held (a backfill overlapping what we have): ignored.
    Duplicate,
    /// A lower seq with a later time: the host's vramio restarted and counts from the start again.
    /// History was cleared and the frame kept.
    Restarted,
}

/// Liveness of a host as the last `host_status` said.
#[derive(Clone, Debug, PartialEq)]
pub struct HostStatus {
    pub state: HostState,
    pub last_seen_ms: Option<u64>,
    pub error: Option<String>,
}

/// Everything the page holds for one host.
#[derive(Clone, Debug)]
pub struct HostData {
    latest: Option<FrameRef>,
    history: Ring<Sample>,
    /// Browser clock (ms since the epoch) when `latest` arrived; ages use it, not the host's clock.
    received_at_ms: Option<f64>,
    status: Option<HostStatus>,
    /// After a `reset`: the new history being gathered, and how many of its frames are still to
    /// come. It replaces what is shown once they are all in, so the page never shows an empty or
    /// half-filled host in between.
    next: Option<(Box<HostData>, u64)>,
}

impl HostData {
    pub fn new(interval_ms: u64) -> Self {
        HostData {
            latest: None,
            history: Ring::new(history_capacity(interval_ms)),
            received_at_ms: None,
            status: None,
            next: None,
        }
    }

    /// The server replaced this host's history: the next `frames` frames (at least one) are the
    /// new one.
    pub fn reset(&mut self, frames: u64) {
        let interval = self.latest.as_ref().map_or(1000, |f| f.interval_ms);
        self.next = Some((Box::new(HostData::new(interval)), frames.max(1)));
    }

    /// Takes a chart sample of a new history (a `history` message after `reset`). Samples
    /// come only there; one that comes otherwise is ignored.
    pub fn push_sample(&mut self, sample: Sample) -> Accepted {
        let Some((next, left)) = &mut self.next else {
            return Accepted::Duplicate;
        };
        next.history.push(sample);
        *left = left.saturating_sub(1);
        if *left > 0 {
            return Accepted::Duplicate;
        }
        self.settle();
        Accepted::Restarted
    }

    /// Shows the new history gathered so far, however much of it came (a live frame came first).
    pub fn settle(&mut self) {
        if let Some((next, _)) = self.next.take() {
            self.swap_in(*next);
        }
    }

    /// [`HostData::settle`] where a new history was gathering; whether one was.
    pub fn settle_pending(&mut self) -> bool {
        let pending = self.next.as_ref().is_some_and(|(n, _)| n.latest.is_some());
        self.settle();
        pending
    }

    fn swap_in(&mut self, next: HostData) {
        let status = self.status.take();
        *self = next;
        self.status = status;
    }

    pub fn latest(&self) -> Option<&FrameRef> {
        self.latest.as_ref()
    }
    pub fn last_seq(&self) -> Option<u64> {
        self.latest.as_ref().map(|f| f.seq)
    }
    pub fn history(&self) -> &Ring<Sample> {
        &self.history
    }
    pub fn received_at_ms(&self) -> Option<f64> {
        self.received_at_ms
    }
    pub fn status(&self) -> Option<&HostStatus> {
        self.status.as_ref()
    }
    pub fn set_status(&mut self, status: HostStatus) {
        self.status = Some(status);
    }

    /// Takes `frame` unless its seq was already seen. `now_ms` is the browser's clock.
    pub fn push(&mut self, frame: Frame, now_ms: f64) -> Accepted {
        if let Some((next, left)) = &mut self.next {
            next.push(frame, now_ms);
            *left = left.saturating_sub(1);
            if *left > 0 {
                return Accepted::Duplicate;
            }
            self.settle();
            return Accepted::Restarted;
        }
        let mut outcome = Accepted::New;
        if let Some(last) = &self.latest
            && frame.seq <= last.seq
        {
            // Overlapping backfill frames are older than what we hold; a restarted server sends
            // low seqs with newer times.
            if frame.t_ms <= last.t_ms {
                return Accepted::Duplicate;
            }
            self.history.clear();
            outcome = Accepted::Restarted;
        }
        let capacity = history_capacity(frame.interval_ms);
        if capacity != self.history.capacity() {
            let mut resized = Ring::new(capacity);
            for s in self.history.iter() {
                resized.push(s.clone());
            }
            self.history = resized;
        }
        self.history.push(Sample::of(&frame));
        self.latest = Some(FrameRef(Arc::new(frame)));
        self.received_at_ms = Some(now_ms);
        outcome
    }
}

/// All hosts the page knows, by name.
#[derive(Clone, Debug, Default)]
pub struct Hosts {
    hosts: BTreeMap<String, HostData>,
}

impl Hosts {
    /// Makes `host` known (from `hello`) before its first frame arrives.
    pub fn ensure(&mut self, host: &str, interval_ms: u64) -> &mut HostData {
        self.hosts
            .entry(host.to_owned())
            .or_insert_with(|| HostData::new(interval_ms))
    }

    /// Takes `frame` for `host`, the name the server knows the host by (never `frame.host`, the
    /// hostname the machine reports: two hosts may report the same one).
    pub fn push(&mut self, host: &str, frame: Frame, now_ms: f64) -> Accepted {
        let interval_ms = frame.interval_ms;
        self.ensure(host, interval_ms).push(frame, now_ms)
    }

    pub fn get(&self, host: &str) -> Option<&HostData> {
        self.hosts.get(host)
    }
    pub fn get_mut(&mut self, host: &str) -> Option<&mut HostData> {
        self.hosts.get_mut(host)
    }

    pub fn names(&self) -> Vec<String> {
        self.hosts.keys().cloned().collect()
    }

    /// The seq to resume from after a reconnect: the smallest last seq over hosts that have frames,
    /// so no host misses one (the overlap for the others is dropped as duplicates).
    pub fn resume_seq(&self) -> Option<u64> {
        self.hosts.values().filter_map(HostData::last_seq).min()
    }

    /// Per host that has frames, the newest seq held (a hub's `subscribe.since`).
    pub fn held_seqs(&self) -> BTreeMap<String, u64> {
        self.hosts
            .iter()
            .filter_map(|(name, d)| d.last_seq().map(|s| (name.clone(), s)))
            .collect()
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
