//! The soak's viewers: real WebSocket clients of the hub's `/ws`, as the admin (bearer token and
//! the hub's own Origin). Fast ones read everything on one connection; slow ones sleep between
//! reads on a small receive buffer, so the hub's sessions fall behind and catch up from the
//! history ring; reconnecting ones leave every few seconds and resume each host with
//! `subscribe { since }`. Each keeps what the checks need ([`Seen`]): the newest seq per host,
//! seq gaps not explained by a `reset`, `lagged`, and the ends it did not ask for.

use super::soak_http::Api;
use super::soak_rng::Rng;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

pub type Ws = WebSocketStream<TcpStream>;

/// Gap descriptions kept per viewer (the count is exact).
const GAP_EXAMPLES: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Fast,
    Slow,
    Reconnecting,
    Share,
}

pub struct Viewer {
    pub kind: Kind,
    pub id: usize,
    pub seen: Mutex<Seen>,
    born: Instant,
}

/// What one viewer received, across its connections.
#[derive(Default)]
pub struct Seen {
    /// Newest frame seq per host.
    pub newest: BTreeMap<String, u64>,
    /// Hosts whose next frame may jump (after `reset`).
    fresh: BTreeSet<String>,
    /// Text messages read.
    pub messages: u64,
    pub frames: u64,
    pub backfills: u64,
    pub resets: u64,
    pub lagged: u64,
    pub skipped: u64,
    /// Frames whose seq was not the host's previous + 1 (outside a `reset`).
    pub gaps: u64,
    pub gap_examples: Vec<String>,
    pub connections: u64,
    /// Ends the viewer did not ask for (the hub closed, the socket failed), in words.
    pub dropped: Vec<String>,
}

#[derive(Deserialize)]
struct Seq {
    seq: u64,
}
#[derive(Deserialize)]
struct FrameMsg {
    host: String,
    frame: Seq,
}
#[derive(Deserialize)]
struct BackfillMsg {
    host: String,
    frames: Vec<Seq>,
}
#[derive(Deserialize)]
struct HostMsg {
    host: String,
}
#[derive(Deserialize)]
struct LaggedMsg {
    skipped: u64,
}

impl Seen {
    /// Takes one text message. The server writes `type` first, so it is read from the prefix
    /// and only the fields the checks need are decoded (the rest of a frame is skipped).
    pub fn take(&mut self, text: &str) {
        self.messages += 1;
        let kind = text
            .strip_prefix(r#"{"type":""#)
            .and_then(|r| r.split('"').next())
            .unwrap_or("");
        match kind {
            "frame" => {
                if let Ok(m) = serde_json::from_str::<FrameMsg>(text) {
                    self.frame(&m.host, m.frame.seq);
                }
            }
            "backfill" => {
                if let Ok(m) = serde_json::from_str::<BackfillMsg>(text) {
                    self.backfills += 1;
                    for f in m.frames {
                        self.frame(&m.host, f.seq);
                    }
                }
            }
            "reset" => {
                if let Ok(m) = serde_json::from_str::<HostMsg>(text) {
                    self.resets += 1;
                    self.fresh.insert(m.host);
                }
            }
            "lagged" => {
                if let Ok(m) = serde_json::from_str::<LaggedMsg>(text) {
                    self.lagged += 1;
                    self.skipped += m.skipped;
                }
            }
            _ => {
                let _ = serde_json::from_str::<IgnoredAny>(text);
            }
        }
    }

    fn frame(&mut self, host: &str, seq: u64) {
        self.frames += 1;
        let fresh = self.fresh.remove(host);
        let prev = self.newest.insert(host.to_owned(), seq);
        if let Some(prev) = prev
            && !fresh
            && seq != prev + 1
        {
            self.gaps += 1;
            if self.gap_examples.len() < GAP_EXAMPLES {
                self.gap_examples.push(format!("{host}: {prev} then {seq}"));
            }
        }
    }

    /// A new connection: `resumed` when its `subscribe` named every host seen so far; one that
    /// resumes nothing starts over (what it had says nothing of where the new one stands).
    pub fn connected(&mut self, resumed: bool) {
        self.connections += 1;
        if !resumed {
            self.newest.clear();
            self.fresh.clear();
        }
    }

    /// The `subscribe` that resumes every host after its newest seq.
    fn subscribe(&self) -> String {
        if self.newest.is_empty() {
            return r#"{"type":"subscribe"}"#.to_owned();
        }
        serde_json::json!({ "type": "subscribe", "since": self.newest }).to_string()
    }
}

impl Viewer {
    pub fn new(kind: Kind, id: usize) -> Viewer {
        Viewer {
            kind,
            id,
            seen: Mutex::new(Seen::default()),
            born: Instant::now(),
        }
    }

    pub fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().expect("viewer lock")
    }

    /// Frames behind: the largest, over the hosts it has frames of, of the hub's newest seq
    /// minus its own; `None` before its first frame.
    pub fn behind(&self, newest: &BTreeMap<String, u64>) -> Option<u64> {
        let seen = self.seen();
        newest
            .iter()
            .filter_map(|(h, hub)| Some(hub.saturating_sub(*seen.newest.get(h)?)))
            .max()
    }

