//! `vramio hub` end to end: two real `vramio serve` peers over WebSocket (one token file for
//! both), one hub, one WebSocket viewer of the hub. Every host's summary and frames arrive under
//! the peer's name with the hub's own increasing seq; killing one peer marks it down with its
//! reason while the other keeps flowing.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use futures_util::StreamExt;
use shared::{HostState, ServerMsg};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use vramio_bin::{Server, TempDir};

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next(ws: &mut Ws) -> ServerMsg {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message in time")
            .expect("open")
            .expect("ok");
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).expect("a server message");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_shows_two_serves_and_says_why_one_went_down() {
    let dir = TempDir::new("hub-e2e");
    let script = dir.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let token = dir.join("peer.token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef0123456789abcdef").expect("token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let token_arg = token.to_string_lossy().into_owned();
    let peer_a = Server::start(
        &dir.join("a"),
        &script,
        &[
            "--port",
            "0",
            "--token-file",
            &token_arg,
            "--name",
            "same-name",
        ],
    );
    let peer_b = Server::start(
        &dir.join("b"),
        &script,
        &[
            "--port",
            "0",
            "--token-file",
            &token_arg,
            "--name",
            "same-name",
        ],
    );
    let a = format!("ws://{}", peer_a.authority());
    let b = format!("ws://{}", peer_b.authority());
    let hub = Server::start_command(
        "hub",
        &dir.join("hub"),
        &script,
        &["--port", "0", "--peer-token-file", &token_arg, &a, &b],
    );
    let mut req = format!("ws://{}/ws", hub.authority())
        .into_client_request()
        .expect("request");
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", hub.token()).parse().expect("header"),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .expect("connect to the hub");
    let ServerMsg::Hello { hosts, .. } = next(&mut ws).await else {
        panic!("hello first");
    };
    let names = vec![peer_a.authority().to_owned(), peer_b.authority().to_owned()];
    assert_eq!(hosts, names, "hosts are named by the peer as given");

    // Both up, both streaming, each with the hub's own increasing seq; the same reported
    // hostname does not merge them.
    let mut seqs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut up: BTreeMap<String, String> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while (up.len() < 2 || seqs.values().filter(|s| s.len() >= 4).count() < 2)
        && Instant::now() < deadline
    {
        match next(&mut ws).await {
            ServerMsg::Summary { host, summary } if summary.state == HostState::Up => {
                up.insert(host, summary.hostname.clone().unwrap_or_default());
            }
            ServerMsg::Frame { host, frame } => seqs.entry(host).or_default().push(frame.seq),
            ServerMsg::Backfill { host, frames } => seqs
                .entry(host)
                .or_default()
                .extend(frames.iter().map(|f| f.seq)),
            _ => {}
        }
    }
    assert_eq!(up.len(), 2, "both peers up: {up:?}");
    assert!(up.values().all(|h| h == "same-name"), "{up:?}");
    for (host, s) in &seqs {
        assert!(s.len() >= 4, "{host}: {s:?}");
        assert!(s.windows(2).all(|w| w[1] == w[0] + 1), "{host}: {s:?}");
    }

    // Kill one: it goes down with a reason, the other keeps flowing.
    let killed = peer_b.authority().to_owned();
    drop(peer_b);
    let started = Instant::now();
    let mut reason = None;
    let mut other_frames = 0;
    while (reason.is_none() || other_frames < 3) && started.elapsed() < Duration::from_secs(20) {
        match next(&mut ws).await {
            ServerMsg::Summary { host, summary }
                if host == killed && summary.state == HostState::Down =>
            {
                reason = summary.error.clone();
            }
            ServerMsg::Frame { host, .. } if host == names[0] => other_frames += 1,
            _ => {}
        }
    }
    let reason = reason.expect("the killed peer is down");
    eprintln!("down after {} ms: {reason}", started.elapsed().as_millis());
    assert!(
        reason.contains("refused") || reason.contains("closed") || reason.contains("lost"),
        "{reason}"
    );
    assert!(other_frames >= 3, "the other peer kept flowing");
    drop(peer_a);
    drop(hub);
}
