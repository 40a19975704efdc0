//! [`HostFeed`]: one host's stream, the one place its frames go after the sampler (or a peer link,
//! or the replay player) and before any viewer; the [`diagnoser`] turns the recent window into
//! the verdict it hands out beside them, and the [`fleet`] is every host a server shows.
//!
//! It assigns each frame its `seq`, encodes it to JSON exactly once, keeps the latest frame and a
//! bounded history ring (backfill and gap-free resume), and fans frames out through a
//! `tokio::sync::broadcast` channel. [`HostFeed::publish`] never waits for a viewer: a slow session
//! lags behind in the channel and catches up from the ring, while memory stays bounded by the
//! channel and ring capacities.
//!
//! Two locks: publishers take turns on `publishing` (seq order = ring order = broadcast order)
//! and encode while holding only that one; the `state` lock, which every session takes to
//! subscribe or read history, is held just to push the encoded entry and broadcast it.

pub mod diagnoser;
mod encoded;
mod entry;
pub mod fleet;
mod jump;

pub use encoded::Encoded;
use entry::{DIAGNOSIS_MSG_PREFIX, frame_msg_prefix};
pub use entry::{DiagnosisEntry, Entry, hider, hider_key};
pub use jump::{JumpHistory, history_messages as jump_history_messages};

use shared::diagnosis::Diagnosis;
use shared::window::Ring;
use shared::{Frame, HostState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};

/// This process' start, as `hello` names it: 64 random bits in hex, drawn once. A hub that sees
/// another one from a peer knows the peer started over (its seq numbers begin anew).
pub fn server_instance() -> &'static str {
    static INSTANCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    INSTANCE.get_or_init(|| {
        let mut b = [0u8; 8];
        if getrandom::fill(&mut b).is_err() {
            // No randomness: the start time still tells two starts apart.
            b = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                .to_le_bytes();
        }
        crate::access::token::hex(&b)
    })
}

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

/// Sizes of a host feed's buffers.
#[derive(Clone, Copy, Debug)]
pub struct HostFeedConfig {
    pub history_frames: usize,
    pub channel_capacity: usize,
    /// Sequence number of the first frame. The server starts it at its start time in
    /// milliseconds, so `seq` keeps increasing across restarts of the same host and a browser
    /// that resumes with an old `since_seq` after a restart still gets every new frame.
    pub first_seq: u64,
}

impl HostFeedConfig {
    /// The defaults for a sampling interval: 15 minutes of history (within the caps above).
    pub fn for_interval(interval: Duration) -> Self {
        let per_span = HISTORY_SPAN.as_millis() / interval.as_millis().max(1);
        HostFeedConfig {
            history_frames: usize::try_from(per_span)
                .unwrap_or(MAX_HISTORY_FRAMES)
                .clamp(MIN_HISTORY_FRAMES, MAX_HISTORY_FRAMES),
            channel_capacity: CHANNEL_CAPACITY,
            first_seq: 1,
        }
    }

    /// Starts `seq` at `first_seq` instead of 1.
    pub fn starting_at(self, first_seq: u64) -> Self {
        HostFeedConfig {
            first_seq: first_seq.max(1),
            ..self
        }
    }
}

/// Cheap-to-clone handle to one host's frame stream.
#[derive(Clone)]
pub struct HostFeed {
    inner: Arc<Inner>,
}

struct Inner {
    host: String,
    /// The start of every `frame` message of this host.
    frame_prefix: String,
    interval: Duration,
    tx: broadcast::Sender<Arc<Entry>>,
    diagnosis: watch::Sender<Option<Arc<DiagnosisEntry>>>,
    /// Counts [`HostFeed::replace_history`] calls.
    resets: watch::Sender<u64>,
    /// Publishers' turn: held from reading `next_seq` until the entry is broadcast. It holds the
    /// buffer frames are encoded in, kept between frames.
    publishing: Mutex<Vec<u8>>,
    /// The seq the next frame gets. Written only with both `publishing` and `state` held, so a
    /// publisher (holding `publishing`) and a subscriber (holding `state`) each read a settled
    /// value; the locks give the ordering, the atomic only lets either read it.
    next_seq: AtomicU64,
    state: Mutex<State>,
    /// The newest frame decoded by [`HostFeed::latest_frame`], with its seq.
    decoded: Mutex<Option<(u64, Arc<Frame>)>>,
    /// For a peer's host: the line its link opens for the hub's questions about the peer's
    /// stored history (docs/hub.md#history).
    questions: crate::peers::query::Line,
}