    fn dropped(&self, why: String) {
        let at = self.born.elapsed().as_secs();
        self.seen().dropped.push(format!("at {at} s: {why}"));
    }
}

/// Opens the hub's `/ws` with `headers` (a receive buffer of `recv_buffer` bytes if given).
pub async fn open(
    api: &Api,
    headers: &[(&str, String)],
    recv_buffer: Option<u32>,
) -> Result<Ws, String> {
    let addr: std::net::SocketAddr = api.authority.parse().map_err(|e| format!("{e}"))?;
    let socket = tokio::net::TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    if let Some(n) = recv_buffer {
        socket
            .set_recv_buffer_size(n)
            .map_err(|e| format!("SO_RCVBUF: {e}"))?;
    }
    let tcp = socket
        .connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut req = api
        .ws_url()
        .into_client_request()
        .map_err(|e| e.to_string())?;
    for (n, v) in headers {
        req.headers_mut().insert(
            HeaderName::from_bytes(n.as_bytes()).map_err(|e| e.to_string())?,
            HeaderValue::from_str(v).map_err(|e| e.to_string())?,
        );
    }
    let handshake = tokio_tungstenite::client_async(req, tcp);
    match tokio::time::timeout(Duration::from_secs(10), handshake).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(e)) => Err(format!("handshake: {e}")),
        Err(_) => Err("handshake: no answer within 10 s".into()),
    }
}

/// The admin's headers: the token as a bearer header, and the hub's own Origin.
pub fn admin_headers(api: &Api) -> Vec<(&'static str, String)> {
    vec![
        ("authorization", format!("Bearer {}", api.token)),
        ("origin", api.origin()),
    ]
}

/// How a read ended.
pub enum Read {
    Message,
    /// The server closed with this code (`None`: no close frame), or the socket failed.
    Closed(Option<u16>, String),
}

/// Reads one message into `v`.
pub async fn read_one(ws: &mut Ws, v: &Viewer) -> Read {
    match ws.next().await {
        Some(Ok(Message::Text(t))) => {
            v.seen().take(t.as_str());
            Read::Message
        }
        Some(Ok(Message::Close(c))) => {
            let code = c.as_ref().map(|c| u16::from(c.code));
            let why = c.map(|c| c.reason.to_string()).unwrap_or_default();
            Read::Closed(code, why)
        }
        Some(Ok(_)) => Read::Message,
        Some(Err(e)) => Read::Closed(None, e.to_string()),
        None => Read::Closed(None, "the stream ended".into()),
    }
}

/// Connects as the admin, resuming every host seen so far.
async fn connect(api: &Api, v: &Viewer, recv_buffer: Option<u32>) -> Result<Ws, String> {
    let mut ws = open(api, &admin_headers(api), recv_buffer).await?;
    let subscribe = v.seen().subscribe();
    ws.send(Message::text(subscribe))
        .await
        .map_err(|e| format!("subscribe: {e}"))?;
    v.seen().connected(true);
    Ok(ws)
}

/// A viewer that keeps up: one connection, every message read at once.
pub async fn fast(api: Api, v: std::sync::Arc<Viewer>, stop: CancellationToken) {
    let mut ws = match connect(&api, &v, None).await {
        Ok(ws) => ws,
        Err(e) => return v.dropped(e),
    };
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            read = read_one(&mut ws, &v) => if let Read::Closed(code, why) = read {
                return v.dropped(format!("closed ({code:?}): {why}"));
            },
        }
    }
    let _ = ws.close(None).await;
}

/// A viewer that sleeps `delay` after every message, on a socket with a receive buffer of
/// `recv_buffer` bytes if given; should the hub drop it, it comes back (resuming) and the drop
/// is noted.
pub async fn slow(
    api: Api,
    v: std::sync::Arc<Viewer>,
    delay: Duration,
    recv_buffer: Option<u32>,
    stop: CancellationToken,
) {
    while !stop.is_cancelled() {
        let mut ws = match connect(&api, &v, recv_buffer).await {
            Ok(ws) => ws,
            Err(e) => {
                v.dropped(e);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        loop {
            tokio::select! {
                () = stop.cancelled() => {
                    let _ = ws.close(None).await;
                    return;
                }
                read = read_one(&mut ws, &v) => if let Read::Closed(code, why) = read {
                    v.dropped(format!("closed ({code:?}): {why}"));
                    break;
                },
            }
            tokio::select! {
                () = stop.cancelled() => {}
                () = tokio::time::sleep(delay) => {}
            }
        }
    }
}

/// A viewer that stays 2 to 6 s, closes, and comes back resuming every host.
pub async fn reconnecting(
    api: Api,
    v: std::sync::Arc<Viewer>,
    mut rng: Rng,
    stop: CancellationToken,
) {
    while !stop.is_cancelled() {
        let mut ws = match connect(&api, &v, None).await {
            Ok(ws) => ws,
            Err(e) => {
                v.dropped(e);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let leave = tokio::time::sleep(rng.secs(2.0, 6.0));
        tokio::pin!(leave);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = &mut leave => break,
                read = read_one(&mut ws, &v) => if let Read::Closed(code, why) = read {
                    v.dropped(format!("closed ({code:?}): {why}"));
                    break;
                },
            }
        }
        // Leave as a browser does: a Close frame, then whatever was in flight is dropped.
        let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
    }
}
