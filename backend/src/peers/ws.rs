//! The WebSocket [`Link`]: a `ws://` or `wss://` peer is a running `vramio serve`, reached over
//! TCP (and TLS, via tokio-rustls, for wss) and spoken to with tokio-tungstenite. The bearer token
//! rides only in the `Authorization` header (never the URL, never a log). The first message sent
//! is the feed's `subscribe` (so a reconnect resumes after the last frame seen); then every text
//! message goes through the [`Feed`].
//!
//! Bounded per peer: a message or frame over [`MAX_MESSAGE_BYTES`] ends the link before it is
//! buffered. A ping every [`PING_EVERY`] keeps a quiet but live peer's link up (its pong is data),
//! and no data at all for the read timeout (3 intervals + 10 s) ends it, so a stopped peer is
//! noticed even though its TCP connection stays open.

use super::PeerSink;
use super::feed::Feed;
use super::life::Link;
use super::spec::PeerSpec;
use super::tls::{TlsSetupError, client_config};
use crate::access::token::Token;
use futures_util::{SinkExt, StreamExt};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsProtoError};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode, header};
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Message, WebSocketConfig};

/// Largest message (and frame) accepted from a peer. A `backfill` is at most 128 KiB of frames
/// (the server's `BACKFILL_CHUNK_BYTES`) unless one frame alone is larger; 16 MiB leaves room for
/// a frame with thousands of processes while bounding what one peer can make the hub hold.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Resolving, connecting, the TLS and the WebSocket handshakes each give up after this.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the link pings the peer; the pong counts as data, so a live peer whose sampler is
/// stuck stays connected (the hub calls it stale) while a stopped one times out.
pub const PING_EVERY: Duration = Duration::from_secs(5);
/// Added to 3 intervals for the read timeout: room for a ping's round trip and a slow peer.
const READ_TIMEOUT_SLACK: Duration = Duration::from_secs(10);
/// At most this many characters of what a peer says (a close reason, an HTTP body) go into a
/// down reason.
const ECHO_CHARS: usize = 120;

/// Why a WebSocket link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum WsError {
    #[error("{0} is not a ws:// or wss:// peer")]
    NotWs(String),
    #[error("{host:?} is not a name a TLS certificate can carry")]
    ServerName { host: String },
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    #[error(transparent)]
    Token(#[from] crate::access::token::TokenError),
}

/// One `ws://` / `wss://` peer.
pub struct WsLink {
    /// `host:port` to resolve (IPv6 in brackets).
    authority: String,
    host: String,
    /// `ws://host:port/…/ws`, without any credential.
    url: String,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    token: Option<Token>,
    read_timeout: Duration,
}

impl WsLink {
    /// A link to `spec` (a ws/wss peer) that sends `token` as a bearer token and, for wss,
    /// trusts the PEM certificates in `ca` alone (else the system's roots). `interval` is the
    /// hub's sampling interval; no data for 3 of them + 10 s ends the link.
    pub fn new(
        spec: &PeerSpec,
        token: Option<Token>,
        ca: Option<PathBuf>,
        interval: Duration,
    ) -> Result<WsLink, WsError> {
        let PeerSpec::Ws {
            tls,
            host,
            port,
            path,
        } = spec
        else {
            return Err(WsError::NotWs(spec.name()));
        };
        let tls = if *tls {
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let name = rustls::pki_types::ServerName::try_from(bare.to_owned())
                .map_err(|_| WsError::ServerName { host: host.clone() })?;
            let connector = tokio_rustls::TlsConnector::from(client_config(ca.as_deref())?);
            Some((connector, name))
        } else {
            None
        };
        let scheme = if tls.is_some() { "wss" } else { "ws" };
        Ok(WsLink {
            authority: format!("{host}:{port}"),
            host: host.clone(),
            url: format!("{scheme}://{host}:{port}{}", endpoint(path)),
            tls,
            token,
            read_timeout: interval
                .saturating_mul(3)
                .saturating_add(READ_TIMEOUT_SLACK),
        })
    }

