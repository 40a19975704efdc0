//! [`Sink`]: the sampler thread's end of the history. It turns each frame into `(series id,
//! value)`s (ids of new items made here, so the writer never looks a name up), notes a new shape
//! and a verdict that changed, and hands them to the writer thread without ever waiting: a full
//! queue drops the samples and counts them. Samples go over in one message a 10 s window (the
//! writer commits a window when the next begins anyway), so the writer wakes once a window, not
//! once a frame. A verdict or a flush sends the window's samples so far before it, so segments
//! see the samples in the order they happened; a shape goes at once (the writer files it by its
//! own time).

use super::read::Segment;
use super::tables::{ROW_SECONDS, item_key};
use shared::Frame;
use shared::diagnosis::{Diagnosis, Severity, Verdict};
use shared::series::{Scope, shape_hash, visit};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, TrySendError};

/// How far past the clock a frame may be stamped.
const FUTURE_MS: u64 = 3_600_000;

/// One frame's figures.
pub struct Sample {
    pub t_ms: u64,
    pub values: Vec<(u32, f64)>,
    /// Items first seen in this frame: key and base id.
    pub items: Vec<(String, u32)>,
}

/// What the writer thread is sent.
pub enum Msg {
    /// Frames of one 10 s window, in order; `closed` when the next window has begun (the
    /// writer commits the window then, as it would at the next window's first frame).
    Samples { samples: Vec<Sample>, closed: bool },
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
    /// The samples of the window not sent yet, and that window (`t_ms` in 10 s).
    pending: Vec<Sample>,
    window: Option<u64>,
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
            pending: Vec::new(),
            window: None,
        }
    }

    /// A sink that waits for the writer instead of dropping (an import).
    pub fn blocking(mut self) -> Sink {
        self.blocking = true;
        self
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
        if let Err(m) = &sent {
            let n = match m {
                Msg::Samples { samples, .. } => samples.len() as u64,
                _ => 1,
            };
            self.counters.dropped.fetch_add(n, Ordering::Relaxed);
        }
        sent
    }

    /// Sends the window's samples (`closed`: the window is over, said even with no samples
    /// left to send: a verdict may have sent them all); dropped (a full queue), their new items
    /// go with the next.
    fn send_pending(&mut self, closed: bool) {
        if self.pending.is_empty() && !(closed && self.window.is_some()) {
            return;
        }
        let samples = std::mem::take(&mut self.pending);
        if let Err(Msg::Samples { samples: lost, .. }) = self.send(Msg::Samples { samples, closed })
        {
            for s in lost {
                self.unsent_items.extend(s.items);
            }
        }
    }

    /// Sends `msg` after the samples before it.
    fn send_in_order(&mut self, msg: Msg) -> Result<(), Msg> {
        self.send_pending(false);
        self.send(msg)
    }

    /// One frame: its figures, and its shape when that changed. A frame stamped more than an
    /// hour past the clock is not kept (a wrong clock, a typo in a log): counted as dropped.
    pub fn frame(&mut self, frame: &Frame) {
        if frame.t_ms > crate::collect::sampler::now_ms() + FUTURE_MS {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut values = Vec::with_capacity(self.last_len);
        let mut items = Vec::new();
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
        // A new window: the last one's samples go now (the writer commits that window).
        let window = frame.t_ms / 1000 / ROW_SECONDS;
        if self.window != Some(window) {
            self.send_pending(true);
            self.window = Some(window);
        }
        let hash = shape_hash(frame);
        if self.shape != Some(hash) {
            let shape = Msg::Shape {
                t_ms: frame.t_ms,
                hash,
                frame: Box::new(frame.clone()),
            };
            // Not after the window's samples: the writer files a shape by its own time, and a
            // shape that changes every frame would otherwise cost a message each. A shape not
            // sent is sent with the next frame.
            self.shape = self.send(shape).is_ok().then_some(hash);
        }
        // Items named before whose samples were dropped (just now too) go with this one: an id
        // is never used without its item stored.
        let mut all_items = std::mem::take(&mut self.unsent_items);
        all_items.extend(items);
        self.pending.push(Sample {
            t_ms: frame.t_ms,
            values,
            items: all_items,
        });
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
            .send_in_order(segment)
            .is_ok()
            .then_some((d.verdict, d.severity));
    }

    /// Waits until the writer has committed everything given before.
    pub fn flush(&mut self) {
        self.send_pending(false);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        if self.tx.send(Msg::Flush(tx)).is_ok() {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
        }
    }
}

