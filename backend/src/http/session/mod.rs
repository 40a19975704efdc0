//! One WebSocket viewer: streams the hub to a client, following the `/ws` protocol.
//!
//! Generic over `Sink`/`Stream` of axum messages so tests can drive it with channels; the upgrade
//! handler in [`super::app`] only splits the socket. Order: `hello`, then `backfill` after the client's
//! `since_seq` (taken from the URL, or from a `subscribe` sent within [`FIRST_MESSAGE_WAIT`]), then
//! `host_status` and the current `diagnosis`, then live `frame`s and each new `diagnosis`.
//! Falling behind the hub's channel is caught up from the history ring (as `backfill`), and
//! `lagged { skipped }` counts only the frames the ring no longer holds; the stream goes on. When a
//! replay jumps, the hub's history is replaced: the session says `reset` and sends the new one
//! ([`history`]). Bad client messages get `error`; oversized ones close the socket with 1009.
//!
//! A share-link viewer's session carries a [`ViewLease`]: it hides user names unless the link
//! shows them, and ends (an `error` of `share_revoked` / `share_expired`, then close code 4403) the
//! moment the link is revoked or expires.

mod history;
mod lease;
mod socket;

pub use lease::{ViewLease, lease_ended};
pub use socket::{CLOSE_SHARE_ENDED, Raw, raw, say_goodbye};

use crate::hub::{DiagnosisEntry, Entry, Hub};
use axum::extract::ws::Message;
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use shared::{ClientMsg, ErrorCode, HostState, ServerMsg};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// How long the server waits for the client's first `subscribe` before backfilling everything.
pub const FIRST_MESSAGE_WAIT: Duration = Duration::from_millis(250);
/// A client that accepts nothing for this long is dropped (lag alone never drops a client).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long past the hub's staleness limit a session looks again, so the hub already calls the
/// host stale when it does.
const STALE_MARGIN: Duration = Duration::from_millis(50);
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
    pub hub: Hub,
    pub version: &'static str,
    /// `since_seq` given in the URL: skips the wait for a first `subscribe`.
    pub since_seq: Option<u64>,
    pub cancel: CancellationToken,
    /// Set for a share-link viewer; `None` for the admin (and for one host of a multi-host
    /// session, whose lease the multi-host session watches).
    pub lease: Option<ViewLease>,
    /// Whether frames keep their user names.
    pub show_users: bool,
    /// Sends `hello` and waits for a first `subscribe`; off for one host of a multi-host session,
    /// which greeted the client and was told `since_seq` already.
    pub greet: bool,
    /// The client takes chart samples for the older frames of a whole-history backfill (its
    /// `subscribe` said so; a later `subscribe` may change it).
    pub samples: bool,
    /// At most this many of the newest frames in a backfill (a hub's share of this host's
    /// history; `subscribe { max_frames }`); `None`: every frame held.
    pub max_frames: Option<usize>,
}

struct Session<S> {
    sink: S,
    hub: Hub,
    /// Whether frames keep their user names.
    show_users: bool,
    /// Highest seq sent to this client, or (before any) the seq just before the first frame
    /// this session could have seen: every frame up to it is accounted for.
    cursor: u64,
    reported_state: Option<HostState>,
    /// See [`SessionParams::samples`].
    samples: bool,
    /// See [`SessionParams::max_frames`].
    max_frames: Option<usize>,
}