struct State {
    ring: Ring<Arc<Entry>>,
    last_publish: Option<Instant>,
    /// For a peer's host: how the link to it stands (`None` for a host sampled here).
    link: Option<(HostState, Option<String>)>,
    /// Seq of the first frame after the latest history replacement (0: never replaced).
    floor: u64,
    /// A paused replay: not stale however long no frame comes.
    held: bool,
    /// The latest jump's older frames as `history` messages.
    jump: Option<Arc<jump::JumpHistory>>,
}

/// A live feed of frames, and the seq of the first frame it will carry (every frame before it is
/// in the history ring or gone).
pub struct Subscription {
    pub frames: broadcast::Receiver<Arc<Entry>>,
    pub next_seq: u64,
}

/// A frame stamped and encoded, waiting to be stored and broadcast. Holds the publishers' turn,
/// so no other frame can take its seq or overtake it.
struct Prepared<'a> {
    hub: &'a HostFeed,
    _turn: MutexGuard<'a, Vec<u8>>,
    entry: Arc<Entry>,
}

impl Prepared<'_> {
    /// The seq the frame was stamped with.
    fn seq(&self) -> u64 {
        self.entry.seq
    }

    /// Stores and broadcasts the entry under the state lock; returns its seq.
    fn commit(self) -> u64 {
        let inner = &self.hub.inner;
        let seq = self.entry.seq;
        let mut state = self.hub.state();
        state.ring.push(self.entry.clone());
        state.last_publish = Some(Instant::now());
        inner
            .next_seq
            .store(seq.saturating_add(1), Ordering::Relaxed);
        // Err only means nobody is subscribed right now, which is fine.
        let _ = inner.tx.send(self.entry);
        seq
    }
}

