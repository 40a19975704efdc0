//! The hosts a viewer takes in full ([`Hosts`]): one [`HostStream`] per selected host, polled
//! together in the session's own task, and which hosts a `subscribe` starts, restarts or stops.

use super::Ended;
use super::host_stream::{HostStream, Start};
use crate::host_feed::fleet::Fleet;
use axum::extract::ws::Message;
use futures_util::stream::{BoxStream, SelectAll};
use futures_util::{Stream, StreamExt};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Which hosts (indices into the fleet) get full frames, and which of them start over from where.
#[derive(Debug)]
pub struct Selection {
    pub hosts: Vec<usize>,
    /// Hosts that start over even if they stream already: after `Some(seq)`, or from everything
    /// held. A host selected and not named here goes on as it is, or starts from everything.
    pub restart: BTreeMap<usize, Option<u64>>,
    /// The viewer takes chart samples (see `ClientMsg::Subscribe`).
    pub samples: bool,
    /// At most this many frames per host backfilled (see `ClientMsg::Subscribe`).
    pub max_frames: Option<usize>,
}

impl Selection {
    /// Every host of `fleet`, each after `since_seq` if given: a viewer that sent no
    /// `subscribe`.
    pub fn everything(fleet: &Fleet, since_seq: Option<u64>) -> Selection {
        let hosts: Vec<usize> = (0..fleet.len()).collect();
        Selection {
            restart: hosts.iter().map(|&i| (i, since_seq)).collect(),
            hosts,
            samples: false,
            max_frames: None,
        }
    }
}

/// One selected host's stream, with the host it is of.
struct Running {
    host: usize,
    stream: BoxStream<'static, Result<Vec<Message>, Ended>>,
}

impl Stream for Running {
    type Item = Result<Vec<Message>, Ended>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.stream.poll_next_unpin(cx)
    }
}

/// The selected hosts' streams of one viewer.
pub struct Hosts {
    fleet: Fleet,
    show_users: bool,
    running: SelectAll<Running>,
}

impl Hosts {
    /// None selected yet, of `fleet`.
    pub fn new(fleet: Fleet, show_users: bool) -> Hosts {
        Hosts {
            fleet,
            show_users,
            running: SelectAll::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// The next batch of any selected host, to go out in one write; `None` with none selected.
    /// Cancel-safe: an unfinished step stays with its host's stream.
    pub async fn next(&mut self) -> Option<Result<Vec<Message>, Ended>> {
        self.running.next().await
    }

    /// Streams what `sel` asks for: hosts no longer selected stop; a host already streaming goes
    /// on as it is (no second backfill), unless `sel` restarts it; a newly selected host starts,
    /// from where `sel` says if it does.
    pub fn select(&mut self, sel: Selection) {
        let kept: Vec<Running> = std::mem::take(&mut self.running)
            .into_iter()
            .filter(|r| sel.hosts.contains(&r.host) && !sel.restart.contains_key(&r.host))
            .collect();
        let started: Vec<usize> = kept.iter().map(|r| r.host).collect();
        self.running.extend(kept);
        for i in sel.hosts {
            if started.contains(&i) {
                continue;
            }
            let Some(hub) = self.fleet.hubs().get(i).cloned() else {
                continue;
            };
            let start = Start {
                since: sel.restart.get(&i).copied().flatten(),
                samples: sel.samples,
                max_frames: sel.max_frames,
            };
            self.running.push(Running {
                host: i,
                stream: HostStream::start(hub, start, self.show_users).into_stream(),
            });
        }
    }
}