/// Runs one session until the client leaves, the server shuts down, or the socket fails.
pub async fn run<S, R, E>(params: SessionParams, sink: S, mut stream: R) -> Ended
where
    S: Sink<Message> + Unpin,
    R: Stream<Item = Result<Message, E>> + Unpin,
    E: std::fmt::Display,
{
    let SessionParams {
        hub,
        version,
        since_seq,
        cancel,
        lease,
        show_users,
        greet,
        samples,
        max_frames,
    } = params;
    let mut s = Session {
        sink,
        hub: hub.clone(),
        show_users,
        cursor: 0,
        reported_state: None,
        samples,
        max_frames,
    };
    let hello = ServerMsg::hello(
        vec![hub.host().to_owned()],
        u64::try_from(hub.interval().as_millis()).unwrap_or(u64::MAX),
        version,
        crate::hub::server_instance(),
    );
    if greet && s.send_msg(&hello).await.is_err() {
        return Ended::WriteFailed;
    }
    // A history replaced from here on is news to this client; before, it is what it backfills.
    let mut resets = hub.watch_resets();
    resets.mark_unchanged();
    // Subscribe before reading history so no frame falls between the two.
    let subscription = hub.subscribe();
    let mut rx = subscription.frames;
    s.cursor = subscription.next_seq.saturating_sub(1);
    let mut diagnoses = hub.watch_diagnosis();
    let mut diagnoses_open = true;

    let mut since = since_seq;
    if since.is_none() && greet {
        match tokio::time::timeout(FIRST_MESSAGE_WAIT, stream.next()).await {
            Err(_) => {}
            Ok(None) => return Ended::ClientClosed,
            Ok(Some(incoming)) => match s.classify(incoming) {
                Incoming::Subscribe(seq, samples, max_frames) => {
                    since = seq;
                    s.samples = samples;
                    s.max_frames = max_frames;
                }
                Incoming::Reply(msg) => {
                    if s.send_msg(&msg).await.is_err() {
                        return Ended::WriteFailed;
                    }
                }
                Incoming::Ignore => {}
                Incoming::End(ended) => return s.close(ended).await,
            },
        }
    }
    if s.backfill(since).await.is_err() {
        return Ended::WriteFailed;
    }
    // The current diagnosis right away, so the page never waits for the next change.
    let current = diagnoses.borrow_and_update().clone();
    if let Some(entry) = current
        && s.send(Message::Text(entry.message())).await.is_err()
    {
        return Ended::WriteFailed;
    }

    // The host's state changes only when frames start, stop or resume, so it is checked when a
    // frame arrives and once the next one is overdue: no timer of its own wakes a session each
    // interval while frames flow.
    let overdue_after = hub.stale_after() + STALE_MARGIN;
    let overdue = tokio::time::sleep(overdue_after);
    tokio::pin!(overdue);
    let mut watching = true;
    let lease_end = lease_ended(lease.as_ref());
    tokio::pin!(lease_end);
    loop {
        // In this order: a reset before the frames of the new history, and a frame before the
        // diagnosis published with it (they go out in one write).
        let step = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Ended::ServerShutdown),
            ended = &mut lease_end => Err(ended),
            changed = resets.changed() => match changed {
                Ok(()) => {
                    resets.mark_unchanged();
                    let subscription = hub.subscribe();
                    rx = subscription.frames;
                    s.cursor = subscription.next_seq.saturating_sub(1);
                    s.start_over(&mut diagnoses).await
                }
                Err(_) => Err(Ended::ServerShutdown),
            },
            live = rx.recv() => match live {
                Ok(entry) => {
                    // A new timer, not `reset`: tokio extends a reset deadline lazily, so the old
                    // one still fires and wakes the thread while frames flow; a dropped timer
                    // leaves the wheel at once. (The wheel still wakes where a deadline seconds
                    // away crosses one of its 4.096 s slots: 10 wake-ups without an event in
                    // 41 s with one viewer, against 19 with `reset`.)
                    overdue.set(tokio::time::sleep(overdue_after));
                    watching = true;
                    // A diagnosis published with this frame goes out in the same write.
                    let with = (diagnoses_open
                        && !resets.has_changed().unwrap_or(false)
                        && diagnoses.has_changed().unwrap_or(false))
                    .then(|| diagnoses.borrow_and_update().clone())
                    .flatten();
                    match s.send_frame(&entry, with.as_deref()).await {
                        Ok(()) => s.report_state().await,
                        failed => failed,
                    }
                }
                Err(RecvError::Lagged(_)) => s.catch_up().await,
                Err(RecvError::Closed) => Err(Ended::ServerShutdown),
            },
            incoming = stream.next() => match incoming {
                None => Err(Ended::ClientClosed),
                Some(incoming) => match s.classify(incoming) {
                    Incoming::Subscribe(seq, samples, max_frames) => {
                        s.samples = samples;
                        s.max_frames = max_frames;
                        s.backfill(seq).await
                    }
                    Incoming::Reply(msg) => s.send_msg(&msg).await,
                    Incoming::Ignore => Ok(()),
                    Incoming::End(ended) => Err(ended),
                },
            },
            // A diagnosis of a history this client has not been sent yet waits for the reset.
            changed = diagnoses.changed(), if diagnoses_open && !resets.has_changed().unwrap_or(false) => match changed {
                Ok(()) => {
                    let latest = diagnoses.borrow_and_update().clone();
                    match latest {
                        Some(entry) => s.send(Message::Text(entry.message())).await,
                        None => Ok(()),
                    }
                }
                Err(_) => {
                    diagnoses_open = false;
                    Ok(())
                }
            },
            () = &mut overdue, if watching => {
                watching = false;
                s.report_state().await
            }
        };
        if let Err(ended) = step {
            return s.close(ended).await;
        }
    }
}