#[cfg(test)]
impl Sink {
    fn flush_pending_for_test(&mut self) {
        self.send_pending(false);
    }
}

impl Drop for Sink {
    /// The window's samples go to the writer, which commits them as it stops.
    fn drop(&mut self) {
        // Waiting is fine here: the writer drains the queue until the sink is gone.
        self.blocking = true;
        self.send_pending(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0_MS: u64 = 1_700_000_000_000; // on a 10 s boundary

    fn frame(i: u64) -> Frame {
        let mut f = Frame::empty("h", i + 1, T0_MS + i * 1000, 1000);
        f.system = Some(shared::SystemStats {
            cpu_pct: Some(shared::Percent(i as f64)),
            ..shared::SystemStats::default()
        });
        f
    }

    /// What the writer is sent: per message, `(kind, samples' seconds, closed)`.
    fn drain(rx: &std::sync::mpsc::Receiver<Msg>) -> Vec<(&'static str, Vec<u64>, bool)> {
        rx.try_iter()
            .map(|m| match m {
                Msg::Samples { samples, closed } => (
                    "samples",
                    samples.iter().map(|s| (s.t_ms - T0_MS) / 1000).collect(),
                    closed,
                ),
                Msg::Shape { .. } => ("shape", Vec::new(), false),
                Msg::Verdict(_) => ("verdict", Vec::new(), false),
                Msg::Flush(_) => ("flush", Vec::new(), false),
            })
            .collect()
    }

    /// A sink on a queue of `cap` messages: it, the writer's end, and its counters.
    fn sink(
        cap: usize,
    ) -> (
        Sink,
        std::sync::mpsc::Receiver<Msg>,
        Arc<super::super::Counters>,
    ) {
        let (tx, rx) = std::sync::mpsc::sync_channel(cap);
        let counters = Arc::new(super::super::Counters::default());
        (
            Sink::new(tx, HashMap::new(), counters.clone()),
            rx,
            counters,
        )
    }

    /// One message a 10 s window, sent when the next begins (closed), the rest when the sink
    /// goes; the shape at once.
    #[test]
    fn samples_go_once_a_window_in_order() {
        let (mut sink, rx, counters) = sink(64);
        for i in 0..25 {
            sink.frame(&frame(i));
        }
        let mut got = drain(&rx);
        drop(sink);
        got.extend(drain(&rx));
        let ten = |a: u64| (a..a + 10).collect::<Vec<u64>>();
        assert_eq!(
            got,
            vec![
                ("shape", vec![], false),
                ("samples", ten(0), true),
                ("samples", ten(10), true),
                ("samples", (20..25).collect(), false),
            ]
        );
        assert_eq!(counters.dropped.load(Ordering::Relaxed), 0);
    }

    /// A verdict on a window's last frame sends that window's samples before it; when the next
    /// window begins the writer is still told the window is over (it commits it then, not a
    /// window later).
    #[test]
    fn a_window_is_closed_even_when_a_verdict_sent_its_samples() {
        let (mut sink, rx, _) = sink(64);
        for i in 0..10 {
            sink.frame(&frame(i));
        }
        let mut d = shared::diagnosis::diagnose(&[], &Default::default(), None);
        d.t_ms = Some(T0_MS + 9_000);
        sink.diagnosis(&d);
        sink.frame(&frame(10));
        let got = drain(&rx);
        assert_eq!(
            got,
            vec![
                ("shape", vec![], false),
                ("samples", (0..10).collect(), false),
                ("verdict", vec![], false),
                ("samples", vec![], true),
            ]
        );
        drop(sink);
    }

    /// A full queue drops a window's samples, counted one a frame, and their new items go with
    /// the next samples sent (an id is never stored without its item).
    #[test]
    fn a_full_queue_drops_samples_and_keeps_their_items() {
        let (mut sink, rx, counters) = sink(1);
        for i in 0..20 {
            sink.frame(&frame(i));
        }
        // The shape filled the queue: the first window's 10 samples were dropped.
        assert_eq!(counters.dropped.load(Ordering::Relaxed), 10);
        assert!(matches!(rx.try_recv(), Ok(Msg::Shape { .. })));
        sink.flush_pending_for_test();
        match rx.try_recv() {
            Ok(Msg::Samples { samples, .. }) => {
                assert_eq!(samples.len(), 10);
                assert!(
                    !samples[0].items.is_empty(),
                    "the dropped window's items go with the next"
                );
            }
            _ => panic!("the second window"),
        }
    }
}
