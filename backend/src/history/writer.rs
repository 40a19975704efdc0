//! The writer thread: gathers the samples of each 10 s window and commits them as one batch
//! row when the next window begins, seals every hour, and keeps the file under
//! `--history-max`. A full disk pauses it (what waits is kept, up to 10 minutes of it) until a
//! retry succeeds; any failed commit is retried on a store opened again
//! (docs/history.md#durable).

use super::Shared;
use super::events::events_between;
use super::read::Segment;
use super::sink::Msg;
use super::store::Batch;
use super::tables::{ROW_SECONDS, S1, push_sample};
use shared::Frame;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a paused writer waits before it tries again.
const RETRY: Duration = Duration::from_secs(10);
/// Rows kept in memory while writing is paused (10 minutes of windows).
const MAX_WAITING_ROWS: usize = 60;
/// Closed windows are committed at most this often (only frames faster than real time wait).
const COMMIT_AT_MOST_EVERY: Duration = Duration::from_secs(1);
/// How long the writer sleeps with nothing to retry (a message wakes it before).
const IDLE_WAIT: Duration = Duration::from_secs(60);

struct Writer {
    shared: Arc<Shared>,
    /// The window being gathered, and its samples.
    window: Option<u64>,
    row: Vec<u8>,
    /// What the next commit writes.
    batch: Batch,
    segment: Option<Segment>,
    shape: Option<Frame>,
    last_t_ms: u64,
    retry_at: Option<Instant>,
    sealed_until: u64,
    last_commit: Instant,
}

