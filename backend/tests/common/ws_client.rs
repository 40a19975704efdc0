//! A real server on port 0 and tokio-tungstenite clients for the `/ws` tests: start, connect,
//! read messages, collect frames. Include with `#[path = "common/ws_client.rs"] mod ws_client;`.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use futures_util::{SinkExt, StreamExt};
use shared::{Frame, Mount, MountKind, ServerMsg};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::{AppState, app};

pub type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub struct Server {
    pub addr: std::net::SocketAddr,
    pub hub: HostFeed,
    pub state: AppState,
}

pub async fn server(config: HostFeedConfig) -> Server {
    server_with(HostFeed::new("testhost", Duration::from_secs(1), config)).await
}

/// A server around `hub` (another interval, say).
pub async fn server_with(hub: HostFeed) -> Server {
    let state = AppState::new(hub.clone(), vramio::http::auth::Auth::disabled());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind port 0");
    let addr = listener.local_addr().expect("addr");
    let router = app(state.clone());
    tokio::spawn(async move {
        axum::serve(listener, router).await.expect("serve");
    });
    Server { addr, hub, state }
}

pub fn default_config() -> HostFeedConfig {
    HostFeedConfig::for_interval(Duration::from_secs(1))
}

pub fn frame(t: u64) -> Frame {
    Frame::empty("testhost", 0, 1_700_000_000_000 + t, 1000)
}

/// A frame of roughly `kib` KiB, to fill socket buffers quickly.
pub fn big_frame(t: u64, kib: usize) -> Frame {
    let mut f = frame(t);
    for i in 0..kib * 4 {
        f.mounts.push(Mount {
            mount_point: format!("/data/volume-{i:0>160}"),
            device: "/dev/nvme0n1p1".into(),
            fs_type: Some("ext4".into()),
            kind: MountKind::LocalNvme,
            total_bytes: Some(shared::Bytes(1 << 40)),
            used_bytes: Some(shared::Bytes(1 << 39)),
            available_bytes: Some(shared::Bytes(1 << 39)),
            inodes_total: None,
            inodes_used: None,
            read_only: Some(false),
        });
    }
    f
}

pub async fn connect(addr: std::net::SocketAddr, query: &str) -> Client {
    let (ws, _) = connect_async(format!("ws://{addr}/ws{query}"))
        .await
        .expect("websocket handshake");
    ws
}

pub async fn next_msg(ws: &mut Client) -> ServerMsg {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message within 10 s")
            .expect("stream open")
            .expect("valid websocket message");
        match msg {
            Message::Text(t) => {
                return serde_json::from_str(t.as_str())
                    .unwrap_or_else(|e| panic!("server sent invalid JSON ({e}): {t}"));
            }
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected websocket message {other:?}"),
        }
    }
}

/// Reads messages until `want` frames (live or backfilled) have arrived; returns their seqs.
pub async fn collect_frames(ws: &mut Client, want: usize) -> Vec<u64> {
    let mut seqs = Vec::new();
    while seqs.len() < want {
        match next_msg(ws).await {
            ServerMsg::Backfill { frames, .. } => seqs.extend(frames.iter().map(|f| f.seq)),
            ServerMsg::Frame { frame, .. } => seqs.push(frame.seq),
            ServerMsg::HostStatus { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    seqs
}

pub async fn subscribe(ws: &mut Client, since: Option<u64>) {
    let text = match since {
        Some(s) => format!(r#"{{"type":"subscribe","since_seq":{s}}}"#),
        None => r#"{"type":"subscribe"}"#.to_owned(),
    };
    ws.send(Message::text(text)).await.expect("send subscribe");
}
