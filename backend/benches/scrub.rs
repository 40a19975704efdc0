//! Scrubbing a replay (issue 10: <= 100 ms from drag to redraw for a 24 h recording at 1 Hz): a
//! day of 8-GPU frames is replayed in-process behind a real HTTP listener; a real WebSocket
//! viewer is connected; each jump is a `POST /api/replay {"seek_ms"}` to a moment spread over the
//! day, timed until the viewer has the `reset`, the new history (`history` samples and the newest
//! frame as `backfill`, decoded as the page decodes them) and the new diagnosis. Also prints the verdict timeline's time and the RSS.
//!
//! `cargo bench -p vramio --bench scrub` (`VRAMIO_SCRUB_HOURS`, default 24; `VRAMIO_SCRUB_JUMPS`,
//! default 30).

#[path = "common/sim_peers.rs"]
mod sim_peers;

use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use shared::ServerMsg;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use vramio::host_feed::diagnoser::{DEFAULT_WINDOW, Diagnoser};
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::ingest::player::{self, Replay, Speed};

const T0: u64 = 1_800_000_000_000;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A day of frames at 1 Hz: 8 GPUs whose memory is at 40% in even hours and 96% in odd ones.
fn day(hours: u64) -> Vec<shared::Frame> {
    let template = sim_peers::frame_template();
    (0..hours * 3600)
        .map(|s| {
            let mut f = template.clone();
            f.seq = s + 1;
            f.t_ms = T0 + s * 1000;
            f.host = "day".into();
            let pct = if (s / 3600) % 2 == 0 { 0.40 } else { 0.96 };
            for g in &mut f.gpus {
                if let Some(m) = &mut g.memory {
                    let used = (m.total_bytes.0 as f64 * pct) as u64;
                    m.used_bytes = shared::Bytes(used);
                    m.free_bytes = shared::Bytes(m.total_bytes.0 - used);
                }
            }
            f
        })
        .collect()
}

async fn post(addr: std::net::SocketAddr, body: String) -> u16 {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let req = hyper::Request::builder()
        .method("POST")
        .uri("/api/replay")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    let resp = sender.send_request(req).await.expect("POST");
    let status = resp.status().as_u16();
    let _ = resp.into_body().collect().await;
    status
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next(ws: &mut Ws) -> Option<(ServerMsg, usize)> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                let msg = serde_json::from_str(t.as_str()).expect("a server message");
                return Some((msg, t.len()));
            }
            Ok(Some(Ok(_))) => continue,
            _ => return None,
        }
    }
}

/// Reads the viewer's stream until the history after a `reset` and its diagnosis are in: the
/// frames (whole or as chart samples) and bytes it took.
async fn until_redrawn(ws: &mut Ws) -> (usize, usize) {
    let (mut frames, mut bytes, mut reset) = (0, 0, false);
    while let Some((msg, len)) = next(ws).await {
        match msg {
            ServerMsg::Reset { .. } => reset = true,
            ServerMsg::History { samples, .. } if reset => {
                frames += samples.len();
                bytes += len;
            }
            ServerMsg::Backfill { frames: f, .. } if reset => {
                frames += f.len();
                bytes += len;
            }
            ServerMsg::Diagnosis { .. } if reset && frames > 0 => return (frames, bytes + len),
            _ => {}
        }
    }
    panic!("the viewer's stream ended");
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let hours = env_or("VRAMIO_SCRUB_HOURS", 24).max(1);
    let jumps = env_or("VRAMIO_SCRUB_JUMPS", 30).max(1);
    let rss_before = sim_peers::rss_kib(std::process::id());
    let frames = day(hours);
    let n = frames.len() as u64;
    let replay = Replay::new(frames, Speed::Times(1.0));
    replay.steer(Some(false), None);
    let started = Instant::now();
    replay
        .spawn_timeline(Default::default(), DEFAULT_WINDOW)
        .expect("timeline");
    while replay.info().timeline.is_none() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let timeline_s = started.elapsed().as_secs_f64();

    let hub = HostFeed::new(
        "day",
        Duration::from_secs(1),
        HostFeedConfig::for_interval(Duration::from_secs(1)),
    );
    let playing = player::spawn(
        replay.clone(),
        hub.clone(),
        Diagnoser::new(Default::default(), DEFAULT_WINDOW),
    )
    .expect("player");
    let mut state = vramio::http::AppState::new(hub, vramio::http::auth::Auth::disabled());
    state.replay = Some(replay.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = vramio::http::app(state);
    tokio::spawn(async move { axum::serve(listener, router).await });
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .expect("ws");
    // Hello, the first frame's backfill and its diagnosis.
    while let Some((msg, _)) = next(&mut ws).await {
        if matches!(msg, ServerMsg::Diagnosis { .. }) {
            break;
        }
    }

    let (mut answered, mut redrawn) = (Vec::new(), Vec::new());
    let (mut frames_sent, mut bytes_sent) = (0, 0);
    for j in 0..jumps {
        // Spread over the day, never twice the same moment, back and forth.
        let s = (j * 7919 + 1234) % n;
        let t0 = Instant::now();
        let status = post(addr, format!(r#"{{"seek_ms":{}}}"#, T0 + s * 1000)).await;
        assert_eq!(status, 200);
        answered.push(t0.elapsed().as_secs_f64() * 1e3);
        let (f, b) = until_redrawn(&mut ws).await;
        redrawn.push(t0.elapsed().as_secs_f64() * 1e3);
        frames_sent += f;
        bytes_sent += b;
    }
    let rss = sim_peers::rss_kib(std::process::id());
    playing.stop_and_join();

    for v in [&mut answered, &mut redrawn] {
        v.sort_by(f64::total_cmp);
    }
    println!(
        "scrub: {hours} h of 8-GPU frames at 1 Hz ({n} frames); verdict timeline in {timeline_s:.2} s"
    );
    println!(
        "  POST /api/replay seek answered (jump made): median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        percentile(&answered, 0.5),
        percentile(&answered, 0.9),
        percentile(&answered, 1.0)
    );
    println!(
        "  drag to the viewer holding that moment (reset, {} frames as samples and whole, {:.2} MB decoded, diagnosis): median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        frames_sent / jumps as usize,
        bytes_sent as f64 / jumps as f64 / 1e6,
        percentile(&redrawn, 0.5),
        percentile(&redrawn, 0.9),
        percentile(&redrawn, 1.0)
    );
    println!(
        "  RSS: {:.0} MB with the replay loaded (from {:.0} MB before the frames)",
        rss as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );
}
