//! Test kit for peer links: a real `vramio::host_feed::HostFeed` per peer fed through a tap that also keeps
//! the peer's own frame seqs, the peer's life run by `peers::life::supervise`, a TCP proxy that
//! can cut its connections, and fake WebSocket peers that misbehave on purpose.
//! Include with `#[path = "common/peer_kit.rs"] mod peer_kit;` (needs `vramio_bin`).
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use futures_util::SinkExt;
use shared::diagnosis::Diagnosis;
use shared::{Frame, HostState, ServerMsg};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::peers::{LinkOptions, PeerLine, PeerSink, PeerSpec, link_for};

/// The serves' `--interval` (see `vramio_bin::Server::start`), and the hubs'.
pub const INTERVAL: Duration = Duration::from_millis(250);

/// Feeds the hub, keeping each frame's seq as the peer numbered it and every link change.
pub struct Tap {
    pub hub: HostFeed,
    remote: Mutex<Vec<u64>>,
    links: Mutex<Vec<(HostState, Option<String>)>>,
}

impl PeerSink for Tap {
    fn link(&self, state: HostState, error: Option<String>) {
        lock(&self.links).push((state, error.clone()));
        self.hub.link(state, error);
    }
    fn frame(&self, frame: Frame) {
        lock(&self.remote).push(frame.seq);
        self.hub.frame(frame);
    }
    fn diagnosis(&self, diagnosis: Diagnosis) {
        self.hub.diagnosis(diagnosis);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One peer watched by its own hub; the link stops when this drops.
pub struct Watched {
    pub tap: Arc<Tap>,
    cancel: CancellationToken,
}

impl Watched {
    /// Watches `peer` with `token_file` (and for wss `ca`) through `link_for`.
    pub fn start(peer: &str, token_file: Option<PathBuf>, ca: Option<PathBuf>) -> Watched {
        let line = PeerLine {
            spec: PeerSpec::parse(peer).unwrap_or_else(|e| panic!("{peer}: {e}")),
            token_file,
        };
        let options = LinkOptions {
            interval: INTERVAL,
            token_file: None,
            ca,
            ..LinkOptions::default()
        };
        let link = link_for(&line, &options).unwrap_or_else(|e| panic!("{peer}: {e}"));
        let hub = HostFeed::new(
            line.spec.name(),
            INTERVAL,
            HostFeedConfig::for_interval(INTERVAL),
        );
        let tap = Arc::new(Tap {
            hub,
            remote: Mutex::new(Vec::new()),
            links: Mutex::new(Vec::new()),
        });
        let cancel = CancellationToken::new();
        let sink: Arc<dyn PeerSink> = tap.clone();
        tokio::spawn(vramio::peers::life::supervise(
            link,
            sink,
            usize::MAX,
            cancel.clone(),
        ));
        Watched { tap, cancel }
    }

    /// The peer's seqs of the frames that reached the hub, in order.
    pub fn remote_seqs(&self) -> Vec<u64> {
        lock(&self.tap.remote).clone()
    }
    /// The hub's own seqs of what it holds, oldest first.
    pub fn hub_seqs(&self) -> Vec<u64> {
        self.tap
            .hub
            .history_after(None)
            .iter()
            .map(|e| e.seq)
            .collect()
    }
    pub fn frames(&self) -> usize {
        lock(&self.tap.remote).len()
    }
    /// The hub's view: state and reason.
    pub fn status(&self) -> (HostState, Option<String>) {
        let (state, _, why) = self.tap.hub.host_status();
        (state, why)
    }
    /// Every down reason the link reported so far.
    pub fn downs(&self) -> Vec<String> {
        lock(&self.tap.links)
            .iter()
            .filter(|(s, _)| *s == HostState::Down)
            .filter_map(|(_, why)| why.clone())
            .collect()
    }
    /// Waits until the hub has `n` frames more than now.
    pub async fn more_frames(&self, n: usize, within: Duration) {
        let want = self.frames() + n;
        let name = self.tap.hub.host().to_owned();
        super::vramio_bin::wait_for(within, &format!("{n} more frames from {name}"), || {
            let got = self.frames();
            async move { (got >= want).then_some(()) }
        })
        .await;
    }
    /// Waits until the hub calls the host `state` with a reason containing `why`.
    pub async fn until(&self, state: HostState, why: &str, within: Duration) -> String {
        let what = format!("{} to be {state:?} ({why:?})", self.tap.hub.host());
        super::vramio_bin::wait_for(within, &what, || {
            let (s, reason) = self.status();
            let reason = reason.unwrap_or_default();
            async move { (s == state && reason.contains(why)).then_some(reason) }
        })
        .await
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Places where `seqs` does not step by one: `(before, after)`.
pub fn gaps(seqs: &[u64]) -> Vec<(u64, u64)> {
    seqs.windows(2)
        .filter(|w| w[1] != w[0] + 1)
        .map(|w| (w[0], w[1]))
        .collect()
}

/// A TCP proxy on loopback to `upstream`; [`Proxy::cut`] drops every connection through it and
/// refuses new ones for a while.
pub struct Proxy {
    pub port: u16,
    refusing: Arc<AtomicBool>,
    generation: Arc<tokio::sync::watch::Sender<u64>>,
    cancel: CancellationToken,
}

impl Proxy {
    pub async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let refusing = Arc::new(AtomicBool::new(false));
        let generation = Arc::new(tokio::sync::watch::channel(0u64).0);
        let cancel = CancellationToken::new();
        let (r, g, c) = (refusing.clone(), generation.clone(), cancel.clone());
        tokio::spawn(async move {
            loop {
                let (mut down, _) = tokio::select! {
                    () = c.cancelled() => return,
                    a = listener.accept() => match a { Ok(a) => a, Err(_) => return },
                };
                if r.load(Ordering::SeqCst) {
                    continue;
                }
                let upstream = upstream.clone();
                let mut cut = g.subscribe();
                tokio::spawn(async move {
                    let Ok(mut up) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut down, &mut up) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Proxy {
            port,
            refusing,
            generation,
            cancel,
        }
    }

    /// Drops every connection and refuses new ones for `for_how_long`.
    pub async fn cut(&self, for_how_long: Duration) {
        self.refusing.store(true, Ordering::SeqCst);
        self.generation.send_modify(|g| *g += 1);
        tokio::time::sleep(for_how_long).await;
        self.refusing.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// How a fake peer misbehaves after the WebSocket handshake.
#[derive(Clone, Copy, Debug)]
pub enum Fake {
    /// `hello`, then a text message that is not JSON.
    Garbage,
    /// Bytes that are no WebSocket frame at all.
    RawBytes,
    /// `hello`, then one frame that says it carries 100 MB, and that much data behind it.
    Huge,
    /// `hello`, then one message in 1 MiB fragments that never ends.
    Endless,
}

/// A fake peer on loopback; answers every connection the same way. Returns its port.
pub async fn fake_peer(how: Fake) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(misbehave(tcp, how));
        }
    });
    port
}

async fn misbehave(tcp: TcpStream, how: Fake) {
    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
        return;
    };
    if !matches!(how, Fake::RawBytes) {
        let hello = ServerMsg::hello(vec!["fake".into()], 250, "fake", "fake-1");
        let text = serde_json::to_string(&hello).expect("json");
        if ws.send(Message::text(text)).await.is_err() {
            return;
        }
    }
    let raw = ws.get_mut();
    let chunk = vec![b'x'; 1024 * 1024];
    let _ = match how {
        Fake::Garbage => {
            // An unmasked text frame (server to client), FIN set.
            let body = b"{{not json at all";
            let mut frame = vec![0x81, u8::try_from(body.len()).expect("short")];
            frame.extend_from_slice(body);
            raw.write_all(&frame).await
        }
        Fake::RawBytes => raw.write_all(&[0xff; 64]).await,
        Fake::Huge => {
            let mut header = vec![0x81, 127];
            header.extend_from_slice(&100_000_000u64.to_be_bytes());
            let mut r = raw.write_all(&header).await;
            for _ in 0..100 {
                if r.is_err() {
                    break;
                }
                r = raw.write_all(&chunk).await;
            }
            r
        }
        Fake::Endless => {
            // A text frame without FIN, then continuation frames without FIN, forever.
            let mut r = Ok(());
            for i in 0.. {
                let opcode = if i == 0 { 0x01 } else { 0x00 };
                let mut frame = vec![opcode, 127];
                frame.extend_from_slice(&(chunk.len() as u64).to_be_bytes());
                r = raw.write_all(&frame).await;
                if r.is_ok() {
                    r = raw.write_all(&chunk).await;
                }
                if r.is_err() || i > 200 {
                    break;
                }
            }
            r
        }
    };
    let _ = raw.flush().await;
    // Hold the connection open: the link must end it, not the fake.
    tokio::time::sleep(Duration::from_secs(30)).await;
}

/// What a [`recording_peer`] saw of one connection.
#[derive(Clone, Debug)]
pub struct Seen {
    pub uri: String,
    pub authorization: Option<String>,
    pub first_message: String,
}

/// A peer that records each connection's request and first message, answers `hello` and one
/// frame with seq `100 + n` (n = the connection's number from 0), and hangs up. Returns its port.
pub async fn recording_peer() -> (u16, Arc<Mutex<Vec<Seen>>>) {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        let mut n = 0u64;
        while let Ok((tcp, _)) = listener.accept().await {
            let mut request = None;
            #[expect(
                clippy::result_large_err,
                reason = "tungstenite's callback signature returns its error response by value"
            )]
            let callback = |req: &Request, resp: Response| {
                request = Some((
                    req.uri().to_string(),
                    req.headers()
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned),
                ));
                Ok(resp)
            };
            let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, callback).await else {
                continue;
            };
            let first = match ws.next().await {
                Some(Ok(Message::Text(t))) => t.to_string(),
                other => format!("{other:?}"),
            };
            let (uri, authorization) = request.unwrap_or_default();
            lock(&log).push(Seen {
                uri,
                authorization,
                first_message: first,
            });
            let hello = ServerMsg::hello(vec!["rec".into()], 250, "rec", "rec-1");
            let frame = ServerMsg::Frame {
                host: "rec".into(),
                frame: Box::new(Frame::empty("rec", 100 + n, 1000, 250)),
            };
            for msg in [hello, frame] {
                let _ = ws
                    .send(Message::text(serde_json::to_string(&msg).expect("json")))
                    .await;
            }
            let _ = ws.close(None).await;
            n += 1;
        }
    });
    (port, seen)
}

/// VmRSS of this process, in bytes.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
