//! One host's stream to one viewer ([`HostStream`]): the backfill after the viewer's `since`,
//! then live `frame`s with the `diagnosis` published with each, `host_status` when the host's
//! state changes (a timer notices a host going stale), lag caught up from the history ring, and a
//! replaced history as `reset` and the new one ([`super::history`]).
//!
//! It knows nothing of the socket, `hello`, client messages or leases: [`HostStream::next`] yields
//! the next batch of messages (one write each) for [`super::run`] to send. Work of several writes
//! (a backfill's chunks) waits in a queue inside the stream, and `next` only awaits cancel-safe
//! things, so dropping it between batches loses nothing. While the socket is slow nobody polls
//! the stream: its broadcast receiver lags, and it catches up from the ring when polled again.

use super::Ended;
use super::socket::text;
use crate::host_feed::{DiagnosisEntry, Entry, HostFeed};
use axum::extract::ws::Message;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, stream};
use shared::{HostState, ServerMsg};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use tokio::time::Sleep;

/// How long past the hub's staleness limit a stream looks again, so the hub already calls the
/// host stale when it does.
const STALE_MARGIN: Duration = Duration::from_millis(50);

/// Where a host's stream starts: what the viewer's `subscribe` said for this host.
#[derive(Clone, Copy, Debug, Default)]
pub struct Start {
    /// Resume after this seq; `None`: everything held.
    pub since: Option<u64>,
    /// The viewer takes chart samples for the older frames of a whole-history backfill.
    pub samples: bool,
    /// At most this many of the newest frames in a backfill (a hub's share of this host's
    /// history); `None`: every frame held.
    pub max_frames: Option<usize>,
}

/// Work waiting to go out, in order.
pub(super) enum Pending {
    /// Messages that go out together, in one write.
    Write(Vec<Message>),
    /// Frames still to go as `backfill` messages, one chunk a write, from `next` on.
    Backfill {
        entries: Vec<Arc<Entry>>,
        next: usize,
    },
    /// The stream cannot go on.
    End(Ended),
}

/// One host's stream to one viewer.
pub struct HostStream {
    pub(super) hub: HostFeed,
    /// Whether frames keep their user names.
    pub(super) show_users: bool,
    /// See [`Start::samples`].
    pub(super) samples: bool,
    /// See [`Start::max_frames`].
    pub(super) max_frames: Option<usize>,
    /// Highest seq queued for this viewer, or (before any) the seq just before the first frame
    /// this stream could have seen: every frame up to it is accounted for.
    pub(super) cursor: u64,
    reported_state: Option<HostState>,
    frames: broadcast::Receiver<Arc<Entry>>,
    resets: watch::Receiver<u64>,
    diagnoses: watch::Receiver<Option<Arc<DiagnosisEntry>>>,
    diagnoses_open: bool,
    overdue_after: Duration,
    overdue: Pin<Box<Sleep>>,
    /// Whether `overdue` is still to be looked at.
    watching: bool,
    pub(super) pending: VecDeque<Pending>,
}

impl HostStream {
    /// A stream of `hub` for one viewer, from `start`: its backfill, the host's state and the
    /// current diagnosis are queued at once; live frames follow.
    pub fn start(hub: HostFeed, start: Start, show_users: bool) -> HostStream {
        // A history replaced from here on is news to this viewer; before, it is what it backfills.
        let mut resets = hub.watch_resets();
        resets.mark_unchanged();
        // Subscribe before reading history so no frame falls between the two.
        let subscription = hub.subscribe();
        let diagnoses = hub.watch_diagnosis();
        let overdue_after = hub.stale_after() + STALE_MARGIN;
        let mut s = HostStream {
            hub,
            show_users,
            samples: start.samples,
            max_frames: start.max_frames,
            cursor: subscription.next_seq.saturating_sub(1),
            reported_state: None,
            frames: subscription.frames,
            resets,
            diagnoses,
            diagnoses_open: true,
            overdue_after,
            overdue: Box::pin(tokio::time::sleep(overdue_after)),
            watching: true,
            pending: VecDeque::new(),
        };
        s.backfill(start.since);
        // The current diagnosis right away, so the page never waits for the next change.
        s.queue_current_diagnosis();
        s
    }

    /// The next batch of messages, to go out in one write. Cancel-safe.
    pub async fn next(&mut self) -> Result<Vec<Message>, Ended> {
        loop {
            if let Some(batch) = self.pop() {
                return batch;
            }
            self.step().await;
        }
    }

