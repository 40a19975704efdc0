//! A host's history replaced (a replay that jumps) over real `/ws` sessions: a connected client
//! is told `reset`, then gets the new history as `backfill` and the diagnosis that goes with it;
//! one that reconnects holding the old history is told `reset` before its backfill; a client
//! that holds the new history resumes without one.

#[path = "common/ws_client.rs"]
mod ws_client;

use shared::ServerMsg;
use shared::diagnosis::{Thresholds, diagnose};
use ws_client::{connect, default_config, frame, next_msg, server, subscribe};

/// Reads until the next `reset`; returns how many frames it announces.
async fn until_reset(ws: &mut ws_client::Client) -> u64 {
    loop {
        match next_msg(ws).await {
            ServerMsg::Reset { host, frames } => {
                assert_eq!(host, "testhost");
                return frames;
            }
            ServerMsg::Frame { .. }
            | ServerMsg::Backfill { .. }
            | ServerMsg::HostStatus { .. }
            | ServerMsg::Diagnosis { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// After a `reset`: the backfill's frame times, up to the diagnosis that follows it.
async fn new_history(ws: &mut ws_client::Client) -> (Vec<u64>, Option<u64>) {
    let mut times = Vec::new();
    loop {
        match next_msg(ws).await {
            ServerMsg::Backfill { frames, .. } => times.extend(frames.iter().map(|f| f.t_ms)),
            ServerMsg::Diagnosis { diagnosis, .. } => return (times, diagnosis.t_ms),
            ServerMsg::HostStatus { .. } => {}
            other => panic!("unexpected {other:?} in the new history"),
        }
    }
}

#[tokio::test]
async fn a_replaced_history_reaches_a_connected_client_as_reset_then_backfill() {
    let s = server(default_config()).await;
    for t in 0..5 {
        s.hub.publish(frame(t * 1000)).expect("publish");
    }
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    subscribe(&mut ws, None).await;

    // Back to moments before the ones held.
    let mut jumped: Vec<_> = (0..3).map(|t| frame(t * 100)).collect();
    let d = diagnose(&jumped, &Thresholds::default(), None);
    s.hub
        .replace_history(&mut jumped, Some(&d))
        .expect("replace");
    assert_eq!(until_reset(&mut ws).await, 3);
    let (times, diagnosed) = new_history(&mut ws).await;
    let base = frame(0).t_ms;
    assert_eq!(times, vec![base, base + 100, base + 200]);
    assert_eq!(
        diagnosed,
        Some(base + 200),
        "the diagnosis of the new moment"
    );

    // Live frames go on after the new history, with seqs above it.
    s.hub.publish(frame(300)).expect("publish");
    match next_msg(&mut ws).await {
        ServerMsg::Frame { frame, .. } => {
            assert_eq!(frame.t_ms, base + 300);
            assert!(frame.seq > jumped[2].seq);
        }
        other => panic!("expected the live frame, got {other:?}"),
    }
}

#[tokio::test]
async fn a_client_that_reconnects_holding_the_old_history_is_told_to_drop_it() {
    let s = server(default_config()).await;
    for t in 0..5 {
        s.hub.publish(frame(t * 1000)).expect("publish");
    }
    let old_newest = s.hub.latest().map(|e| e.seq).expect("a frame");
    let mut jumped: Vec<_> = (0..2).map(|t| frame(t * 100)).collect();
    s.hub.replace_history(&mut jumped, None).expect("replace");

    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    subscribe(&mut ws, Some(old_newest)).await;
    assert!(
        matches!(next_msg(&mut ws).await, ServerMsg::Reset { frames: 2, .. }),
        "reset before the backfill"
    );
    match next_msg(&mut ws).await {
        ServerMsg::Backfill { frames, .. } => assert_eq!(frames.len(), 2, "all of the new one"),
        other => panic!("expected the backfill, got {other:?}"),
    }

    // Holding the new history, a client resumes as usual.
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    subscribe(&mut ws, Some(jumped[0].seq)).await;
    match next_msg(&mut ws).await {
        ServerMsg::Backfill { frames, .. } => {
            assert_eq!(
                frames.iter().map(|f| f.seq).collect::<Vec<_>>(),
                vec![jumped[1].seq]
            );
        }
        other => panic!("expected the backfill without a reset, got {other:?}"),
    }
}