impl HostFeed {
    pub fn new(host: impl Into<String>, interval: Duration, config: HostFeedConfig) -> Self {
        let host = host.into();
        let (tx, _) = broadcast::channel(config.channel_capacity.max(1));
        let (diagnosis, _) = watch::channel(None);
        HostFeed {
            inner: Arc::new(Inner {
                frame_prefix: frame_msg_prefix(&host),
                host,
                interval,
                tx,
                diagnosis,
                resets: watch::channel(0).0,
                publishing: Mutex::new(Vec::new()),
                next_seq: AtomicU64::new(config.first_seq.max(1)),
                state: Mutex::new(State {
                    ring: Ring::new(config.history_frames),
                    last_publish: None,
                    link: None,
                    floor: 0,
                    held: false,
                    jump: None,
                }),
                decoded: Mutex::new(None),
                questions: crate::peers::query::Line::default(),
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
        self.publish_in_place(&mut frame)
    }

    /// [`HostFeed::publish`] without taking the frame: `frame.seq` is set to the seq it was published
    /// with (and left alone when it could not be encoded), so the caller can keep using it (the
    /// diagnoser does) without a copy.
    pub fn publish_in_place(&self, frame: &mut Frame) -> Result<u64, serde_json::Error> {
        Ok(self.prepare(frame)?.commit())
    }

    /// Takes the publishers' turn, stamps `frame` with the next seq and encodes it, without the
    /// state lock that sessions wait on. An encoding failure uses up no seq.
    fn prepare(&self, frame: &mut Frame) -> Result<Prepared<'_>, serde_json::Error> {
        let mut turn = self.turn();
        let seq = self.inner.next_seq.load(Ordering::Relaxed);
        let entry = self.encode(&mut turn, seq, frame)?;
        Ok(Prepared {
            hub: self,
            _turn: turn,
            entry,
        })
    }

    fn turn(&self) -> MutexGuard<'_, Vec<u8>> {
        self.inner
            .publishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Stamps `frame` with `seq` and encodes its `frame` message (on failure, `frame.seq` is left
    /// as it was). The JSON is written into `scratch`, the buffer the publishers' turn keeps, and
    /// copied out at its exact size: no growing string per frame, and no spare capacity held in
    /// the ring for its 15 minutes.
    fn encode(
        &self,
        scratch: &mut Vec<u8>,
        seq: u64,
        frame: &mut Frame,
    ) -> Result<Arc<Entry>, serde_json::Error> {
        let unstamped = std::mem::replace(&mut frame.seq, seq);
        scratch.clear();
        scratch.extend_from_slice(self.inner.frame_prefix.as_bytes());
        if let Err(e) = serde_json::to_writer(&mut *scratch, &*frame) {
            frame.seq = unstamped;
            return Err(e);
        }
        scratch.push(b'}');
        let message = match std::str::from_utf8(scratch) {
            Ok(text) => text.to_owned(),
            Err(e) => {
                frame.seq = unstamped;
                return Err(serde::ser::Error::custom(e));
            }
        };
        Ok(Arc::new(Entry::new(
            seq,
            frame,
            message,
            self.inner.frame_prefix.len(),
        )))
    }

    /// Encodes `diagnosis` once and hands it to every session (they send the latest; a slow
    /// session skips straight to the newest one). `seq` is the newest frame it covers.
    pub fn publish_diagnosis(
        &self,
        seq: u64,
        diagnosis: &Diagnosis,
    ) -> Result<(), serde_json::Error> {
        let entry = self.encode_diagnosis(seq, diagnosis)?;
        self.store_diagnosis(entry);
        Ok(())
    }

    /// Hands an encoded diagnosis to every session.
    fn store_diagnosis(&self, entry: Arc<DiagnosisEntry>) {
        self.inner.diagnosis.send_replace(Some(entry));
    }

    fn encode_diagnosis(
        &self,
        seq: u64,
        diagnosis: &Diagnosis,
    ) -> Result<Arc<DiagnosisEntry>, serde_json::Error> {
        // Written straight into one buffer, sized for a diagnosis of a few GPUs and disks.
        let mut buf = Vec::with_capacity(16 * 1024);
        buf.extend_from_slice(DIAGNOSIS_MSG_PREFIX.as_bytes());
        serde_json::to_writer(&mut buf, self.host())?;
        buf.extend_from_slice(br#","diagnosis":"#);
        let start = buf.len();
        serde_json::to_writer(&mut buf, diagnosis)?;
        let end = buf.len();
        buf.push(b'}');
        let message = String::from_utf8(buf).map_err(serde::ser::Error::custom)?;
        Ok(Arc::new(DiagnosisEntry {
            seq,
            message: Encoded::from(message),
            body: start..end,
            diagnosis: Arc::new(diagnosis.clone()),
            hider: self.hider_for(diagnosis),
            without_users: OnceLock::new(),
        }))
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

    /// The most recent frame, decoded from its JSON on first demand and kept until the next one
    /// (a scrape of `/metrics` reads it; nothing is decoded when nobody scrapes).
    pub fn latest_frame(&self) -> Option<Arc<Frame>> {
        let entry = self.latest()?;
        let mut cache = self
            .inner
            .decoded
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((seq, frame)) = cache.as_ref()
            && *seq == entry.seq
        {
            return Some(frame.clone());
        }
        // The hub encoded this JSON itself, so it decodes; if it ever did not, there is no frame.
        let frame = Arc::new(serde_json::from_str::<Frame>(entry.frame_json()).ok()?);
        *cache = Some((entry.seq, frame.clone()));
        Some(frame)
    }

    /// Subscribes to live frames. Taken under the lock `publish` stores and broadcasts under, so
    /// every frame before `next_seq` is in the ring (or was dropped from it) and every frame from
    /// it on comes through `frames`: with [`HostFeed::history_after`] a session misses nothing.
    pub fn subscribe(&self) -> Subscription {
        let _state = self.state();
        Subscription {
            frames: self.inner.tx.subscribe(),
            next_seq: self.inner.next_seq.load(Ordering::Relaxed),
        }
    }

    /// Held frames with `seq > since` (all of them when `since` is `None`), oldest first.
    pub fn history_after(&self, since: Option<u64>) -> Vec<Arc<Entry>> {
        let state = self.state();
        let since = since.unwrap_or(0);
        state.ring.after(|e| e.seq <= since).cloned().collect()
    }

    /// A hider for `diagnosis`'s users and every user the frames in the ring name (the window it
    /// covers lies in the ring).
    fn hider_for(&self, diagnosis: &Diagnosis) -> shared::privacy::Hider {
        if diagnosis.jobs.is_empty() {
            return shared::privacy::Hider::default();
        }
        let entries = self.history_after(None);
        let mut users: Vec<&str> = entries
            .iter()
            .flat_map(|e| e.users())
            .chain(diagnosis.users())
            .collect();
        users.sort_unstable();
        users.dedup();
        entry::hider(users)
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
        let (state, age, _) = self.host_status();
        (state, age)
    }

    /// [`HostFeed::host_state`] with the reason; for a peer's host, a link that is connecting or down
    /// says so (with its reason) whatever frames came before.
    pub fn host_status(&self) -> (HostState, Option<Duration>, Option<String>) {
        let state = self.state();
        let age = state.last_publish.map(|at| at.elapsed());
        if let Some((link @ (HostState::Down | HostState::Connecting), why)) = &state.link {
            return (*link, age, why.clone());
        }
        match age {
            None => (HostState::Down, None, None),
            Some(age) if state.held => (HostState::Up, Some(age), None),
            Some(age) if age > self.stale_after() => (
                HostState::Stale,
                Some(age),
                Some(format!("no frame for {:.1} s", age.as_secs_f64())),
            ),
            Some(age) => (HostState::Up, Some(age), None),
        }
    }

    /// Sets how the link to this (peer's) host stands.
    pub fn set_link(&self, state: HostState, error: Option<String>) {
        self.state().link = Some((state, error));
    }

    /// Viewers currently subscribed.
    /// Asks the peer behind this host a question about its stored history, over its link.
    pub async fn ask_peer(
        &self,
        msg: shared::ClientMsg,
        timeout: Duration,
    ) -> Result<shared::ServerMsg, String> {
        self.inner.questions.ask(msg, timeout).await
    }

    pub fn receiver_count(&self) -> usize {
        self.inner.tx.receiver_count()
    }
}

/// A peer feeds its host's hub: frames are re-stamped with this hub's seq, the diagnosis is the
/// peer's own.
impl crate::peers::PeerSink for HostFeed {
    fn link(&self, state: HostState, error: Option<String>) {
        self.set_link(state, error);
    }
    fn frame(&self, frame: Frame) {
        if let Err(e) = self.publish(frame) {
            tracing::warn!(host = %self.host(), error = %e, "cannot encode a peer's frame");
        }
    }
    fn questions(&self) -> Option<crate::peers::query::Line> {
        Some(self.inner.questions.clone())
    }
    fn reset(&self) {
        if let Err(e) = self.replace_history(&mut [], None) {
            tracing::warn!(host = %self.host(), error = %e, "cannot reset a peer's history");
        }
    }
    fn diagnosis(&self, diagnosis: Diagnosis) {
        let seq = self.latest().map_or(0, |e| e.seq);
        if let Err(e) = self.publish_diagnosis(seq, &diagnosis) {
            tracing::warn!(host = %self.host(), error = %e, "cannot encode a peer's diagnosis");
        }
    }
}

#[cfg(test)]
mod tests;
