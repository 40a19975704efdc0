//! A session's history: what it backfills (after the client's `since_seq`, after falling behind
//! the hub's channel, after a replay jumped) and how, in chunks built from the frames' existing
//! encodings.

use super::{BACKFILL_CHUNK, BACKFILL_CHUNK_BYTES, Ended, Session};
use crate::hub::Entry;
use crate::hub::jump_history_messages as history_messages;
use axum::extract::ws::Message;
use futures_util::Sink;
use shared::ServerMsg;
use std::sync::Arc;

impl<S: Sink<Message> + Unpin> Session<S> {
    /// After the hub's history was replaced (a replay jumped): the new history and the
    /// diagnosis that goes with it. The caller has subscribed afresh.
    pub(super) async fn start_over(
        &mut self,
        diagnoses: &mut tokio::sync::watch::Receiver<Option<Arc<crate::hub::DiagnosisEntry>>>,
    ) -> Result<(), Ended> {
        self.send_new_history().await?;
        let current = diagnoses.borrow_and_update().clone();
        match current {
            Some(entry) => self.send(Message::Text(entry.message())).await,
            None => Ok(()),
        }
    }

    /// `reset`, then the hub's whole history. To a client that takes chart samples, the older
    /// frames go as `history` (a jump's, encoded at the jump, while the hub has them; else each
    /// frame's own) and the newest whole; to one that does not, every frame whole.
    async fn send_new_history(&mut self) -> Result<(), Ended> {
        let jump = self.hub.jump_history().filter(|_| self.samples);
        let Some(jump) = jump else {
            let entries = self.hub.history_after(None);
            return self.send_whole_history(&entries).await;
        };
        let entries = self
            .hub
            .history_after(Some(jump.whole_from.saturating_sub(1)));
        self.send_reset(jump.samples + entries.len()).await?;
        for m in &jump.messages {
            self.send(Message::Text(m.clone())).await?;
        }
        self.send_backfill(&entries).await?;
        if let Some(last) = entries.last() {
            self.cursor = self.cursor.max(last.seq);
        }
        Ok(())
    }

    /// `reset`, then `entries` (all the hub holds): the older ones as chart samples if the
    /// client takes them, the rest whole.
    async fn send_whole_history(&mut self, entries: &[Arc<Entry>]) -> Result<(), Ended> {
        self.send_reset(entries.len()).await?;
        let whole_from = if self.samples {
            entries.len().saturating_sub(1)
        } else {
            0
        };
        let (older, whole) = entries.split_at(whole_from);
        let messages = history_messages(self.hub.host(), older.iter().map(|e| e.sample_json()))
            .map_err(|_| Ended::WriteFailed)?;
        for m in messages {
            self.send(Message::Text(m)).await?;
        }
        self.send_backfill(whole).await?;
        if let Some(last) = entries.last() {
            self.cursor = self.cursor.max(last.seq);
        }
        Ok(())
    }

    /// `reset`: the next `frames` frames backfilled are the host's new history.
    async fn send_reset(&mut self, frames: usize) -> Result<(), Ended> {
        self.send_msg(&ServerMsg::Reset {
            host: self.hub.host().to_owned(),
            frames: u64::try_from(frames).unwrap_or(u64::MAX),
        })
        .await
    }

    /// Sends every held frame after `since` in `backfill` chunks, built from the frames' existing
    /// encodings (nothing is serialized again).
    pub(super) async fn backfill(&mut self, since: Option<u64>) -> Result<(), Ended> {
        // A `since_seq` beyond anything this server has made comes from another server (the
        // tunnel now points elsewhere) or from before a clock step: start over rather than wait
        // for seq to catch up with it.
        let newest = self.hub.latest().map(|e| e.seq);
        let since = since.filter(|s| newest.is_some_and(|n| *s <= n));
        // A client that holds frames from before the history was replaced (it reconnects after a
        // replay jumped) drops them first.
        if since.is_some_and(|s| s < self.hub.reset_floor()) {
            self.send_new_history().await?;
            return self.report_state().await;
        }
        let mut entries: Vec<Arc<Entry>> = self.hub.history_after(since);
        if let Some(n) = self.max_frames
            && entries.len() > n
        {
            entries.drain(..entries.len() - n);
        }
        if since.is_none() && self.samples && entries.len() > 1 {
            // The whole history to a page: its charts need only samples of all but the newest.
            self.send_whole_history(&entries).await?;
            return self.report_state().await;
        }
        self.send_backfill(&entries).await?;
        let last = entries.last().map(|e| e.seq);
        self.cursor = last.or(since).unwrap_or(self.cursor);
        self.report_state().await
    }

    /// `entries` as `backfill` messages of at most [`BACKFILL_CHUNK`] frames and
    /// [`BACKFILL_CHUNK_BYTES`] bytes of them.
    async fn send_backfill(&mut self, entries: &[Arc<Entry>]) -> Result<(), Ended> {
        let host_json = serde_json::to_string(self.hub.host()).map_err(|_| Ended::WriteFailed)?;
        let mut rest = entries;
        while !rest.is_empty() {
            let mut bytes = 0;
            let take = rest
                .iter()
                .take(BACKFILL_CHUNK)
                .take_while(|e| {
                    bytes += e.frame_json_for(self.show_users).len() + 1;
                    bytes <= BACKFILL_CHUNK_BYTES
                })
                .count()
                .max(1);
            let (chunk, after) = rest.split_at(take);
            rest = after;
            let mut text = String::with_capacity(bytes.min(BACKFILL_CHUNK_BYTES) + 64);
            text.push_str(r#"{"type":"backfill","host":"#);
            text.push_str(&host_json);
            text.push_str(r#","frames":["#);
            for (i, e) in chunk.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(e.frame_json_for(self.show_users));
            }
            text.push_str("]}");
            self.send(Message::Text(text.into())).await?;
        }
        Ok(())
    }

    /// After the channel dropped frames for this session: sends `lagged` for those the ring no
    /// longer holds either, then backfills the rest. Frames still queued in the channel that this
    /// sends now are skipped when they come (their seq is not above the cursor).
    pub(super) async fn catch_up(&mut self) -> Result<(), Ended> {
        let held = self.hub.history_after(Some(self.cursor));
        let Some(first) = held.first().map(|e| e.seq) else {
            return Ok(());
        };
        let lost = first.saturating_sub(self.cursor.saturating_add(1));
        if lost > 0 {
            self.send_msg(&ServerMsg::Lagged { skipped: lost }).await?;
        }
        self.send_backfill(&held).await?;
        if let Some(last) = held.last() {
            self.cursor = last.seq;
        }
        Ok(())
    }
}