    /// Resolves and connects, trying each address in turn.
    async fn connect_tcp(&self) -> Result<TcpStream, String> {
        let addrs: Vec<SocketAddr> =
            tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host(&self.authority))
                .await
                .map_err(|_| {
                    format!(
                        "cannot resolve {}: no answer within {} s",
                        self.host,
                        CONNECT_TIMEOUT.as_secs()
                    )
                })?
                .map_err(|e| format!("cannot resolve {}: {e}", self.host))?
                .collect();
        let mut last = format!("cannot resolve {}: no address", self.host);
        for addr in addrs {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
                Ok(Ok(tcp)) => return Ok(tcp),
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    last = "connection refused".into();
                }
                Ok(Err(e)) => last = format!("cannot connect to {addr}: {e}"),
                Err(_) => {
                    last = format!(
                        "cannot connect to {addr}: no answer within {} s",
                        CONNECT_TIMEOUT.as_secs()
                    );
                }
            }
        }
        Err(last)
    }

    /// One connection, start to end; returns why it ended.
    async fn connect_and_stream(&self, feed: &mut Feed, sink: &dyn PeerSink) -> String {
        let tcp = match self.connect_tcp().await {
            Ok(tcp) => tcp,
            Err(reason) => return reason,
        };
        let _ = tcp.set_nodelay(true);
        let Some((connector, name)) = &self.tls else {
            return self.stream(tcp, feed, sink).await;
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name.clone(), tcp)).await {
            Ok(Ok(tls)) => self.stream(tls, feed, sink).await,
            Ok(Err(e)) => format!("TLS error: {e}"),
            Err(_) => format!(
                "TLS error: no handshake within {} s",
                CONNECT_TIMEOUT.as_secs()
            ),
        }
    }

    /// The WebSocket handshake over `io`, then the message loop.
    async fn stream<S>(&self, io: S, feed: &mut Feed, sink: &dyn PeerSink) -> String
    where
        S: AsyncRead + AsyncWrite + Unpin + Send,
    {
        let mut request = match self.url.as_str().into_client_request() {
            Ok(r) => r,
            Err(e) => return format!("cannot make the WebSocket request: {e}"),
        };
        if let Some(token) = &self.token {
            let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", token.expose())) else {
                return "the token cannot go in a header".into();
            };
            value.set_sensitive(true);
            request.headers_mut().insert(header::AUTHORIZATION, value);
        }
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_MESSAGE_BYTES));
        let handshake = tokio_tungstenite::client_async_with_config(request, io, Some(config));
        let mut ws = match tokio::time::timeout(CONNECT_TIMEOUT, handshake).await {
            Ok(Ok((ws, _response))) => ws,
            Ok(Err(e)) => return self.handshake_failed(e),
            Err(_) => {
                return format!(
                    "no answer to the WebSocket handshake within {} s",
                    CONNECT_TIMEOUT.as_secs()
                );
            }
        };
        if let Err(e) = ws.send(Message::text(feed.subscribe_msg())).await {
            return describe(e);
        }
        let mut deadline = Instant::now() + self.read_timeout;
        let mut ping = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut questions = super::query::Open::new(sink.questions());
        loop {
            tokio::select! {
                Some(q) = questions.next() => {
                    if let Some(line) = feed.pending.send(q)
                        && let Err(e) = ws.send(Message::text(line)).await
                    {
                        return describe(e);
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    return format!("no data for {} s", self.read_timeout.as_secs());
                }
                _ = ping.tick() => {
                    if let Err(e) = ws.send(Message::Ping(Default::default())).await {
                        return describe(e);
                    }
                }
                msg = ws.next() => {
                    deadline = Instant::now() + self.read_timeout;
                    match msg {
                        None => return "the peer closed the connection".into(),
                        Some(Err(e)) => return describe(e),
                        Some(Ok(Message::Text(text))) => {
                            if let Err(e) = feed.apply(text.as_str(), sink) {
                                return e.to_string();
                            }
                        }
                        Some(Ok(Message::Binary(_))) => {
                            return "protocol error: a binary message".into();
                        }
                        Some(Ok(Message::Close(frame))) => return closed(frame.as_ref()),
                        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                    }
                }
            }
        }
    }

    fn handshake_failed(&self, e: WsProtoError) -> String {
        match e {
            WsProtoError::Http(resp) if resp.status() == StatusCode::UNAUTHORIZED => {
                if self.token.is_some() {
                    "unauthorized: the peer refused the token".into()
                } else {
                    "unauthorized: no token for this peer (--peer-token-file or token-file=)".into()
                }
            }
            WsProtoError::Http(resp) => {
                let body = resp
                    .body()
                    .as_deref()
                    .map(|b| clean(&String::from_utf8_lossy(b)))
                    .filter(|b| !b.is_empty())
                    .map(|b| format!(": {b}"))
                    .unwrap_or_default();
                format!("HTTP {} at {}{body}", resp.status(), self.url)
            }
            e => format!("WebSocket handshake failed: {}", describe(e)),
        }
    }
}