pub fn run(shared: Arc<Shared>, rx: Receiver<Msg>) {
    let mut w = Writer {
        shared,
        window: None,
        row: Vec::new(),
        batch: Batch::default(),
        // A segment from before a restart is closed where it was last seen: a new one begins.
        segment: None,
        shape: None,
        last_t_ms: 0,
        retry_at: None,
        sealed_until: 0,
        last_commit: Instant::now(),
    };
    loop {
        // Woken by the sink once a window; by the clock only to retry a paused write.
        let wait = w.retry_at.map_or(IDLE_WAIT, |at| {
            at.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(10))
        });
        match rx.recv_timeout(wait) {
            Ok(Msg::Samples { samples, closed }) => {
                for s in samples {
                    w.sample(s.t_ms, &s.values, s.items);
                }
                if closed {
                    w.window_over();
                }
            }
            Ok(Msg::Shape { t_ms, hash, frame }) => w.shape(t_ms, hash, *frame),
            Ok(Msg::Verdict(seg)) => w.verdict(*seg),
            Ok(Msg::Flush(done)) => {
                w.close_window();
                w.commit();
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => {
                if w.retry_at.is_some_and(|at| Instant::now() >= at) {
                    w.commit();
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    w.close_window();
    w.commit();
}

impl Writer {
    fn sample(&mut self, t_ms: u64, values: &[(u32, f64)], items: Vec<(String, u32)>) {
        let window = t_ms / 1000 / ROW_SECONDS * ROW_SECONDS;
        if self.window.is_some_and(|w| w != window) {
            self.window_over();
        }
        self.window = Some(window);
        self.batch.items.extend(items);
        push_sample(&mut self.row, t_ms, values);
        self.last_t_ms = self.last_t_ms.max(t_ms);
        if let Some(seg) = &mut self.segment {
            seg.to_ms = seg.to_ms.max(t_ms);
        }
    }

    /// The window gathered is over: its row is closed, and committed at once live. Frames
    /// faster than real time (an import) are committed a second of wall time, or an hour of
    /// rows, at a time.
    fn window_over(&mut self) {
        if self.window.is_none() {
            return;
        }
        self.close_window();
        if self.last_commit.elapsed() >= COMMIT_AT_MOST_EVERY
            || self.batch.rows.len() >= MAX_WAITING_ROWS * 6
        {
            self.commit();
        }
    }

    fn shape(&mut self, t_ms: u64, hash: u64, frame: Frame) {
        if let Some(before) = &self.shape {
            for e in events_between(before, &frame) {
                if let Ok(json) = serde_json::to_vec(&e) {
                    self.batch.events.push((t_ms, json));
                }
            }
        }
        let json = serde_json::to_vec(&frame).ok();
        self.batch.shapes.push((t_ms, hash, json));
        self.shape = Some(frame);
    }

    fn verdict(&mut self, seg: Segment) {
        if let Some(mut open) = self.segment.take() {
            open.to_ms = open.to_ms.max(seg.from_ms);
            self.push_segment(&open);
        }
        self.push_segment(&seg);
        self.segment = Some(seg);
    }

    fn push_segment(&mut self, seg: &Segment) {
        if let Ok(json) = serde_json::to_vec(seg) {
            self.batch
                .segments
                .retain(|(start, _)| *start != seg.from_ms);
            self.batch.segments.push((seg.from_ms, json));
        }
    }

    /// Moves the window's samples into the batch.
    fn close_window(&mut self) {
        if let Some(window) = self.window.take()
            && !self.row.is_empty()
        {
            let row = std::mem::take(&mut self.row);
            match self.batch.rows.iter_mut().find(|(w, _)| *w == window) {
                Some((_, bytes)) => bytes.extend(row),
                None => self.batch.rows.push((window, row)),
            }
        }
        if let Some(seg) = self.segment.clone() {
            self.push_segment(&seg);
        }
    }

    /// Commits the batch; on failure keeps it (bounded) for the next try.
    fn commit(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        if self.retry_at.is_some_and(|at| Instant::now() < at) {
            self.bound_waiting();
            return;
        }
        let counters = &self.shared.counters;
        self.last_commit = Instant::now();
        match self.shared.with_store(|s| s.commit(&self.batch)) {
            Ok(()) => {
                self.batch = Batch::default();
                if self.retry_at.take().is_some() {
                    tracing::info!("history: writing again");
                }
                self.shared.set_paused(None);
                counters.commits.fetch_add(1, Ordering::Relaxed);
                self.seal_if_due();
            }
            Err(e) => {
                let full = e.is_disk_full();
                if full {
                    counters.full.fetch_add(1, Ordering::Relaxed);
                } else {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                }
                if self.retry_at.is_none() {
                    tracing::warn!(error = %e, "history: writing paused; it resumes by itself");
                }
                self.shared.set_paused(Some(if full {
                    format!("the disk holding {} is full: history writing is paused until space returns", self.shared.dir.display())
                } else {
                    format!("history writing failed ({e}); retrying")
                }));
                self.retry_at = Some(Instant::now() + RETRY);
                // redb asks for the file to be opened again after an I/O error.
                self.shared.reopen();
                self.bound_waiting();
            }
        }
    }

    fn bound_waiting(&mut self) {
        let rows = &mut self.batch.rows;
        if rows.len() > MAX_WAITING_ROWS {
            let extra = rows.len() - MAX_WAITING_ROWS;
            rows.drain(..extra);
            self.shared
                .counters
                .dropped
                .fetch_add(extra as u64, Ordering::Relaxed);
        }
    }

    /// Seals when a 10-minute block has ended, then holds the file to its cap.
    fn seal_if_due(&mut self) {
        // Never past the clock: one sample stamped in the future must not age the rest out.
        let wall_s = crate::collect::sampler::now_ms() / 1000;
        let now_s = (self.last_t_ms / 1000).min(wall_s + 60);
        let until = now_s - now_s % S1.block;
        if until <= self.sealed_until {
            return;
        }
        match self.shared.with_store(|s| s.seal(now_s)) {
            Ok(_) => self.sealed_until = until,
            Err(e) => {
                tracing::warn!(error = %e, "history: sealing failed; it is tried again at the next commit");
                return;
            }
        }
        self.shared.hold_cap(now_s);
    }
}
