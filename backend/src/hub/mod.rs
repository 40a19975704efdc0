//! The hub: the one place frames go after the sampler and before any viewer; its [`diagnoser`]
//! turns the recent window into the verdict it hands out beside them.
//!
//! It assigns each frame its `seq`, encodes it to JSON exactly once, keeps the latest frame and a
//! bounded history ring (backfill and gap-free resume), and fans frames out through a
//! `tokio::sync::broadcast` channel. [`Hub::publish`] never waits for a viewer: a slow session lags
//! behind in the channel and is told so (`lagged`), while memory stays bounded by the channel and
//! ring capacities.

pub mod diagnoser;

use axum::extract::ws::Utf8Bytes;
use shared::diagnosis::Diagnosis;
use shared::window::Ring;
use shared::{Frame, HostState};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};

/// How much history the hub keeps: 15 minutes of frames at the configured interval, so a page
/// opened (or reconnecting) has full charts at once.
pub const HISTORY_SPAN: Duration = Duration::from_secs(15 * 60);
/// History is never shorter than this many frames, nor longer than `MAX_HISTORY_FRAMES` (which
/// caps memory at a 100 ms interval: 9,000 frames of a few KiB).
pub const MIN_HISTORY_FRAMES: usize = 900;
pub const MAX_HISTORY_FRAMES: usize = 9_000;
/// Frames a session may fall behind before it gets `lagged`. 64 s at 1 Hz: long enough to ride
/// out a browser tab that is briefly busy, short enough to bound what a stuck client pins.
pub const CHANNEL_CAPACITY: usize = 64;
/// A host is `stale` after this many intervals without a frame.
const STALE_AFTER_INTERVALS: u32 = 3;

const FRAME_MSG_PREFIX: &str = r#"{"type":"frame","frame":"#;

/// One published frame: its sequence number, time, and the `frame` message encoded once.
#[derive(Debug)]
pub struct Entry {
    pub seq: u64,
    pub t_ms: u64,
    message: Utf8Bytes,
}

impl Entry {
    /// The whole `{"type":"frame","frame":{...}}` message, cheap to clone for every session.
    pub fn message(&self) -> Utf8Bytes {
        self.message.clone()
    }
    /// Just the frame's JSON object (for `/api/snapshot` and backfill).
    pub fn frame_json(&self) -> &str {
        let s = self.message.as_str();
        &s[FRAME_MSG_PREFIX.len()..s.len() - 1]
    }
}

const DIAGNOSIS_MSG_PREFIX: &str = r#"{"type":"diagnosis","host":"#;

/// The latest diagnosis, encoded once as a `diagnosis` message.
#[derive(Debug)]
pub struct DiagnosisEntry {
    /// Seq of the newest frame the diagnosis saw.
    pub seq: u64,
    message: Utf8Bytes,
    /// Byte range of the diagnosis object inside `message`.
    body: std::ops::Range<usize>,
}

impl DiagnosisEntry {
    pub fn message(&self) -> Utf8Bytes {
        self.message.clone()
    }
    /// Just the diagnosis' JSON object.
    pub fn diagnosis_json(&self) -> &str {
        &self.message.as_str()[self.body.clone()]
    }
}

/// Sizes of the hub's buffers.
#[derive(Clone, Copy, Debug)]
pub struct HubConfig {
    pub history_frames: usize,
    pub channel_capacity: usize,
    /// Sequence number of the first frame. The server starts it at its start time in
    /// milliseconds, so `seq` keeps increasing across restarts of the same host and a browser
    /// that resumes with an old `since_seq` after a restart still gets every new frame.
    pub first_seq: u64,
}

impl HubConfig {
    /// The defaults for a sampling interval: 15 minutes of history (within the caps above).
    pub fn for_interval(interval: Duration) -> Self {
        let per_span = HISTORY_SPAN.as_millis() / interval.as_millis().max(1);
        HubConfig {
            history_frames: usize::try_from(per_span)
                .unwrap_or(MAX_HISTORY_FRAMES)
                .clamp(MIN_HISTORY_FRAMES, MAX_HISTORY_FRAMES),
            channel_capacity: CHANNEL_CAPACITY,
            first_seq: 1,
        }
    }

    /// Starts `seq` at `first_seq` instead of 1.
    pub fn starting_at(self, first_seq: u64) -> Self {
        HubConfig {
            first_seq: first_seq.max(1),
            ..self
        }
    }
}

/// Cheap-to-clone handle to one host's frame stream.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    host: String,
    interval: Duration,
    tx: broadcast::Sender<Arc<Entry>>,
    diagnosis: watch::Sender<Option<Arc<DiagnosisEntry>>>,
    state: Mutex<State>,
}

