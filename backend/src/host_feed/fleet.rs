//! Every host one server shows: the host it samples (`serve`) and its peers' (`hub`, `serve
//! --peer`), each with a [`HostFeed`] of its own (history, seq, diagnosis), in a fixed order.
//!
//! The fleet also keeps the overview current: one task per host turns each new frame (and each
//! change of the host's state, such as a peer going stale or down) into a `summary` message,
//! encoded once and broadcast to every viewer, so an overview never needs full frames.

use super::HostFeed;
use super::encoded::Encoded;
use shared::{HostState, HostSummary, ServerMsg};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

/// Summaries queued per viewer before it skips to the newest ones.
const SUMMARY_CHANNEL: usize = 1024;

/// One summary message, and which host it is for.
#[derive(Clone, Debug)]
pub struct SummaryMsg {
    pub host: usize,
    pub message: Encoded,
}

#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

struct Inner {
    hubs: Vec<HostFeed>,
    summaries: broadcast::Sender<SummaryMsg>,
    latest: Mutex<Vec<Option<Encoded>>>,
}

impl Fleet {
    /// The fleet of one host (plain `serve`).
    pub fn single(hub: HostFeed) -> Fleet {
        Fleet::new(vec![hub])
    }

    /// `hubs` in the order viewers see them; names must be unique (the caller checks).
    pub fn new(hubs: Vec<HostFeed>) -> Fleet {
        let n = hubs.len();
        // A fleet of one has no overview (its sessions send no summaries): no room is set aside
        // for them, as every share link for one host makes a fleet of its own.
        let room = if n > 1 { SUMMARY_CHANNEL } else { 1 };
        Fleet {
            inner: Arc::new(Inner {
                hubs,
                summaries: broadcast::channel(room).0,
                latest: Mutex::new(vec![None; n]),
            }),
        }
    }

    pub fn hubs(&self) -> &[HostFeed] {
        &self.inner.hubs
    }

    pub fn len(&self) -> usize {
        self.inner.hubs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.hubs.is_empty()
    }

    /// The host named `name`, with its index.
    pub fn find(&self, name: &str) -> Option<(usize, &HostFeed)> {
        self.inner
            .hubs
            .iter()
            .enumerate()
            .find(|(_, h)| h.host() == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.inner
            .hubs
            .iter()
            .map(|h| h.host().to_owned())
            .collect()
    }

    /// New summaries as they are made.
    pub fn watch_summaries(&self) -> broadcast::Receiver<SummaryMsg> {
        self.inner.summaries.subscribe()
    }

    /// The newest summary of every host that has one.
    pub fn latest_summaries(&self) -> Vec<Encoded> {
        self.latest().iter().flatten().cloned().collect()
    }

    fn latest(&self) -> std::sync::MutexGuard<'_, Vec<Option<Encoded>>> {
        self.inner
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The summary of host `i` as it stands now.
    pub fn summary_of(&self, i: usize) -> Option<HostSummary> {
        let hub = self.inner.hubs.get(i)?;
        let (state, _age, error) = hub.host_status();
        let Some(entry) = hub.latest() else {
            return Some(HostSummary::bare(state, error));
        };
        let frame: shared::Frame = serde_json::from_str(entry.frame_json()).ok()?;
        // Summaries go to every viewer of the overview alike: never with user names.
        let diagnosis = hub.latest_diagnosis().and_then(|d| {
            serde_json::from_str::<shared::diagnosis::Diagnosis>(d.diagnosis_json_for(false)).ok()
        });
        Some(HostSummary::of(state, &frame, diagnosis.as_ref(), error))
    }

    fn publish_summary(&self, i: usize) {
        let Some(summary) = self.summary_of(i) else {
            return;
        };
        let msg = ServerMsg::Summary {
            host: self.inner.hubs[i].host().to_owned(),
            summary: Box::new(summary),
        };
        let Ok(text) = serde_json::to_string(&msg) else {
            return;
        };
        let message = Encoded::from(text);
        self.latest()[i] = Some(message.clone());
        let _ = self.inner.summaries.send(SummaryMsg { host: i, message });
    }

    /// Starts the per-host summary tasks (only worth it with more than one host: a single host's
    /// page needs no overview). They end with `cancel`.
    pub fn spawn_summaries(&self, cancel: CancellationToken) {
        for i in 0..self.len() {
            let fleet = self.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move { fleet.summarize(i, cancel).await });
        }
    }

    async fn summarize(self, i: usize, cancel: CancellationToken) {
        let hub = self.inner.hubs[i].clone();
        let mut frames = hub.subscribe().frames;
        // The state changes without frames too (a peer going stale or down): look each interval.
        let mut tick = tokio::time::interval(hub.interval().max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut last_state: Option<(HostState, Option<String>)> = None;
        self.publish_summary(i);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                got = frames.recv() => match got {
                    Ok(_) | Err(RecvError::Lagged(_)) => {
                        let (state, _, error) = hub.host_status();
                        last_state = Some((state, error));
                        self.publish_summary(i);
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = tick.tick() => {
                    let (state, _, error) = hub.host_status();
                    let now = Some((state, error));
                    if now != last_state {
                        last_state = now;
                        self.publish_summary(i);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_feed::HostFeedConfig;
    use shared::Frame;

    fn hub(name: &str) -> HostFeed {
        HostFeed::new(
            name,
            Duration::from_millis(100),
            HostFeedConfig::for_interval(Duration::from_millis(100)),
        )
    }

    #[tokio::test]
    async fn summaries_follow_frames_and_states() {
        let fleet = Fleet::new(vec![hub("ssh://a"), hub("b:7575")]);
        let mut rx = fleet.watch_summaries();
        let cancel = CancellationToken::new();
        fleet.spawn_summaries(cancel.clone());
        fleet.hubs()[1].set_link(HostState::Down, Some("connection refused".into()));
        fleet.hubs()[0]
            .publish(Frame::empty("gpu-a", 0, 1_000, 100))
            .expect("publish");
        let mut seen_a_up = false;
        let mut seen_b_down = false;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while !(seen_a_up && seen_b_down) {
            let msg = tokio::time::timeout_at(deadline, rx.recv())
                .await
                .expect("summaries in time")
                .expect("open");
            let v: serde_json::Value = serde_json::from_str(msg.message.as_str()).expect("json");
            assert_eq!(v["type"], "summary");
            match (v["host"].as_str(), v["summary"]["state"].as_str()) {
                (Some("ssh://a"), Some("up")) => {
                    assert_eq!(v["summary"]["hostname"], "gpu-a");
                    seen_a_up = true;
                }
                (Some("b:7575"), Some("down")) => {
                    assert_eq!(v["summary"]["error"], "connection refused");
                    seen_b_down = true;
                }
                _ => {}
            }
        }
        assert_eq!(fleet.latest_summaries().len(), 2);
        assert_eq!(fleet.find("b:7575").map(|(i, _)| i), Some(1));
        cancel.cancel();
    }
}
