//! A host stream's history: what it backfills (after the viewer's `since_seq`, after falling
//! behind the hub's channel, after a replay jumped) and how, in chunks built from the frames'
//! existing encodings. Everything here queues on the [`HostStream`]; chunks are built as they go
//! out.

use super::host_stream::{HostStream, Pending};
use super::socket::text;
use super::{BACKFILL_CHUNK, BACKFILL_CHUNK_BYTES, Ended};
use crate::host_feed::Entry;
use crate::host_feed::jump_history_messages as history_messages;
use axum::extract::ws::Message;
use shared::ServerMsg;
use std::sync::Arc;

impl HostStream {
    /// After the hub's history was replaced (a replay jumped): the new history and the
    /// diagnosis that goes with it. The caller has subscribed afresh.
    pub(super) fn start_over(&mut self) {
        self.queue_new_history();
        self.queue_current_diagnosis();
    }

    /// `reset`, then the hub's whole history. To a viewer that takes chart samples, the older
    /// frames go as `history` (a jump's, encoded at the jump, while the hub has them; else each
    /// frame's own) and the newest whole; to one that does not, every frame whole.
    fn queue_new_history(&mut self) {
        let jump = self.hub.jump_history().filter(|_| self.samples);
        let Some(jump) = jump else {
            let entries = self.hub.history_after(None);
            return self.queue_whole_history(entries);
        };
        let entries = self
            .hub
            .history_after(Some(jump.whole_from.saturating_sub(1)));
        self.queue_reset(jump.samples + entries.len());
        for m in &jump.messages {
            self.queue(text(m));
        }
        self.queue_backfill(entries);
    }

    /// `reset`, then `entries` (all the hub holds): the older ones as chart samples if the
    /// viewer takes them, the rest whole.
    fn queue_whole_history(&mut self, mut entries: Vec<Arc<Entry>>) {
        self.queue_reset(entries.len());
        let whole_from = if self.samples {
            entries.len().saturating_sub(1)
        } else {
            0
        };
        let whole = entries.split_off(whole_from);
        match history_messages(self.hub.host(), entries.iter().map(|e| e.sample_json())) {
            Ok(messages) => {
                for m in messages {
                    self.queue(text(&m));
                }
            }
            Err(_) => return self.end(Ended::WriteFailed),
        }
        self.queue_backfill(whole);
    }

    /// `reset`: the next `frames` frames backfilled are the host's new history.
    fn queue_reset(&mut self, frames: usize) {
        self.queue_msg(&ServerMsg::Reset {
            host: self.hub.host().to_owned(),
            frames: u64::try_from(frames).unwrap_or(u64::MAX),
        });
    }

    /// Queues every held frame after `since` in `backfill` chunks, then the host's state.
    pub(super) fn backfill(&mut self, since: Option<u64>) {
        // A `since_seq` beyond anything this server has made comes from another server (the
        // tunnel now points elsewhere) or from before a clock step: start over rather than wait
        // for seq to catch up with it.
        let newest = self.hub.latest().map(|e| e.seq);
        let since = since.filter(|s| newest.is_some_and(|n| *s <= n));
        // A viewer that holds frames from before the history was replaced (it reconnects after a
        // replay jumped) drops them first.
        if since.is_some_and(|s| s < self.hub.reset_floor()) {
            self.queue_new_history();
            return self.report_state();
        }
        let mut entries: Vec<Arc<Entry>> = self.hub.history_after(since);
        if let Some(n) = self.max_frames
            && entries.len() > n
        {
            entries.drain(..entries.len() - n);
        }
        if since.is_none() && self.samples && entries.len() > 1 {
            // The whole history to a page: its charts need only samples of all but the newest.
            self.queue_whole_history(entries);
            return self.report_state();
        }
        if let Some(s) = since
            && entries.is_empty()
        {
            self.cursor = s;
        }
        self.queue_backfill(entries);
        self.report_state();
    }

    /// After the channel dropped frames for this stream: queues `lagged` for those the ring no
    /// longer holds either, then backfills the rest. Frames still queued in the channel that this
    /// backfills are skipped when they come (their seq is not above the cursor).
    pub(super) fn catch_up(&mut self) {
        let held = self.hub.history_after(Some(self.cursor));
        let Some(first) = held.first().map(|e| e.seq) else {
            return;
        };
        let lost = first.saturating_sub(self.cursor.saturating_add(1));
        if lost > 0 {
            self.queue_msg(&ServerMsg::Lagged { skipped: lost });
        }
        self.queue_backfill(held);
    }

    /// Queues `entries` (oldest first) as `backfill` messages; the cursor moves past them now.
    fn queue_backfill(&mut self, entries: Vec<Arc<Entry>>) {
        let Some(last) = entries.last() else {
            return;
        };
        self.cursor = self.cursor.max(last.seq);
        self.pending
            .push_back(Pending::Backfill { entries, next: 0 });
    }
}

/// The first `backfill` message of `entries` (not empty), of at most [`BACKFILL_CHUNK`] frames
/// and [`BACKFILL_CHUNK_BYTES`] bytes of them (a single larger frame still goes alone), built from
/// the frames' existing encodings (nothing is serialized again); and how many frames it holds.
pub(super) fn backfill_chunk(
    host: &str,
    entries: &[Arc<Entry>],
    show_users: bool,
) -> (Message, usize) {
    let mut bytes = 0;
    let take = entries
        .iter()
        .take(BACKFILL_CHUNK)
        .take_while(|e| {
            bytes += e.frame_json_for(show_users).len() + 1;
            bytes <= BACKFILL_CHUNK_BYTES
        })
        .count()
        .max(1);
    let host_json = serde_json::Value::from(host).to_string();
    let mut text = String::with_capacity(bytes.min(BACKFILL_CHUNK_BYTES) + 64);
    text.push_str(r#"{"type":"backfill","host":"#);
    text.push_str(&host_json);
    text.push_str(r#","frames":["#);
    for (i, e) in entries.iter().take(take).enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(e.frame_json_for(show_users));
    }
    text.push_str("]}");
    (Message::Text(text.into()), take)
}
