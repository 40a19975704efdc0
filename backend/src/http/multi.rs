//! A viewer of several hosts (a hub, or `serve --peer`): `hello` with every host, a `summary` of
//! every host each tick (the overview), and full frames, diagnoses and host states only for the
//! hosts its `subscribe { hosts }` selects (all of them until it says otherwise).
//!
//! Each selected host runs the one-host [`session`] logic (backfill, lag catch-up, host state) as
//! a task writing into this session's bounded queue, so a slow viewer lags per host and catches up
//! from that host's ring, exactly as with one host; this task owns the socket, the client's
//! messages, the summaries and the share lease.

use super::session::{self, Ended, Raw, SessionParams, ViewLease, lease_ended};
use crate::hub::fleet::Fleet;
use axum::extract::ws::Message;
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use shared::{ClientMsg, ErrorCode, ServerMsg};
use std::collections::BTreeMap;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, PollSender};

/// Messages the per-host tasks may queue ahead of the socket.
const QUEUE: usize = 64;

pub struct MultiParams {
    pub fleet: Fleet,
    pub version: &'static str,
    pub since_seq: Option<u64>,
    pub cancel: CancellationToken,
    pub lease: Option<ViewLease>,
    pub show_users: bool,
}

/// Which hosts get full frames, resuming after which seq.
struct Selection {
    hosts: Vec<usize>,
    since: BTreeMap<usize, u64>,
    /// The client takes chart samples (see `ClientMsg::Subscribe`).
    samples: bool,
    /// At most this many frames per host backfilled (see `ClientMsg::Subscribe`).
    max_frames: Option<usize>,
}

/// Runs one multi-host session until the client leaves, the server stops or the lease ends.
pub async fn run<S, R, E>(params: MultiParams, mut sink: S, mut stream: R) -> Ended
where
    S: Sink<Message> + Unpin,
    R: Stream<Item = Result<Message, E>> + Unpin,
    E: std::fmt::Display,
{
    let fleet = params.fleet.clone();
    let interval_ms = fleet.hubs().first().map_or(1000, |h| {
        u64::try_from(h.interval().as_millis()).unwrap_or(u64::MAX)
    });
    let hello = ServerMsg::hello(
        fleet.names(),
        interval_ms,
        params.version,
        crate::hub::server_instance(),
    );
    if send_msg(&mut sink, &hello).await.is_err() {
        return Ended::WriteFailed;
    }
    let mut summaries = fleet.watch_summaries();
    for m in fleet.latest_summaries() {
        if send(&mut sink, Message::Text(m)).await.is_err() {
            return Ended::WriteFailed;
        }
    }
    let (tx, mut rx) = mpsc::channel::<Message>(QUEUE);
    let mut hosts = Hosts::default();
    // As with one host: a first `subscribe` within the wait decides, else every host from the start.
    let first = match tokio::time::timeout(session::FIRST_MESSAGE_WAIT, stream.next()).await {
        Err(_) => None,
        Ok(None) => return Ended::ClientClosed,
        Ok(Some(m)) => Some(m),
    };
    let all = Selection {
        hosts: (0..fleet.len()).collect(),
        since: params
            .since_seq
            .map(|s| (0..fleet.len()).map(|i| (i, s)).collect())
            .unwrap_or_default(),
        samples: false,
        max_frames: None,
    };
    match first.map(|m| classify(&fleet, m)) {
        Some(Incoming::Select(sel)) => hosts.select(&params, &tx, sel),
        Some(Incoming::Reply(msg)) => {
            hosts.select(&params, &tx, all);
            if send_msg(&mut sink, &msg).await.is_err() {
                return Ended::WriteFailed;
            }
        }
        Some(Incoming::Ignore) | None => hosts.select(&params, &tx, all),
        Some(Incoming::End(e)) => return close(sink, e).await,
    }
    let lease_end = lease_ended(params.lease.as_ref());
    tokio::pin!(lease_end);
    let ended = loop {
        let step = tokio::select! {
            () = params.cancel.cancelled() => Err(Ended::ServerShutdown),
            ended = &mut lease_end => Err(ended),
            queued = rx.recv() => match queued {
                Some(m) => send(&mut sink, m).await,
                None => Err(Ended::WriteFailed),
            },
            summary = summaries.recv() => match summary {
                Ok(m) => send(&mut sink, Message::Text(m.message)).await,
                Err(RecvError::Lagged(_)) => {
                    let mut r = Ok(());
                    for m in fleet.latest_summaries() {
                        r = send(&mut sink, Message::Text(m)).await;
                        if r.is_err() { break; }
                    }
                    r
                }
                Err(RecvError::Closed) => Err(Ended::ServerShutdown),
            },
            incoming = stream.next() => match incoming {
                None => Err(Ended::ClientClosed),
                Some(m) => match classify(&fleet, m) {
                    Incoming::Select(sel) => {
                        hosts.select(&params, &tx, sel);
                        Ok(())
                    }
                    Incoming::Reply(msg) => send_msg(&mut sink, &msg).await,
                    Incoming::Ignore => Ok(()),
                    Incoming::End(e) => Err(e),
                },
            },
        };
        if let Err(e) = step {
            break e;
        }
    };
    hosts.stop();
    close(sink, ended).await
}

