//! Lag and large backfills over a real socket: a server on port 0, tokio-tungstenite clients,
//! frames far larger than the socket's buffers. `lag.rs` drives the same session by channels.

#[path = "common/ws_client.rs"]
mod ws_client;

use shared::ServerMsg;
use std::time::Duration;
use vramio::host_feed::HostFeedConfig;
use ws_client::{big_frame, collect_frames, connect, default_config, next_msg, server, subscribe};

#[tokio::test]
async fn a_full_ring_of_large_frames_backfills_whole() {
    let s = server(default_config()).await;
    // 300 frames of ~20 KiB: 6 MB of history, many times the socket's 256 KiB write limit.
    let template = big_frame(0, 20);
    for t in 0..300 {
        let mut f = template.clone();
        f.t_ms += t;
        s.hub.publish(f).expect("publish");
    }
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    subscribe(&mut ws, None).await;
    assert_eq!(
        collect_frames(&mut ws, 300).await,
        (1..=300).collect::<Vec<u64>>()
    );
}

#[tokio::test]
async fn a_client_that_stops_reading_lags_while_others_are_unaffected() {
    let s = server(HostFeedConfig {
        history_frames: 50,
        channel_capacity: 8,
        first_seq: 1,
    })
    .await;
    let mut slow = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut slow).await, ServerMsg::Hello { .. }));
    subscribe(&mut slow, None).await;
    let mut fast = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut fast).await, ServerMsg::Hello { .. }));
    subscribe(&mut fast, None).await;
    // Let both sessions finish their (empty) backfill.
    tokio::time::sleep(Duration::from_millis(300)).await;

    const FRAMES: u64 = 1500;
    let reader = tokio::spawn(async move {
        let mut seqs = Vec::new();
        let mut lagged = 0;
        while seqs.len() < FRAMES as usize {
            match next_msg(&mut fast).await {
                ServerMsg::Frame { frame, .. } => seqs.push(frame.seq),
                ServerMsg::Lagged { .. } => lagged += 1,
                _ => {}
            }
        }
        (seqs, lagged)
    });
    // ~30 MB in total: far more than the slow client's socket buffers can hold.
    let template = big_frame(0, 20);
    for t in 0..FRAMES {
        let mut f = template.clone();
        f.t_ms += t;
        s.hub.publish(f).expect("publish");
        if t % 4 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let (fast_seqs, fast_lagged) = tokio::time::timeout(Duration::from_secs(60), reader)
        .await
        .expect("the reading client keeps up")
        .expect("reader task");
    assert_eq!(fast_lagged, 0, "a reading client must not lag");
    assert_eq!(fast_seqs, (1..=FRAMES).collect::<Vec<u64>>());
    assert!(s.hub.history_len() <= 50, "history stays bounded");

    // Now the slow client reads: it was told it lagged (the ring of 50 could not hold what it
    // missed), caught up from the ring, and what it got is still in order.
    let mut lagged_total = 0;
    let mut got = Vec::new();
    while got.last() != Some(&FRAMES) {
        match next_msg(&mut slow).await {
            ServerMsg::Frame { frame, .. } => got.push(frame.seq),
            ServerMsg::Backfill { frames, .. } => got.extend(frames.iter().map(|f| f.seq)),
            ServerMsg::Lagged { skipped } => lagged_total += skipped,
            _ => {}
        }
    }
    assert!(lagged_total > 0, "the slow client must get `lagged`");
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "seq strictly increases"
    );
    assert_eq!(
        got.len() as u64 + lagged_total,
        FRAMES,
        "every frame is either sent or counted as skipped"
    );
}
