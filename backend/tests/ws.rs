//! The `/ws` protocol end to end: a real server on port 0, real tokio-tungstenite clients, frames
//! published straight into the hub (no sampler), so every assertion is about the session.

#[path = "common/ws_client.rs"]
mod ws_client;

use futures_util::{SinkExt, StreamExt};
use shared::{ErrorCode, ServerMsg};
use std::time::Duration;
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::{AppState, app};
use ws_client::{
    Client, collect_frames, connect, default_config, frame, next_msg, server, server_with,
    subscribe,
};

#[tokio::test]
async fn hello_first_then_backfill_then_live_with_increasing_seq() {
    let s = server(default_config()).await;
    for t in 0..5 {
        s.hub.publish(frame(t)).expect("publish");
    }
    let mut ws = connect(s.addr, "").await;
    match next_msg(&mut ws).await {
        ServerMsg::Hello {
            protocol,
            hosts,
            interval_ms,
            ..
        } => {
            assert_eq!(protocol, shared::PROTOCOL_VERSION);
            assert_eq!(hosts, vec!["testhost".to_owned()]);
            assert_eq!(interval_ms, 1000);
        }
        other => panic!("first message must be hello, got {other:?}"),
    }
    subscribe(&mut ws, None).await;
    let backfilled = collect_frames(&mut ws, 5).await;
    assert_eq!(backfilled, vec![1, 2, 3, 4, 5]);
    for t in 5..8 {
        s.hub.publish(frame(t)).expect("publish");
    }
    let live = collect_frames(&mut ws, 3).await;
    assert_eq!(live, vec![6, 7, 8]);
}

#[tokio::test]
async fn without_subscribe_the_server_backfills_everything_after_a_short_wait() {
    let s = server(default_config()).await;
    for t in 0..3 {
        s.hub.publish(frame(t)).expect("publish");
    }
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    assert_eq!(collect_frames(&mut ws, 3).await, vec![1, 2, 3]);
}

#[tokio::test]
async fn reconnect_with_since_seq_gets_exactly_the_missed_frames() {
    let s = server(default_config()).await;
    s.hub.publish(frame(0)).expect("publish");
    s.hub.publish(frame(1)).expect("publish");
    let mut first = connect(s.addr, "").await;
    assert!(matches!(
        next_msg(&mut first).await,
        ServerMsg::Hello { .. }
    ));
    subscribe(&mut first, None).await;
    let seen = collect_frames(&mut first, 2).await;
    let last_seen = *seen.last().expect("frames");
    first.close(None).await.expect("close");
    drop(first);

    // Frames published while the client was away.
    for t in 2..9 {
        s.hub.publish(frame(t)).expect("publish");
    }
    let mut again = connect(s.addr, "").await;
    assert!(matches!(
        next_msg(&mut again).await,
        ServerMsg::Hello { .. }
    ));
    subscribe(&mut again, Some(last_seen)).await;
    let missed = collect_frames(&mut again, 7).await;
    assert_eq!(missed, (3..=9).collect::<Vec<u64>>());
    s.hub.publish(frame(9)).expect("publish");
    assert_eq!(collect_frames(&mut again, 1).await, vec![10]);

    // The same through the URL, as a browser reconnecting would.
    let mut via_url = connect(s.addr, "?since_seq=8").await;
    assert!(matches!(
        next_msg(&mut via_url).await,
        ServerMsg::Hello { .. }
    ));
    assert_eq!(collect_frames(&mut via_url, 2).await, vec![9, 10]);
}

#[tokio::test]
async fn bad_client_messages_get_errors_and_the_stream_goes_on() {
    let s = server(default_config()).await;
    let mut ws = connect(s.addr, "?since_seq=0").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    for bad in [
        "not json",
        r#"{"type":"reboot"}"#,
        r#"{"type":"subscribe","since_seq":"yesterday"}"#,
    ] {
        ws.send(Message::text(bad)).await.expect("send");
        loop {
            match next_msg(&mut ws).await {
                ServerMsg::Error { code, message } => {
                    assert_eq!(code, ErrorCode::BadMessage);
                    assert!(!message.is_empty());
                    break;
                }
                ServerMsg::HostStatus { .. } => {}
                other => panic!("expected error for {bad:?}, got {other:?}"),
            }
        }
    }
    ws.send(Message::binary(vec![1u8, 2, 3]))
        .await
        .expect("send");
    assert!(matches!(
        next_msg(&mut ws).await,
        ServerMsg::Error {
            code: ErrorCode::Unsupported,
            ..
        }
    ));
    ws.send(Message::text(
        r#"{"type":"subscribe","hosts":["elsewhere"]}"#,
    ))
    .await
    .expect("send");
    assert!(matches!(
        next_msg(&mut ws).await,
        ServerMsg::Error {
            code: ErrorCode::UnknownHost,
            ..
        }
    ));
    ws.send(Message::text(r#"{"type":"ping"}"#))
        .await
        .expect("send");
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Pong));
    s.hub.publish(frame(1)).expect("publish");
    assert_eq!(collect_frames(&mut ws, 1).await, vec![1]);
}

async fn expect_close(ws: &mut Client) -> CloseCode {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("close within 10 s");
        match msg {
            Some(Ok(Message::Close(Some(frame)))) => return frame.code,
            Some(Ok(Message::Close(None))) | None => panic!("closed without a code"),
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("socket error before close: {e}"),
        }
    }
}

