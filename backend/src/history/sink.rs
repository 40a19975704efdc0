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
    ids: HashMap<(Scope, String), u32>,
    next_id: u32,
    shape: Option<u64>,
    verdict: Option<(Verdict, Severity)>,
    counters: Arc<super::Counters>,
}

impl Sink {
    pub(super) fn new(
        tx: SyncSender<Msg>,
        known: HashMap<String, u32>,
        counters: Arc<super::Counters>,
    ) -> Sink {
        let mut ids = HashMap::new();
        let mut next_id = 0;
        for (key, base) in known {
            if let Some((scope, item)) = super::tables::parse_item_key(&key) {
                next_id = next_id.max(base + scope.metrics().len() as u32);
                ids.insert((scope, item), base);
            }
        }
        Sink {
            tx,
            ids,
            next_id,
            shape: None,
            verdict: None,
            counters,
        }
    }

    fn send(&self, msg: Msg) {
        match self.tx.try_send(msg) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// One frame: its figures, and its shape when that changed.
    pub fn frame(&mut self, frame: &Frame) {
        let mut values = Vec::with_capacity(64);
        let mut items = Vec::new();
        let (ids, next_id) = (&mut self.ids, &mut self.next_id);
        visit(frame, |scope, item, vs| {
            let base = match ids.get(&(scope, item.to_owned())) {
                Some(b) => *b,
                None => {
                    let base = *next_id;
                    *next_id += scope.metrics().len() as u32;
                    ids.insert((scope, item.to_owned()), base);
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
        let hash = shape_hash(frame);
        if self.shape != Some(hash) {
            self.shape = Some(hash);
            self.send(Msg::Shape {
                t_ms: frame.t_ms,
                hash,
                frame: Box::new(frame.clone()),
            });
        }
        self.send(Msg::Sample {
            t_ms: frame.t_ms,
            values,
            items,
        });
    }

    /// The newest diagnosis: a segment begins when its verdict or severity differs.
    pub fn diagnosis(&mut self, d: &Diagnosis) {
        let Some(t_ms) = d.t_ms else { return };
        if self.verdict == Some((d.verdict, d.severity)) {
            return;
        }
        self.verdict = Some((d.verdict, d.severity));
        self.send(Msg::Verdict(Box::new(Segment {
            from_ms: t_ms,
            to_ms: t_ms,
            verdict: d.verdict,
            severity: d.severity,
            findings: d.findings.clone(),
        })));
    }

    /// Waits until the writer has committed everything sent before.
    pub fn flush(&self) {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        if self.tx.send(Msg::Flush(tx)).is_ok() {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
        }
    }
}
