//! Jumps in a host's history: a replay that seeks replaces the hub's history and diagnosis at
//! once, and holds the host while paused so it does not go stale.

use super::Hub;
use shared::Frame;
use shared::diagnosis::Diagnosis;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio::sync::watch;

impl Hub {
    /// Replaces the host's history with `frames` (oldest first; the newest ones the ring holds)
    /// and its diagnosis with `diagnosis`, at once: a replay that jumps to another moment, or a
    /// peer that did (then `frames` is empty and its new history follows as frames). The frames
    /// get new seqs, above every earlier one. Sessions see the change through
    /// [`Hub::watch_resets`]: they tell their client `reset` and backfill the new history.
    pub fn replace_history(
        &self,
        frames: &mut [Frame],
        diagnosis: Option<&Diagnosis>,
    ) -> Result<(), serde_json::Error> {
        let _turn = self.turn();
        let first = self.inner.next_seq.load(Ordering::Relaxed);
        let keep = frames.len().min(self.history_capacity());
        let skip = frames.len() - keep;
        let mut entries = Vec::with_capacity(keep);
        let mut seq = first;
        for frame in &mut frames[skip..] {
            entries.push(self.encode(seq, frame)?);
            seq = seq.saturating_add(1);
        }
        let last = seq.saturating_sub(1);
        let diagnosis = diagnosis
            .map(|d| self.encode_diagnosis(last, d))
            .transpose()?;
        {
            let mut state = self.state();
            state.ring.clear();
            for e in entries {
                state.ring.push(e);
            }
            state.last_publish = Some(Instant::now());
            state.floor = first;
            self.inner.next_seq.store(seq, Ordering::Relaxed);
        }
        if diagnosis.is_some() {
            self.inner.diagnosis.send_replace(diagnosis);
        }
        self.inner.resets.send_modify(|n| *n = n.wrapping_add(1));
        Ok(())
    }

    /// Bumped on every [`Hub::replace_history`].
    pub fn watch_resets(&self) -> watch::Receiver<u64> {
        self.inner.resets.subscribe()
    }

    /// The seq of the first frame after the latest [`Hub::replace_history`] (0 if none): a client
    /// holding only frames below it holds another history.
    pub fn reset_floor(&self) -> u64 {
        self.state().floor
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
