//! Several hosts in one `/ws` session (a hub): `hello` lists every host, every host's `summary`
//! arrives, full frames come for the selected hosts only, each host resumes from its own seq, and
//! a host that is down says why.

use futures_util::{SinkExt, StreamExt};
use shared::{Frame, HostState, ServerMsg};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::Message;
use vramio::host_feed::fleet::Fleet;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::auth::Auth;
use vramio::http::{AppState, app};

const TICK: Duration = Duration::from_millis(100);

fn hub(name: &str) -> HostFeed {
    HostFeed::new(name, TICK, HostFeedConfig::for_interval(TICK))
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next(ws: &mut Ws) -> ServerMsg {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("a message in time")
            .expect("open")
            .expect("ok");
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).expect("a server message");
        }
    }
}

async fn start(fleet: Fleet) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let state = AppState::for_fleet(fleet, Auth::disabled());
    tokio::spawn(async move { axum::serve(listener, app(state)).await.expect("serve") });
    addr
}

fn publish(h: &HostFeed, t: u64) {
    h.publish(Frame::empty(
        format!("os-{}", h.host()),
        0,
        1_700_000_000_000 + t,
        100,
    ))
    .expect("publish");
}

#[tokio::test]
async fn every_host_summarised_selected_hosts_in_full() {
    let hubs = vec![hub("ssh://gpu1"), hub("gpu2:7575"), hub("ssh://gpu3")];
    let fleet = Fleet::new(hubs.clone());
    let cancel = tokio_util::sync::CancellationToken::new();
    fleet.spawn_summaries(cancel.clone());
    hubs[2].set_link(
        HostState::Down,
        Some("Permission denied (publickey).".into()),
    );
    for t in 0..3 {
        publish(&hubs[0], t);
        publish(&hubs[1], t);
    }
    let addr = start(fleet).await;

    // Without a subscribe: every host in full.
    let (mut ws, _) = connect_async(format!("ws://{addr}/ws"))
        .await
        .expect("connect");
    let ServerMsg::Hello { hosts, .. } = next(&mut ws).await else {
        panic!("hello first");
    };
    assert_eq!(hosts, vec!["ssh://gpu1", "gpu2:7575", "ssh://gpu3"]);
    let mut backfilled = BTreeSet::new();
    let mut down_reason = None;
    while backfilled.len() < 2 || down_reason.is_none() {
        match next(&mut ws).await {
            ServerMsg::Backfill { host, frames } => {
                assert_eq!(frames.len(), 3, "{host}");
                backfilled.insert(host);
            }
            ServerMsg::Summary { host, summary } if host == "ssh://gpu3" => {
                assert_eq!(summary.state, HostState::Down);
                down_reason = summary.error.clone();
            }
            _ => {}
        }
    }
    assert_eq!(
        down_reason.as_deref(),
        Some("Permission denied (publickey).")
    );

    // The overview: summaries only; then one host in full, resuming after its seq 2.
    let (mut ws, _) = connect_async(format!("ws://{addr}/ws"))
        .await
        .expect("connect");
    let _hello = next(&mut ws).await;
    ws.send(Message::text(r#"{"type":"subscribe","hosts":[]}"#))
        .await
        .expect("send");
    publish(&hubs[0], 10);
    let mut summaries = BTreeSet::new();
    for _ in 0..20 {
        match next(&mut ws).await {
            ServerMsg::Summary { host, .. } => {
                summaries.insert(host);
            }
            ServerMsg::Frame { .. } | ServerMsg::Backfill { .. } => {
                panic!("no full frames for the overview")
            }
            _ => {}
        }
        if summaries.len() == 3 {
            break;
        }
    }
    assert_eq!(summaries.len(), 3, "{summaries:?}");
    let first_seq = hubs[1].history_after(None)[1].seq;
    ws.send(Message::text(format!(
        r#"{{"type":"subscribe","hosts":["gpu2:7575"],"since":{{"gpu2:7575":{first_seq}}}}}"#
    )))
    .await
    .expect("send");
    publish(&hubs[1], 11);
    publish(&hubs[0], 12);
    let mut got = Vec::new();
    while got.len() < 2 {
        match next(&mut ws).await {
            ServerMsg::Backfill { host, frames } => {
                assert_eq!(host, "gpu2:7575");
                got.extend(frames.iter().map(|f| f.seq));
            }
            ServerMsg::Frame { host, frame } => {
                assert_eq!(host, "gpu2:7575", "only the selected host in full");
                got.push(frame.seq);
            }
            _ => {}
        }
    }
    assert_eq!(
        got,
        vec![first_seq + 1, first_seq + 2],
        "resumed after its own seq"
    );
    ws.send(Message::text(r#"{"type":"subscribe","hosts":["nope"]}"#))
        .await
        .expect("send");
    loop {
        if let ServerMsg::Error { message, .. } = next(&mut ws).await {
            assert!(message.contains("nope"), "{message}");
            break;
        }
    }
    cancel.cancel();
}

/// A `subscribe` that adds a host starts that host alone: the hosts already streaming go on
/// without a second backfill (every subscribe restarted every host with its whole history).
#[tokio::test]
async fn a_new_subscribe_restarts_only_the_hosts_it_changes() {
    let hubs = vec![hub("a"), hub("b"), hub("c")];
    for t in 0..3 {
        for h in &hubs {
            publish(h, t);
        }
    }
    let addr = start(Fleet::new(hubs.clone())).await;
    let (mut ws, _) = connect_async(format!("ws://{addr}/ws"))
        .await
        .expect("connect");
    let _hello = next(&mut ws).await;
    ws.send(Message::text(r#"{"type":"subscribe","hosts":["a","b"]}"#))
        .await
        .expect("send");
    let mut backfilled = BTreeSet::new();
    while backfilled.len() < 2 {
        if let ServerMsg::Backfill { host, .. } = next(&mut ws).await {
            backfilled.insert(host);
        }
    }
    ws.send(Message::text(
        r#"{"type":"subscribe","hosts":["a","b","c"]}"#,
    ))
    .await
    .expect("send");
    let mut after = Vec::new();
    while !after.iter().any(|h| h == "c") {
        if let ServerMsg::Backfill { host, .. } = next(&mut ws).await {
            after.push(host);
        }
    }
    // Live frames of every host after that: nothing more is backfilled.
    for t in 10..13 {
        for h in &hubs {
            publish(h, t);
        }
    }
    let mut live = BTreeSet::new();
    while live.len() < 3 {
        match next(&mut ws).await {
            ServerMsg::Backfill { host, .. } => after.push(host),
            ServerMsg::Frame { host, .. } => {
                live.insert(host);
            }
            _ => {}
        }
    }
    assert_eq!(after, ["c"], "only the new host is backfilled");
}