    /// This stream as a `Stream` of batches, for polling several together.
    pub fn into_stream(self) -> BoxStream<'static, Result<Vec<Message>, Ended>> {
        stream::unfold(self, |mut s| async move {
            let batch = s.next().await;
            Some((batch, s))
        })
        .boxed()
    }

    /// Waits for one event and queues what it means. Everything after the one await is
    /// synchronous, and every branch is cancel-safe.
    async fn step(&mut self) {
        // In this order: a reset before the frames of the new history, and a frame before the
        // diagnosis published with it (they go in one batch).
        tokio::select! {
            biased;
            changed = self.resets.changed() => match changed {
                Ok(()) => {
                    self.resets.mark_unchanged();
                    let subscription = self.hub.subscribe();
                    self.frames = subscription.frames;
                    self.cursor = subscription.next_seq.saturating_sub(1);
                    self.start_over();
                }
                Err(_) => self.end(Ended::ServerShutdown),
            },
            live = self.frames.recv() => match live {
                Ok(entry) => self.live(&entry),
                Err(RecvError::Lagged(_)) => self.catch_up(),
                Err(RecvError::Closed) => self.end(Ended::ServerShutdown),
            },
            // A diagnosis of a history this viewer has not been sent yet waits for the reset.
            changed = self.diagnoses.changed(),
                if self.diagnoses_open && !self.resets.has_changed().unwrap_or(false) =>
            {
                match changed {
                    Ok(()) => self.queue_current_diagnosis(),
                    Err(_) => self.diagnoses_open = false,
                }
            }
            () = &mut self.overdue, if self.watching => {
                self.watching = false;
                self.report_state();
            }
        }
    }

    /// A live frame: the frame unless the viewer has it, with a diagnosis published with it, in
    /// one batch; then the host's state if that changed.
    fn live(&mut self, entry: &Entry) {
        // The host's state changes only when frames start, stop or resume, so it is checked when
        // a frame arrives and once the next one is overdue: no timer of its own wakes a session
        // each interval while frames flow. A new timer, not `reset`: tokio extends a reset
        // deadline lazily, so the old one still fires and wakes the thread while frames flow; a
        // dropped timer leaves the wheel at once. (The wheel still wakes where a deadline seconds
        // away crosses one of its 4.096 s slots: 10 wake-ups without an event in 41 s with one
        // viewer, against 19 with `reset`.)
        self.overdue.set(tokio::time::sleep(self.overdue_after));
        self.watching = true;
        let frame = (entry.seq > self.cursor).then(|| text(&entry.message_for(self.show_users)));
        self.cursor = self.cursor.max(entry.seq);
        let with = (self.diagnoses_open
            && !self.resets.has_changed().unwrap_or(false)
            && self.diagnoses.has_changed().unwrap_or(false))
        .then(|| self.diagnoses.borrow_and_update().clone())
        .flatten()
        .map(|d| text(&d.message_for(self.show_users)));
        let batch: Vec<Message> = frame.into_iter().chain(with).collect();
        if !batch.is_empty() {
            self.pending.push_back(Pending::Write(batch));
        }
        self.report_state();
    }

    /// Queues the current diagnosis, if there is one.
    pub(super) fn queue_current_diagnosis(&mut self) {
        let current = self.diagnoses.borrow_and_update().clone();
        if let Some(entry) = current {
            self.queue(text(&entry.message_for(self.show_users)));
        }
    }

    /// Queues `host_status` when the host's state differs from what this viewer was last told.
    pub(super) fn report_state(&mut self) {
        let (state, _age, error) = self.hub.host_status();
        if self.reported_state == Some(state) {
            return;
        }
        self.reported_state = Some(state);
        let last_seen_ms = self.hub.latest().map(|e| e.t_ms);
        self.queue_msg(&ServerMsg::HostStatus {
            host: self.hub.host().to_owned(),
            state,
            last_seen_ms,
            error,
        });
    }

    /// Queues `msg` as a write of its own.
    pub(super) fn queue(&mut self, msg: Message) {
        self.pending.push_back(Pending::Write(vec![msg]));
    }

    /// Queues `msg`, encoded, as a write of its own.
    pub(super) fn queue_msg(&mut self, msg: &ServerMsg) {
        match serde_json::to_string(msg) {
            Ok(text) => self.queue(Message::Text(text.into())),
            Err(_) => self.end(Ended::WriteFailed),
        }
    }

    /// Ends the stream once what is queued before has gone out.
    pub(super) fn end(&mut self, ended: Ended) {
        self.pending.push_back(Pending::End(ended));
    }

    /// The next batch queued, if any: a backfill gives one chunk at a time.
    fn pop(&mut self) -> Option<Result<Vec<Message>, Ended>> {
        if let Some(Pending::Backfill { entries, next }) = self.pending.front_mut() {
            let (msg, taken) =
                super::history::backfill_chunk(self.hub.host(), &entries[*next..], self.show_users);
            *next += taken;
            if *next >= entries.len() {
                self.pending.pop_front();
            }
            return Some(Ok(vec![msg]));
        }
        match self.pending.pop_front()? {
            Pending::Write(batch) => Some(Ok(batch)),
            Pending::End(ended) => Some(Err(ended)),
            // Taken above.
            Pending::Backfill { .. } => None,
        }
    }
}

#[cfg(test)]
#[path = "host_stream_tests.rs"]
mod tests;