/// The running per-host tasks.
#[derive(Default)]
struct Hosts {
    running: Vec<(usize, CancellationToken)>,
}

impl Hosts {
    fn stop(&mut self) {
        for (_, c) in self.running.drain(..) {
            c.cancel();
        }
    }

    /// Runs the per-host tasks `sel` asks for: hosts no longer selected stop; a host already
    /// running goes on as it is (no second backfill), unless the `subscribe` named a seq to
    /// resume it from; a newly selected host starts, from its `since` if given.
    fn select(&mut self, params: &MultiParams, tx: &mpsc::Sender<Message>, sel: Selection) {
        let mut kept = Vec::new();
        for (i, cancel) in self.running.drain(..) {
            if sel.hosts.contains(&i) && !sel.since.contains_key(&i) {
                kept.push((i, cancel));
            } else {
                cancel.cancel();
            }
        }
        self.running = kept;
        for i in sel.hosts {
            if self.running.iter().any(|(r, _)| *r == i) {
                continue;
            }
            let Some(hub) = params.fleet.hubs().get(i).cloned() else {
                continue;
            };
            let cancel = params.cancel.child_token();
            let p = SessionParams {
                hub,
                version: params.version,
                since_seq: sel.since.get(&i).copied(),
                cancel: cancel.clone(),
                lease: None,
                show_users: params.show_users,
                greet: false,
                samples: sel.samples,
                max_frames: sel.max_frames,
            };
            let sink = PollSender::new(tx.clone());
            tokio::spawn(async move {
                let quiet =
                    futures_util::stream::pending::<Result<Message, std::convert::Infallible>>();
                session::run(p, sink, quiet).await
            });
            self.running.push((i, cancel));
        }
    }
}

enum Incoming {
    Select(Selection),
    Reply(ServerMsg),
    Ignore,
    End(Ended),
}

fn bad(message: String) -> Incoming {
    Incoming::Reply(ServerMsg::Error {
        code: ErrorCode::BadMessage,
        message,
    })
}

fn classify<E: std::fmt::Display>(fleet: &Fleet, incoming: Result<Message, E>) -> Incoming {
    let text = match session::raw(incoming) {
        Raw::Text(t) => t,
        Raw::Reply(m) => return Incoming::Reply(m),
        Raw::Ignore => return Incoming::Ignore,
        Raw::End(e) => return Incoming::End(e),
    };
    match serde_json::from_str::<ClientMsg>(text.as_str()) {
        Ok(ClientMsg::Ping) => Incoming::Reply(ServerMsg::Pong),
        Ok(ClientMsg::Subscribe {
            hosts,
            since_seq,
            since,
            samples,
            max_frames,
        }) => {
            let names = hosts.unwrap_or_else(|| fleet.names());
            let mut picked = Vec::new();
            let mut unknown = Vec::new();
            for n in &names {
                match fleet.find(n) {
                    Some((i, _)) if !picked.contains(&i) => picked.push(i),
                    Some(_) => {}
                    None => unknown.push(n.clone()),
                }
            }
            if !unknown.is_empty() {
                return Incoming::Reply(ServerMsg::Error {
                    code: ErrorCode::UnknownHost,
                    message: format!(
                        "not served here: {}; hosts: {}",
                        unknown.join(", "),
                        fleet.names().join(", ")
                    ),
                });
            }
            let since = picked
                .iter()
                .filter_map(|&i| {
                    let name = fleet.hubs()[i].host();
                    since
                        .as_ref()
                        .and_then(|m| m.get(name).copied())
                        .or(since_seq)
                        .map(|s| (i, s))
                })
                .collect();
            Incoming::Select(Selection {
                hosts: picked,
                since,
                samples,
                max_frames: max_frames.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            })
        }
        Err(e) => bad(format!("cannot read message: {e}")),
    }
}

async fn send<S: Sink<Message> + Unpin>(sink: &mut S, msg: Message) -> Result<(), Ended> {
    match tokio::time::timeout(session::WRITE_TIMEOUT, sink.send(msg)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(Ended::WriteFailed),
    }
}

async fn send_msg<S: Sink<Message> + Unpin>(sink: &mut S, msg: &ServerMsg) -> Result<(), Ended> {
    let text = serde_json::to_string(msg).map_err(|_| Ended::WriteFailed)?;
    send(sink, Message::Text(text.into())).await
}

async fn close<S: Sink<Message> + Unpin>(mut sink: S, ended: Ended) -> Ended {
    session::say_goodbye(&mut sink, &ended).await;
    ended
}
