//! One WebSocket viewer, of one host or several (a hub, `serve --peer`): streams the hosts it is
//! served to a client, following the `/ws` protocol.
//!
//! Generic over `Sink`/`Stream` of axum messages so tests can drive it with channels; the upgrade
//! handler in [`super::app`] only splits the socket and picks the hosts. Order: `hello` with the
//! hosts, every host's latest `summary` (only when there are several: [`overview`]), then the
//! client's first `subscribe` (taken from the URL's `since_seq`, or waited for up to
//! [`FIRST_MESSAGE_WAIT`]) picks the hosts it takes in full. Each of those is a [`HostStream`]
//! (backfill, `host_status`, the current `diagnosis`, then live `frame`s and each new `diagnosis`,
//! lag caught up from the ring, `reset` when a replay jumps), all polled in this session's own
//! task ([`hosts`]): while the socket is slow they wait unpolled, lag, and catch up from the ring.
//! Client messages are read by [`client`]: bad ones get `error`; oversized ones close the socket
//! with 1009.
//!
//! A share-link viewer's session carries a [`ViewLease`]: it hides user names unless the link
//! shows them, and ends (an `error` of `share_revoked` / `share_expired`, then close code 4403) the
//! moment the link is revoked or expires.

mod client;
mod history;
mod host_stream;
mod hosts;
mod lease;
mod overview;
pub mod query;
mod socket;

pub use host_stream::{HostStream, Start};
pub use lease::{ViewLease, lease_ended};
pub use socket::{CLOSE_SHARE_ENDED, Raw, raw, say_goodbye};

use crate::host_feed::fleet::Fleet;
use axum::extract::ws::Message;
use client::{Incoming, classify};
use futures_util::{Sink, Stream, StreamExt};
use hosts::{Hosts, Selection};
use overview::Overview;
use shared::ServerMsg;
use socket::{write, write_msg};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long the server waits for the client's first `subscribe` before backfilling everything.
pub const FIRST_MESSAGE_WAIT: Duration = Duration::from_millis(250);
/// A client that accepts nothing for this long is dropped (lag alone never drops a client).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Most frames per `backfill` message.
pub const BACKFILL_CHUNK: usize = 120;
/// Most bytes of frames per `backfill` message (a single larger frame still goes alone). Half the
/// socket's write-buffer limit ([`WS_WRITE_BUFFER`]): tungstenite refuses a message
/// larger than that limit outright, which would end the session.
pub const BACKFILL_CHUNK_BYTES: usize = WS_WRITE_BUFFER / 2;
/// Most bytes tungstenite queues towards one client; a single message larger than this is refused
/// (the session ends), so backfills are chunked below it. A slow client makes `send` wait on the
/// flush, and the session lags behind the hub instead.
pub const WS_WRITE_BUFFER: usize = 256 * 1024;

/// Why a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    ClientClosed,
    ServerShutdown,
    TooBig,
    WriteFailed,
    ShareRevoked,
    ShareExpired,
    /// A link for one host whose host is not served here: it sees nothing.
    HostGone,
}

/// What the session needs besides the socket.
#[derive(Clone)]
pub struct SessionParams {
    /// The hosts this viewer is served, in the order `hello` lists them: every host of the
    /// server, or the one a share link shows ([`Fleet::single`]).
    pub fleet: Fleet,
    pub version: &'static str,
    /// `since_seq` given in the URL: every host resumes after it, and the session does not wait
    /// for a first `subscribe`.
    pub since_seq: Option<u64>,
    pub cancel: CancellationToken,
    /// Set for a share-link viewer; `None` for the admin.
    pub lease: Option<ViewLease>,
    /// Whether frames keep their user names.
    pub show_users: bool,
    /// The history of the server's own host, for `history_query` and `moment_query` (`None`:
    /// they are answered `query_failed`).
    pub history: Option<query::Access>,
}