struct State {
    ring: Ring<Arc<Entry>>,
    next_seq: u64,
    last_publish: Option<Instant>,
}

impl Hub {
    pub fn new(host: impl Into<String>, interval: Duration, config: HubConfig) -> Self {
        let (tx, _) = broadcast::channel(config.channel_capacity.max(1));
        let (diagnosis, _) = watch::channel(None);
        Hub {
            inner: Arc::new(Inner {
                host: host.into(),
                interval,
                tx,
                diagnosis,
                state: Mutex::new(State {
                    ring: Ring::new(config.history_frames),
                    next_seq: config.first_seq.max(1),
                    last_publish: None,
                }),
            }),
        }
    }

    pub fn host(&self) -> &str {
        &self.inner.host
    }
    pub fn interval(&self) -> Duration {
        self.inner.interval
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave `State` half-updated in a way that matters
        // (each field is replaced whole), so a poisoned lock is still usable.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Stamps `frame` with the next sequence number, encodes it once, stores and broadcasts it.
    /// Returns the sequence number. Never waits for any viewer.
    pub fn publish(&self, mut frame: Frame) -> Result<u64, serde_json::Error> {
        let mut state = self.state();
        let seq = state.next_seq;
        frame.seq = seq;
        let mut message = String::with_capacity(4096);
        message.push_str(FRAME_MSG_PREFIX);
        message.push_str(&serde_json::to_string(&frame)?);
        message.push('}');
        let entry = Arc::new(Entry {
            seq,
            t_ms: frame.t_ms,
            message: Utf8Bytes::from(message),
        });
        state.next_seq += 1;
        state.ring.push(entry.clone());
        state.last_publish = Some(Instant::now());
        // Err only means nobody is subscribed right now, which is fine.
        let _ = self.inner.tx.send(entry);
        Ok(seq)
    }

    /// Encodes `diagnosis` once and hands it to every session (they send the latest; a slow
    /// session skips straight to the newest one). `seq` is the newest frame it covers.
    pub fn publish_diagnosis(
        &self,
        seq: u64,
        diagnosis: &Diagnosis,
    ) -> Result<(), serde_json::Error> {
        let mut message = String::with_capacity(2048);
        message.push_str(DIAGNOSIS_MSG_PREFIX);
        message.push_str(&serde_json::to_string(self.host())?);
        message.push_str(r#","diagnosis":"#);
        let start = message.len();
        message.push_str(&serde_json::to_string(diagnosis)?);
        let end = message.len();
        message.push('}');
        let entry = Arc::new(DiagnosisEntry {
            seq,
            message: Utf8Bytes::from(message),
            body: start..end,
        });
        self.inner.diagnosis.send_replace(Some(entry));
        Ok(())
    }

    /// The latest diagnosis, if one was published.
    pub fn latest_diagnosis(&self) -> Option<Arc<DiagnosisEntry>> {
        self.inner.diagnosis.borrow().clone()
    }

    /// Notified on every new diagnosis.
    pub fn watch_diagnosis(&self) -> watch::Receiver<Option<Arc<DiagnosisEntry>>> {
        self.inner.diagnosis.subscribe()
    }

    /// The most recent frame.
    pub fn latest(&self) -> Option<Arc<Entry>> {
        self.state().ring.last().cloned()
    }

    /// Subscribes to live frames. Taken under the same lock as `publish`, so combined with
    /// [`Hub::history_after`] a session sees every frame exactly once.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Entry>> {
        let _state = self.state();
        self.inner.tx.subscribe()
    }

    /// Held frames with `seq > since` (all of them when `since` is `None`), oldest first.
    pub fn history_after(&self, since: Option<u64>) -> Vec<Arc<Entry>> {
        let state = self.state();
        let since = since.unwrap_or(0);
        state.ring.after(|e| e.seq <= since).cloned().collect()
    }

    /// Number of frames in the history ring.
    pub fn history_len(&self) -> usize {
        self.state().ring.len()
    }

    /// How long without a frame makes the host `stale`.
    pub fn stale_after(&self) -> Duration {
        self.inner.interval * STALE_AFTER_INTERVALS
    }

    /// `up` while frames arrive, `stale` after a few intervals without one, `down` before any.
    pub fn host_state(&self) -> (HostState, Option<Duration>) {
        let state = self.state();
        match state.last_publish {
            None => (HostState::Down, None),
            Some(at) => {
                let age = at.elapsed();
                if age > self.stale_after() {
                    (HostState::Stale, Some(age))
                } else {
                    (HostState::Up, Some(age))
                }
            }
        }
    }

    /// Viewers currently subscribed.
    pub fn receiver_count(&self) -> usize {
        self.inner.tx.receiver_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub(history: usize, channel: usize) -> Hub {
        Hub::new(
            "h",
            Duration::from_secs(1),
            HubConfig {
                history_frames: history,
                channel_capacity: channel,
                first_seq: 1,
            },
        )
    }

    fn frame(t: u64) -> Frame {
        Frame::empty("h", 0, t, 1000)
    }

    #[test]
    fn assigns_increasing_seq_and_encodes_once() {
        let h = hub(10, 4);
        let a = h.publish(frame(5)).expect("encodes");
        let b = h.publish(frame(6)).expect("encodes");
        assert_eq!((a, b), (1, 2));
        let latest = h.latest().expect("has a frame");
        let parsed: Frame = serde_json::from_str(latest.frame_json()).expect("frame json");
        assert_eq!(parsed.seq, 2);
        assert_eq!(parsed.t_ms, 6);
        let msg: shared::ServerMsg =
            serde_json::from_str(latest.message().as_str()).expect("message json");
        assert!(matches!(msg, shared::ServerMsg::Frame { frame } if frame.seq == 2));
    }

    #[test]
    fn history_is_bounded_and_resumable() {
        let h = hub(5, 4);
        for t in 0..12 {
            h.publish(frame(t)).expect("encodes");
        }
        assert_eq!(h.history_len(), 5);
        let seqs: Vec<u64> = h.history_after(Some(9)).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![10, 11, 12]);
        let all: Vec<u64> = h.history_after(None).iter().map(|e| e.seq).collect();
        assert_eq!(all, vec![8, 9, 10, 11, 12]);
    }

    #[test]
    fn slow_receiver_lags_without_blocking_publish() {
        let h = hub(100, 4);
        let mut rx = h.subscribe();
        for t in 0..10 {
            h.publish(frame(t)).expect("encodes");
        }
        match rx.try_recv() {
            Err(broadcast::error::TryRecvError::Lagged(n)) => assert_eq!(n, 6),
            other => panic!("expected lag, got {other:?}"),
        }
        assert_eq!(rx.try_recv().expect("next after lag").seq, 7);
    }

    #[test]
    fn host_state_follows_publishing() {
        let h = Hub::new(
            "h",
            Duration::from_millis(10),
            HubConfig::for_interval(Duration::from_millis(10)),
        );
        assert_eq!(h.host_state().0, HostState::Down);
        h.publish(frame(1)).expect("encodes");
        assert_eq!(h.host_state().0, HostState::Up);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(h.host_state().0, HostState::Stale);
    }

    #[test]
    fn seq_can_start_later_so_restarts_keep_it_increasing() {
        let cfg = HubConfig::for_interval(Duration::from_secs(1)).starting_at(1_700_000_000_000);
        let h = Hub::new("h", Duration::from_secs(1), cfg);
        assert_eq!(h.publish(frame(1)).expect("encodes"), 1_700_000_000_000);
        assert_eq!(h.publish(frame(2)).expect("encodes"), 1_700_000_000_001);
    }

    #[test]
    fn diagnosis_is_encoded_once_and_watched() {
        let h = hub(10, 4);
        let mut rx = h.watch_diagnosis();
        assert!(h.latest_diagnosis().is_none());
        let d = shared::diagnosis::diagnose(&[], &Default::default(), None);
        h.publish_diagnosis(7, &d).expect("encodes");
        assert!(rx.has_changed().expect("sender alive"));
        let entry = rx.borrow_and_update().clone().expect("a diagnosis");
        assert_eq!(entry.seq, 7);
        let back: shared::diagnosis::Diagnosis =
            serde_json::from_str(entry.diagnosis_json()).expect("diagnosis json");
        assert_eq!(back, d);
        let msg: shared::ServerMsg =
            serde_json::from_str(entry.message().as_str()).expect("message json");
        assert!(matches!(msg, shared::ServerMsg::Diagnosis { host, .. } if host == "h"));
    }

    #[test]
    fn history_sizing_follows_interval() {
        assert_eq!(
            HubConfig::for_interval(Duration::from_secs(1)).history_frames,
            900
        );
        assert_eq!(
            HubConfig::for_interval(Duration::from_millis(100)).history_frames,
            9000
        );
        assert_eq!(
            HubConfig::for_interval(Duration::from_secs(5)).history_frames,
            900
        );
    }
}