#[tokio::test]
async fn oversized_client_messages_close_with_1009() {
    let s = server(default_config()).await;
    let mut ws = connect(s.addr, "?since_seq=0").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    let huge = format!(r#"{{"type":"ping","pad":"{}"}}"#, "x".repeat(20_000));
    ws.send(Message::text(huge)).await.expect("send");
    assert_eq!(expect_close(&mut ws).await, CloseCode::Size);

    // Beyond the transport limit too.
    let mut ws = connect(s.addr, "?since_seq=0").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    let _ = ws.send(Message::text("y".repeat(200_000))).await;
    assert_eq!(expect_close(&mut ws).await, CloseCode::Size);
}

#[tokio::test]
async fn shutdown_sends_a_close_frame() {
    let s = server(default_config()).await;
    let mut ws = connect(s.addr, "?since_seq=0").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    s.state.shutdown.cancel();
    assert_eq!(expect_close(&mut ws).await, CloseCode::Away);
}

#[tokio::test]
async fn the_current_diagnosis_follows_the_backfill_and_changes_are_pushed() {
    let s = server(default_config()).await;
    s.hub.publish(frame(0)).expect("publish");
    let first = shared::diagnosis::diagnose(&[frame(0)], &Default::default(), None);
    s.hub
        .publish_diagnosis(1, &first)
        .expect("publish diagnosis");
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    subscribe(&mut ws, None).await;
    assert_eq!(collect_frames(&mut ws, 1).await, vec![1]);
    let got = loop {
        match next_msg(&mut ws).await {
            ServerMsg::Diagnosis { host, diagnosis } => break (host, diagnosis),
            ServerMsg::HostStatus { .. } => {}
            other => panic!("expected the diagnosis, got {other:?}"),
        }
    };
    assert_eq!(got.0, "testhost");
    assert_eq!(*got.1, first);

    let mut second = first.clone();
    second.t_ms = second.t_ms.map(|t| t + 1000);
    s.hub
        .publish_diagnosis(2, &second)
        .expect("publish diagnosis");
    match next_msg(&mut ws).await {
        ServerMsg::Diagnosis { diagnosis, .. } => assert_eq!(*diagnosis, second),
        other => panic!("expected the new diagnosis, got {other:?}"),
    }
}

#[tokio::test]
async fn a_since_seq_from_another_server_gets_a_full_backfill_not_silence() {
    let s = server(default_config()).await;
    for t in 0..3 {
        s.hub.publish(frame(t)).expect("publish");
    }
    // The tunnel used to point at a server whose seqs were far higher.
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    subscribe(&mut ws, Some(1_900_000_000_000)).await;
    assert_eq!(collect_frames(&mut ws, 3).await, vec![1, 2, 3]);
    s.hub.publish(frame(3)).expect("publish");
    assert_eq!(collect_frames(&mut ws, 1).await, vec![4]);
}

#[tokio::test]
async fn viewers_are_bounded() {
    let hub = HostFeed::new("testhost", Duration::from_secs(1), default_config());
    let mut state = AppState::new(hub, vramio::http::auth::Auth::disabled());
    state.viewers = vramio::http::slots::ViewerSlots::new(1, 0, 1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = app(state);
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    let mut first = connect(addr, "").await;
    assert!(matches!(
        next_msg(&mut first).await,
        ServerMsg::Hello { .. }
    ));
    let refused = connect_async(format!("ws://{addr}/ws")).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 503)
        }
        other => panic!("a second viewer over the limit must get 503, got {other:?}"),
    }
    drop(first);
    // The permit comes back when the session ends.
    let mut ok = None;
    for _ in 0..50 {
        if let Ok((ws, _)) = connect_async(format!("ws://{addr}/ws")).await {
            ok = Some(ws);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        ok.is_some(),
        "a viewer can connect again once the first left"
    );
}

#[tokio::test]
async fn host_status_turns_stale_when_frames_stop_and_up_when_they_resume() {
    let interval = Duration::from_millis(100);
    let hub = HostFeed::new("testhost", interval, HostFeedConfig::for_interval(interval));
    let srv = server_with(hub.clone()).await;
    hub.publish(frame(0)).expect("encodes");
    let mut ws = connect(srv.addr, "?since_seq=0").await;
    let state_of = |m: &ServerMsg| match m {
        ServerMsg::HostStatus { state, .. } => Some(*state),
        _ => None,
    };
    // hello, backfill, then the state as of now.
    let mut first = None;
    while first.is_none() {
        first = state_of(&next_msg(&mut ws).await);
    }
    assert_eq!(first, Some(shared::HostState::Up));
    let quiet = std::time::Instant::now();
    let stale = loop {
        let m = next_msg(&mut ws).await;
        if let Some(state) = state_of(&m) {
            break (state, m);
        }
    };
    assert_eq!(stale.0, shared::HostState::Stale, "{:?}", stale.1);
    assert!(
        quiet.elapsed() >= hub.stale_after() - interval,
        "stale only after {:?} without frames, not after {:?}",
        hub.stale_after(),
        quiet.elapsed()
    );
    hub.publish(frame(1)).expect("encodes");
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Frame { .. }));
    let back = next_msg(&mut ws).await;
    assert_eq!(state_of(&back), Some(shared::HostState::Up), "{back:?}");
}

/// A `subscribe` with `max_frames` (a hub that keeps that many of this host's frames) is
/// backfilled with the newest that many only, not the whole history.
#[tokio::test]
async fn a_subscribe_with_max_frames_gets_only_the_newest() {
    let s = server(default_config()).await;
    for i in 0..10 {
        s.hub.publish(frame(i)).expect("publish");
    }
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    ws.send(Message::text(r#"{"type":"subscribe","max_frames":3}"#))
        .await
        .expect("send");
    let seqs = collect_frames(&mut ws, 3).await;
    assert_eq!(seqs, vec![8, 9, 10]);
}