/// Runs one session until the client leaves, the server shuts down, the lease ends, or the socket
/// fails.
pub async fn run<S, R, E>(params: SessionParams, mut sink: S, mut stream: R) -> Ended
where
    S: Sink<Message> + Unpin,
    R: Stream<Item = Result<Message, E>> + Unpin,
    E: std::fmt::Display,
{
    let SessionParams {
        fleet,
        version,
        since_seq,
        cancel,
        lease,
        show_users,
        history,
    } = params;
    let interval_ms = fleet.hubs().first().map_or(1000, |h| {
        u64::try_from(h.interval().as_millis()).unwrap_or(u64::MAX)
    });
    let hello = ServerMsg::hello(
        fleet.names(),
        interval_ms,
        version,
        crate::host_feed::server_instance(),
    );
    if write_msg(&mut sink, &hello).await.is_err() {
        return Ended::WriteFailed;
    }
    let mut overview = Overview::watch(&fleet);
    let latest = overview.latest();
    if !latest.is_empty() && write(&mut sink, latest).await.is_err() {
        return Ended::WriteFailed;
    }
    let mut hosts = Hosts::new(fleet.clone(), show_users);
    let everything = Selection::everything(&fleet, since_seq);
    if since_seq.is_some() {
        hosts.select(everything);
    } else {
        match tokio::time::timeout(FIRST_MESSAGE_WAIT, stream.next()).await {
            Err(_) => hosts.select(everything),
            Ok(None) => return Ended::ClientClosed,
            Ok(Some(incoming)) => match classify(&fleet, incoming) {
                Incoming::Subscribe(sel) => hosts.select(sel),
                Incoming::Reply(msg) => {
                    hosts.select(everything);
                    if write_msg(&mut sink, &msg).await.is_err() {
                        return Ended::WriteFailed;
                    }
                }
                Incoming::Query(q) => {
                    hosts.select(everything);
                    let msg = query::answer(history.as_ref(), q, show_users).await;
                    if write_msg(&mut sink, &msg).await.is_err() {
                        return Ended::WriteFailed;
                    }
                }
                Incoming::Ignore => hosts.select(everything),
                Incoming::End(ended) => return close(sink, ended).await,
            },
        }
    }

    let lease_end = lease_ended(lease.as_ref());
    tokio::pin!(lease_end);
    let ended = loop {
        // The client's messages first, then the summaries, then the hosts: a slow socket always
        // has some host's batch ready, and must not keep a `subscribe` that narrows the
        // selection, a `ping` or a Close from being read.
        let step = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Ended::ServerShutdown),
            ended = &mut lease_end => Err(ended),
            incoming = stream.next() => match incoming {
                None => Err(Ended::ClientClosed),
                Some(incoming) => match classify(&fleet, incoming) {
                    Incoming::Subscribe(sel) => {
                        hosts.select(sel);
                        Ok(())
                    }
                    Incoming::Reply(msg) => write_msg(&mut sink, &msg).await,
                    Incoming::Query(q) => {
                        let msg = query::answer(history.as_ref(), q, show_users).await;
                        write_msg(&mut sink, &msg).await
                    }
                    Incoming::Ignore => Ok(()),
                    Incoming::End(ended) => Err(ended),
                },
            },
            summaries = overview.next() => match summaries {
                Ok(msgs) if msgs.is_empty() => Ok(()),
                Ok(msgs) => write(&mut sink, msgs).await,
                Err(ended) => Err(ended),
            },
            batch = hosts.next(), if !hosts.is_empty() => match batch {
                Some(Ok(msgs)) => write(&mut sink, msgs).await,
                Some(Err(ended)) => Err(ended),
                None => Ok(()),
            },
        };
        if let Err(ended) = step {
            break ended;
        }
    };
    close(sink, ended).await
}

async fn close<S: Sink<Message> + Unpin>(mut sink: S, ended: Ended) -> Ended {
    say_goodbye(&mut sink, &ended).await;
    ended
}