/// `path` (where the vramio is served) as the WebSocket endpoint: `PATH/ws`, or `PATH` itself
/// when it already ends in `/ws`.
fn endpoint(path: &str) -> String {
    let path = path.trim_end_matches('/');
    if path.ends_with("/ws") {
        path.to_owned()
    } else {
        format!("{path}/ws")
    }
}

/// What a peer said, fit for a down reason: no control characters, at most [`ECHO_CHARS`].
fn clean(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(ECHO_CHARS)
        .collect();
    if text.chars().count() > ECHO_CHARS {
        out.push('…');
    }
    out.trim().to_owned()
}

fn closed(frame: Option<&CloseFrame>) -> String {
    match frame {
        None => "the peer closed the connection".into(),
        Some(f) if f.reason.is_empty() => {
            format!("closed by the peer (code {})", u16::from(f.code))
        }
        Some(f) => format!(
            "closed by the peer: {} (code {})",
            clean(f.reason.as_str()),
            u16::from(f.code)
        ),
    }
}

/// A WebSocket error as a down reason.
fn describe(e: WsProtoError) -> String {
    match e {
        WsProtoError::Capacity(CapacityError::MessageTooLong { size, max_size }) => {
            format!("protocol error: message too large ({size} bytes; at most {max_size})")
        }
        WsProtoError::Capacity(e) => format!("protocol error: {e}"),
        // The far side died or the network cut it: not the peer's fault in the protocol.
        WsProtoError::Protocol(
            tokio_tungstenite::tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
        ) => "the connection was lost (reset without a close)".into(),
        WsProtoError::Protocol(e) => format!("protocol error: {e}"),
        WsProtoError::Utf8(_) => "protocol error: a text message that is not UTF-8".into(),
        WsProtoError::AttackAttempt => "protocol error: the peer broke the WebSocket rules".into(),
        WsProtoError::ConnectionClosed | WsProtoError::AlreadyClosed => {
            "the peer closed the connection".into()
        }
        WsProtoError::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the peer closed the connection".into()
        }
        WsProtoError::Io(e) => format!("connection lost: {e}"),
        e => e.to_string(),
    }
}

impl Link for WsLink {
    fn run<'a>(
        &'a mut self,
        feed: &'a mut Feed,
        sink: &'a dyn PeerSink,
    ) -> Pin<Box<dyn Future<Output = String> + Send + 'a>> {
        Box::pin(self.connect_and_stream(feed, sink))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_ws_under_the_served_path() {
        assert_eq!(endpoint("/"), "/ws");
        assert_eq!(endpoint("/gpu3/"), "/gpu3/ws");
        assert_eq!(endpoint("/gpu3/ws"), "/gpu3/ws");
        let spec = PeerSpec::parse("ws://gpu2:7575").expect("spec");
        let link = WsLink::new(&spec, None, None, Duration::from_secs(1)).expect("link");
        assert_eq!(link.url, "ws://gpu2:7575/ws");
        assert_eq!(link.read_timeout, Duration::from_secs(13));
    }

    #[test]
    fn what_a_peer_says_is_cleaned_and_cut() {
        assert_eq!(clean("bye\u{1b}[2J\r\nnow"), "bye [2J  now");
        let long = clean(&"x".repeat(10_000));
        assert_eq!(long.chars().count(), ECHO_CHARS + 1);
        let too_big = describe(WsProtoError::Capacity(CapacityError::MessageTooLong {
            size: 100_000_000,
            max_size: MAX_MESSAGE_BYTES,
        }));
        assert!(
            too_big.starts_with("protocol error: message too large"),
            "{too_big}"
        );
    }

    #[test]
    fn an_ssh_spec_is_not_a_ws_link() {
        let spec = PeerSpec::parse("ssh://gpu1").expect("spec");
        let e = WsLink::new(&spec, None, None, Duration::from_secs(1)).err();
        assert!(matches!(e, Some(WsError::NotWs(_))), "{e:?}");
    }
}
