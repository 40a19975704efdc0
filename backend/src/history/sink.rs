//! [`Sink`]: the sampler thread's end of the history. It turns each frame into `(series id,
//! value)`s (ids of new items made here, so the writer never looks a name up), notes a new shape
//! and a verdict that changed, and hands them to the writer thread without ever waiting: a full
//! queue drops the sample and counts it.

use super::read::Segment;
use super::tables::item_key;
use shared::Frame;
use shared::diagnosis::{Diagnosis, Severity, Verdict};
use shared::series::{Scope, shape_hash, visit};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, TrySendError};

/// How far past the clock a frame may be stamped.
const FUTURE_MS: u64 = 3_600_000;

/// What the writer thread is sent.
pub enum Msg {
    Sample {
        t_ms: u64,
        values: Vec<(u32, f64)>,
        /// Items first seen in this frame: key and base id.
        items: Vec<(String, u32)>,
    },
    /// The frame's shape changed (the frame, whose figures are not used).
    Shape {
        t_ms: u64,
        hash: u64,
        frame: Box<Frame>,
    },
    /// A verdict or severity began.
    Verdict(Box<Segment>),
    /// Write what is pending now, then answer.
    Flush(SyncSender<()>),
}

pub struct Sink {
    tx: SyncSender<Msg>,
    /// Each item's base id, by scope and item (looked up by `&str`: no allocation a frame).
    ids: HashMap<Scope, HashMap<String, u32>>,
    next_id: u32,
    shape: Option<u64>,
    verdict: Option<(Verdict, Severity)>,
    counters: Arc<super::Counters>,
    /// Wait for room rather than drop (an import, which must lose nothing).
    blocking: bool,
    /// Values the last frame had (the next one's capacity).
    last_len: usize,
    /// New items of a sample that was dropped.
    unsent_items: Vec<(String, u32)>,
}

impl Sink {
    pub(super) fn new(
        tx: SyncSender<Msg>,
        known: HashMap<String, u32>,
        counters: Arc<super::Counters>,
    ) -> Sink {
        let mut ids: HashMap<Scope, HashMap<String, u32>> = HashMap::new();
        let mut next_id = 0;
        for (key, base) in known {
            if let Some((scope, item)) = super::tables::parse_item_key(&key) {
                next_id = next_id.max(base + scope.metrics().len() as u32);
                ids.entry(scope).or_default().insert(item, base);
            }
        }
        Sink {
            tx,
            ids,
            next_id,
            shape: None,
            verdict: None,
            counters,
            blocking: false,
            last_len: 64,
            unsent_items: Vec::new(),
        }
    }

    /// A sink that waits for the writer instead of dropping (an import).
    pub fn blocking(self) -> Sink {
        Sink {
            blocking: true,
            ..self
        }
    }

    /// Hands `msg` to the writer; `Err` gives it back when the queue is full (or the writer
    /// gone), counted as dropped.
    fn send(&self, msg: Msg) -> Result<(), Msg> {
        let sent = if self.blocking {
            self.tx.send(msg).map_err(|e| e.0)
        } else {
            self.tx.try_send(msg).map_err(|e| match e {
                TrySendError::Full(m) | TrySendError::Disconnected(m) => m,
            })
        };
        if sent.is_err() {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
        sent
    }

    /// One frame: its figures, and its shape when that changed. A frame stamped more than an
    /// hour past the clock is not kept (a wrong clock, a typo in a log): counted as dropped.
    pub fn frame(&mut self, frame: &Frame) {
        if frame.t_ms > crate::collect::sampler::now_ms() + FUTURE_MS {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut values = Vec::with_capacity(self.last_len);
        // Items named before whose sample was dropped go with this one: an id is never used
        // without its item stored.
        let mut items = std::mem::take(&mut self.unsent_items);
        let (ids, next_id) = (&mut self.ids, &mut self.next_id);
        visit(frame, |scope, item, vs| {
            let of_scope = ids.entry(scope).or_default();
            let base = match of_scope.get(item) {
                Some(b) => *b,
                None => {
                    let base = *next_id;
                    *next_id += scope.metrics().len() as u32;
                    of_scope.insert(item.to_owned(), base);
                    items.push((item_key(scope, item), base));
                    base
                }
            };
            for (i, v) in vs.iter().enumerate() {
                if let Some(v) = v.filter(|v| v.is_finite()) {
                    values.push((base + i as u32, v));
                }
            }
        });
        self.last_len = values.len();
        let hash = shape_hash(frame);
        if self.shape != Some(hash) {
            let shape = Msg::Shape {
                t_ms: frame.t_ms,
                hash,
                frame: Box::new(frame.clone()),
            };
            // A shape not sent is sent with the next frame.
            self.shape = self.send(shape).is_ok().then_some(hash);
        }
        let sample = Msg::Sample {
            t_ms: frame.t_ms,
            values,
            items,
        };
        if let Err(Msg::Sample { items, .. }) = self.send(sample) {
            self.unsent_items = items;
        }
    }

    /// The newest diagnosis: a segment begins when its verdict or severity differs.
    pub fn diagnosis(&mut self, d: &Diagnosis) {
        let Some(t_ms) = d.t_ms else { return };
        if self.verdict == Some((d.verdict, d.severity)) {
            return;
        }
        let segment = Msg::Verdict(Box::new(Segment {
            from_ms: t_ms,
            to_ms: t_ms,
            verdict: d.verdict,
            severity: d.severity,
            findings: d.findings.clone(),
        }));
        // Not sent: tried again with the next diagnosis.
        self.verdict = self
            .send(segment)
            .is_ok()
            .then_some((d.verdict, d.severity));
    }

    /// Waits until the writer has committed everything sent before.
    pub fn flush(&self) {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        if self.tx.send(Msg::Flush(tx)).is_ok() {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
        }
    }
}
