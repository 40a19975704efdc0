//! A host's history replaced (a replay that jumps) over real `/ws` sessions: a connected client
//! is told `reset`, then gets the new history (its older frames as `history` samples, the newest
//! as `backfill`) and the diagnosis that goes with it;
//! one that reconnects holding the old history is told `reset` before its backfill; a client
//! that holds the new history resumes without one.

#[path = "common/ws_client.rs"]
mod ws_client;

use futures_util::SinkExt;
use shared::ServerMsg;
use shared::diagnosis::{Thresholds, diagnose};
use ws_client::{connect, default_config, frame, next_msg, server};

/// `subscribe` as the page sends it: resuming after `since`, taking chart samples.
async fn subscribe(ws: &mut ws_client::Client, since: Option<u64>) {
    let since = since.map_or(String::new(), |s| format!(r#","since_seq":{s}"#));
    ws.send(tokio_tungstenite::tungstenite::Message::text(format!(
        r#"{{"type":"subscribe","samples":true{since}}}"#
    )))
    .await
    .expect("subscribe");
}

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

/// Reads until the next `backfill`.
async fn until_backfill(ws: &mut ws_client::Client) {
    while !matches!(next_msg(ws).await, ServerMsg::Backfill { .. }) {}
}

/// After a `reset`: the times of the new history's samples and whole frames, up to the
/// diagnosis that follows it.
async fn new_history(ws: &mut ws_client::Client) -> (Vec<u64>, Vec<u64>, Option<u64>) {
    let (mut sampled, mut times) = (Vec::new(), Vec::new());
    loop {
        match next_msg(ws).await {
            ServerMsg::History { samples, .. } => {
                assert!(times.is_empty(), "samples come before the whole frames");
                sampled.extend(samples.iter().map(|s| s.t_ms));
            }
            ServerMsg::Backfill { frames, .. } => times.extend(frames.iter().map(|f| f.t_ms)),
            ServerMsg::Diagnosis { diagnosis, .. } => return (sampled, times, diagnosis.t_ms),
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
    // The page's first load is a history too: 4 samples and the newest frame.
    assert_eq!(until_reset(&mut ws).await, 5);
    until_backfill(&mut ws).await;
    // A hub's link to a peer takes whole frames only.
    let mut peer = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut peer).await, ServerMsg::Hello { .. }));
    ws_client::subscribe(&mut peer, None).await;
    until_backfill(&mut peer).await;

    // Back to moments before the ones held.
    let mut jumped: Vec<_> = (0..3).map(|t| frame(t * 100)).collect();
    let d = diagnose(&jumped, &Thresholds::default(), None);
    s.hub
        .replace_history(&mut jumped, Some(&d))
        .expect("replace");
    assert_eq!(until_reset(&mut ws).await, 3);
    let (sampled, whole, diagnosed) = new_history(&mut ws).await;
    let base = frame(0).t_ms;
    assert_eq!(
        sampled,
        vec![base, base + 100],
        "the older ones as chart samples"
    );
    assert_eq!(whole, vec![base + 200], "the newest whole");
    assert_eq!(
        diagnosed,
        Some(base + 200),
        "the diagnosis of the new moment"
    );
    assert_eq!(until_reset(&mut peer).await, 3);
    let (sampled, whole, _) = new_history(&mut peer).await;
    assert!(
        sampled.is_empty(),
        "no samples for a client that did not ask"
    );
    assert_eq!(whole, vec![base, base + 100, base + 200]);

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
        ServerMsg::History { samples, .. } => assert_eq!(samples.len(), 1),
        other => panic!("expected the older frame as a sample, got {other:?}"),
    }
    match next_msg(&mut ws).await {
        ServerMsg::Backfill { frames, .. } => assert_eq!(frames.len(), 1, "the newest whole"),
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

#[tokio::test]
async fn a_long_jump_history_comes_in_chunks_a_tenth_of_the_frames_bytes() {
    let s = server(default_config()).await;
    s.hub.publish(frame(0)).expect("publish");
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    subscribe(&mut ws, None).await;
    // 900 frames of 8 GPUs.
    let template = {
        let mut f = frame(0);
        let g: shared::Gpu = serde_json::from_value(serde_json::json!({
            "index": 0, "state": "ok", "name": "NVIDIA H100 80GB HBM3",
            "memory": {"total_bytes": 85_520_809_984u64, "used_bytes": 33_554_432_000u64,
                       "free_bytes": 51_966_377_984u64},
            "utilization_gpu_pct": 90.0
        }))
        .expect("a gpu");
        f.gpus = (0..8)
            .map(|i| shared::Gpu {
                index: i,
                ..g.clone()
            })
            .collect();
        f
    };
    let mut jumped: Vec<_> = (0..900u64)
        .map(|t| shared::Frame {
            t_ms: template.t_ms + t * 1000,
            ..template.clone()
        })
        .collect();
    let frame_bytes: usize = jumped
        .iter()
        .map(|f| serde_json::to_string(f).map_or(0, |j| j.len()))
        .sum();
    s.hub.replace_history(&mut jumped, None).expect("replace");
    assert_eq!(until_reset(&mut ws).await, 900);
    let (mut samples, mut chunks, mut bytes) = (0, 0, 0);
    loop {
        let msg = next_msg(&mut ws).await;
        bytes += serde_json::to_string(&msg).map_or(0, |j| j.len());
        match msg {
            ServerMsg::History { samples: s, .. } => {
                samples += s.len();
                chunks += 1;
                assert!(s.iter().all(|s| s.gpus.len() == 8));
            }
            ServerMsg::Backfill { frames, .. } => {
                assert_eq!(frames.len(), 1);
                break;
            }
            ServerMsg::HostStatus { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(samples, 899);
    assert!(chunks > 1, "chunked");
    assert!(
        bytes * 5 < frame_bytes,
        "{bytes} bytes on the wire for {frame_bytes} bytes of frames"
    );
}

#[tokio::test]
async fn a_page_that_takes_samples_gets_its_first_history_as_samples_and_a_whole_newest_frame() {
    let s = server(default_config()).await;
    for t in 0..5 {
        s.hub.publish(frame(t * 1000)).expect("publish");
    }
    let mut ws = connect(s.addr, "").await;
    assert!(matches!(next_msg(&mut ws).await, ServerMsg::Hello { .. }));
    ws.send(tokio_tungstenite::tungstenite::Message::text(
        r#"{"type":"subscribe","samples":true}"#,
    ))
    .await
    .expect("subscribe");
    assert!(matches!(
        next_msg(&mut ws).await,
        ServerMsg::Reset { frames: 5, .. }
    ));
    match next_msg(&mut ws).await {
        ServerMsg::History { samples, .. } => {
            assert_eq!(
                samples.iter().map(|s| s.seq).collect::<Vec<_>>(),
                [1, 2, 3, 4]
            );
        }
        other => panic!("expected the older frames as samples, got {other:?}"),
    }
    match next_msg(&mut ws).await {
        ServerMsg::Backfill { frames, .. } => {
            assert_eq!(frames.iter().map(|f| f.seq).collect::<Vec<_>>(), [5]);
        }
        other => panic!("expected the newest frame whole, got {other:?}"),
    }
    // Live frames follow as usual, and a resume is whole frames.
    s.hub.publish(frame(5000)).expect("publish");
    loop {
        match next_msg(&mut ws).await {
            ServerMsg::Frame { frame, .. } => {
                assert_eq!(frame.seq, 6);
                break;
            }
            ServerMsg::HostStatus { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    ws.send(tokio_tungstenite::tungstenite::Message::text(
        r#"{"type":"subscribe","since_seq":4,"samples":true}"#,
    ))
    .await
    .expect("resume");
    match next_msg(&mut ws).await {
        ServerMsg::Backfill { frames, .. } => {
            assert_eq!(frames.iter().map(|f| f.seq).collect::<Vec<_>>(), [5, 6]);
        }
        other => panic!("expected a whole-frame resume, got {other:?}"),
    }
}
