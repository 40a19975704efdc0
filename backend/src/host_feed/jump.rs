//! Jumps in a host's history: a replay that seeks replaces the hub's history and diagnosis at
//! once (with the new history's older frames also encoded as chart samples, so a viewer gets them
//! in a tenth of the bytes), and holds the host while paused so it does not go stale.

use super::HostFeed;
use super::encoded::Encoded;
use shared::Frame;
use shared::diagnosis::Diagnosis;
use shared::history::Sample;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio::sync::watch;

/// Most bytes of samples per `history` message (well under the socket's write-buffer limit).
const HISTORY_CHUNK_BYTES: usize = 96 * 1024;

/// A jump's history as `history` messages: the chart samples of its frames with seq from the
/// jump's first up to, not including, `whole_from`; those from it on go as whole frames.
#[derive(Debug)]
pub struct JumpHistory {
    pub whole_from: u64,
    pub samples: usize,
    pub messages: Vec<Encoded>,
}

/// `history` messages for the chart samples `samples` (JSON, oldest first), each under
/// [`HISTORY_CHUNK_BYTES`] (a single larger sample still goes alone).
pub fn history_messages<'a>(
    host: &str,
    samples: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Encoded>, serde_json::Error> {
    let head = format!(
        r#"{{"type":"history","host":{},"samples":["#,
        serde_json::to_string(host)?
    );
    let mut messages = Vec::new();
    let mut text = head.clone();
    for one in samples {
        if text.len() > head.len() && text.len() + one.len() + 2 > HISTORY_CHUNK_BYTES {
            text.push_str("]}");
            messages.push(Encoded::from(std::mem::replace(&mut text, head.clone())));
        }
        if text.len() > head.len() {
            text.push(',');
        }
        text.push_str(one);
    }
    if text.len() > head.len() {
        text.push_str("]}");
        messages.push(Encoded::from(text));
    }
    Ok(messages)
}

impl HostFeed {
    /// Replaces the host's history with `frames` (oldest first; the newest ones the ring holds)
    /// and its diagnosis with `diagnosis`, at once: a replay that jumps to another moment, or a
    /// peer that did (then `frames` is empty and its new history follows as frames). The frames
    /// get new seqs, above every earlier one. Sessions see the change through
    /// [`HostFeed::watch_resets`]: they tell their client `reset` and backfill the new history.
    pub fn replace_history(
        &self,
        frames: &mut [Frame],
        diagnosis: Option<&Diagnosis>,
    ) -> Result<(), serde_json::Error> {
        let mut turn = self.turn();
        let first = self.inner.next_seq.load(Ordering::Relaxed);
        let keep = frames.len().min(self.history_capacity());
        let skip = frames.len() - keep;
        let mut entries = Vec::with_capacity(keep);
        let mut seq = first;
        for frame in &mut frames[skip..] {
            entries.push(self.encode(&mut turn, seq, frame)?);
            seq = seq.saturating_add(1);
        }
        let last = seq.saturating_sub(1);
        let diagnosis = diagnosis
            .map(|d| self.encode_diagnosis(last, d))
            .transpose()?;
        // All but the newest frame also as samples: the page's charts need no more of them.
        let older = &frames[skip..frames.len().saturating_sub(1).max(skip)];
        let samples = older
            .iter()
            .map(|f| serde_json::to_string(&Sample::of(f)))
            .collect::<Result<Vec<String>, _>>()?;
        let jump = (!samples.is_empty())
            .then(|| {
                history_messages(self.host(), samples.iter().map(String::as_str)).map(|messages| {
                    JumpHistory {
                        whole_from: last,
                        samples: samples.len(),
                        messages,
                    }
                })
            })
            .transpose()?
            .map(Arc::new);
        {
            let mut state = self.state();
            state.ring.clear();
            for e in entries {
                state.ring.push(e);
            }
            state.last_publish = Some(Instant::now());
            state.floor = first;
            state.jump = jump;
            self.inner.next_seq.store(seq, Ordering::Relaxed);
        }
        if diagnosis.is_some() {
            self.inner.diagnosis.send_replace(diagnosis);
        }
        self.inner.resets.send_modify(|n| *n = n.wrapping_add(1));
        Ok(())
    }

    /// Bumped on every [`HostFeed::replace_history`].
    pub fn watch_resets(&self) -> watch::Receiver<u64> {
        self.inner.resets.subscribe()
    }

    /// The seq of the first frame after the latest [`HostFeed::replace_history`] (0 if none): a client
    /// holding only frames below it holds another history.
    pub fn reset_floor(&self) -> u64 {
        self.state().floor
    }

    /// The latest jump's history as `history` messages, while the ring still holds every frame
    /// of it (a viewer then sends those and only the newer frames whole).
    pub fn jump_history(&self) -> Option<Arc<JumpHistory>> {
        let state = self.state();
        let jump = state.jump.clone()?;
        (state.ring.first().map(|e| e.seq) == Some(state.floor)).then_some(jump)
    }

    /// How many frames the history ring holds at most.
    pub fn history_capacity(&self) -> usize {
        self.state().ring.capacity()
    }

    /// A replay on pause (or at its end) holds the host: no frame comes, yet it is not stale.
    pub fn hold(&self, held: bool) {
        self.state().held = held;
    }
}