enum Incoming {
    /// Resume after this seq; whether the client takes chart samples; at most how many frames.
    Subscribe(Option<u64>, bool, Option<usize>),
    Reply(ServerMsg),
    Ignore,
    End(Ended),
}

impl<S: Sink<Message> + Unpin> Session<S> {
    fn classify<E: std::fmt::Display>(&self, incoming: Result<Message, E>) -> Incoming {
        let t = match raw(incoming) {
            Raw::Text(t) => t,
            Raw::Reply(m) => return Incoming::Reply(m),
            Raw::Ignore => return Incoming::Ignore,
            Raw::End(e) => return Incoming::End(e),
        };
        match serde_json::from_str::<ClientMsg>(t.as_str()) {
            Ok(ClientMsg::Ping) => Incoming::Reply(ServerMsg::Pong),
            Ok(ClientMsg::Subscribe {
                hosts,
                since_seq,
                since,
                samples,
                max_frames,
            }) => {
                let max_frames = max_frames.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
                let since_seq = since
                    .and_then(|m| m.get(self.hub.host()).copied())
                    .or(since_seq);
                let unknown: Vec<String> = hosts
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|h| h != self.hub.host())
                    .collect();
                if unknown.is_empty() {
                    Incoming::Subscribe(since_seq, samples, max_frames)
                } else {
                    Incoming::Reply(ServerMsg::Error {
                        code: ErrorCode::UnknownHost,
                        message: format!(
                            "not served here: {}; hosts: {}",
                            unknown.join(", "),
                            self.hub.host()
                        ),
                    })
                }
            }
            Err(e) => Incoming::Reply(ServerMsg::Error {
                code: ErrorCode::BadMessage,
                message: format!("cannot read message: {e}"),
            }),
        }
    }

    async fn send(&mut self, msg: Message) -> Result<(), Ended> {
        self.write([msg]).await
    }

    /// Queues `msgs` and flushes once: one write to the socket, within [`WRITE_TIMEOUT`].
    async fn write(&mut self, msgs: impl IntoIterator<Item = Message>) -> Result<(), Ended> {
        let sink = &mut self.sink;
        let write = async move {
            for msg in msgs {
                sink.feed(msg).await?;
            }
            sink.flush().await
        };
        match tokio::time::timeout(WRITE_TIMEOUT, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(Ended::WriteFailed),
        }
    }

    async fn send_msg(&mut self, msg: &ServerMsg) -> Result<(), Ended> {
        let text = serde_json::to_string(msg).map_err(|_| Ended::WriteFailed)?;
        self.send(Message::Text(text.into())).await
    }

    /// Sends `entry` unless the client has it, and `diagnosis` after it in the same write.
    async fn send_frame(
        &mut self,
        entry: &Entry,
        diagnosis: Option<&DiagnosisEntry>,
    ) -> Result<(), Ended> {
        let frame =
            (entry.seq > self.cursor).then(|| Message::Text(entry.message_for(self.show_users)));
        self.cursor = self.cursor.max(entry.seq);
        let diagnosis = diagnosis.map(|d| Message::Text(d.message()));
        self.write(frame.into_iter().chain(diagnosis)).await
    }

    /// Sends `host_status` when the host's state differs from what this client was last told.
    async fn report_state(&mut self) -> Result<(), Ended> {
        let (state, _age, error) = self.hub.host_status();
        if self.reported_state == Some(state) {
            return Ok(());
        }
        self.reported_state = Some(state);
        let last_seen_ms = self.hub.latest().map(|e| e.t_ms);
        let msg = ServerMsg::HostStatus {
            host: self.hub.host().to_owned(),
            state,
            last_seen_ms,
            error,
        };
        self.send_msg(&msg).await
    }

    async fn close(mut self, ended: Ended) -> Ended {
        say_goodbye(&mut self.sink, &ended).await;
        ended
    }
}
