//! Tests of one host's stream on its own, without a socket: what it queues at the start, how it
//! catches up after nobody polled it, and that a `next` dropped half-way loses nothing.

use super::*;
use crate::http::session::BACKFILL_CHUNK;
use futures_util::FutureExt;
use shared::Frame;

fn hub(history: usize, channel: usize) -> HostFeed {
    HostFeed::new(
        "h",
        Duration::from_secs(1),
        crate::host_feed::HostFeedConfig {
            history_frames: history,
            channel_capacity: channel,
            first_seq: 1,
        },
    )
}

fn publish(hub: &HostFeed, n: u64) {
    for t in 0..n {
        hub.publish(Frame::empty("h", 0, 1_700_000_000_000 + t, 1000))
            .expect("publish");
    }
}

fn decode(batch: Vec<Message>) -> Vec<ServerMsg> {
    batch
        .into_iter()
        .map(|m| match m {
            Message::Text(t) => serde_json::from_str(t.as_str()).expect("a server message"),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

/// Every batch the stream has ready now, without waiting.
fn ready(s: &mut HostStream) -> Vec<Vec<ServerMsg>> {
    let mut batches = Vec::new();
    while let Some(batch) = s.next().now_or_never() {
        batches.push(decode(batch.expect("the stream goes on")));
    }
    batches
}

/// The frames' seqs, `lagged.skipped` summed, and how many frames came live (not as backfill).
fn seqs(batches: &[Vec<ServerMsg>]) -> (Vec<u64>, u64, usize) {
    let (mut seqs, mut skipped, mut live) = (Vec::new(), 0, 0);
    for m in batches.iter().flatten() {
        match m {
            ServerMsg::Frame { frame, .. } => {
                seqs.push(frame.seq);
                live += 1;
            }
            ServerMsg::Backfill { frames, .. } => seqs.extend(frames.iter().map(|f| f.seq)),
            ServerMsg::Lagged { skipped: n } => skipped += n,
            _ => {}
        }
    }
    (seqs, skipped, live)
}

#[tokio::test(flavor = "current_thread")]
async fn the_start_is_the_backfill_then_the_host_state_then_the_diagnosis() {
    let h = hub(100, 4);
    publish(&h, 300);
    let d = shared::diagnosis::diagnose(&[], &Default::default(), None);
    h.publish_diagnosis(300, &d).expect("diagnosis");
    let mut s = HostStream::start(h, Start::default(), true);
    let batches = ready(&mut s);
    let kinds: Vec<&str> = batches
        .iter()
        .map(|b| match b.as_slice() {
            [ServerMsg::Backfill { .. }] => "backfill",
            [ServerMsg::HostStatus { .. }] => "host_status",
            [ServerMsg::Diagnosis { .. }] => "diagnosis",
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    // The ring's 100 frames in one chunk: each chunk is a write of its own.
    assert_eq!(kinds, ["backfill", "host_status", "diagnosis"]);
    assert_eq!(seqs(&batches).0, (201..=300).collect::<Vec<u64>>());
}

#[tokio::test(flavor = "current_thread")]
async fn a_stream_nobody_polls_lags_then_catches_up_from_the_ring_with_nothing_lost_or_repeated() {
    let h = hub(100, 4);
    let mut s = HostStream::start(h.clone(), Start::default(), true);
    ready(&mut s);
    publish(&h, 30);
    let batches = ready(&mut s);
    let (seqs, skipped, live) = seqs(&batches);
    assert_eq!(seqs, (1..=30).collect::<Vec<u64>>(), "no gap, no repeat");
    assert_eq!(skipped, 0, "the ring held every frame");
    assert_eq!(live, 0, "caught up from the ring: {batches:?}");
    // Live again after that.
    publish(&h, 1);
    let (seqs, _, live) = self::seqs(&ready(&mut s));
    assert_eq!((seqs, live), (vec![31], 1));
}

#[tokio::test(flavor = "current_thread")]
async fn a_stream_behind_the_ring_says_lagged_for_exactly_what_the_ring_dropped() {
    let h = hub(10, 4);
    let mut s = HostStream::start(h.clone(), Start::default(), true);
    ready(&mut s);
    publish(&h, 30);
    let (seqs, skipped, _) = seqs(&ready(&mut s));
    assert_eq!(seqs, (21..=30).collect::<Vec<u64>>());
    assert_eq!(skipped, 20);
}

#[tokio::test(flavor = "current_thread")]
async fn a_next_dropped_half_way_loses_nothing() {
    let h = hub(1000, 64);
    publish(&h, 300);
    // 300 frames from the start: three chunks, each a write.
    let mut s = HostStream::start(h.clone(), Start::default(), true);
    let first = decode(s.next().await.expect("a batch"));
    assert!(
        matches!(first.as_slice(), [ServerMsg::Backfill { frames, .. }] if frames.len() == BACKFILL_CHUNK)
    );
    let mut rest = ready(&mut s);
    rest.insert(0, first);
    assert_eq!(seqs(&rest).0, (1..=300).collect::<Vec<u64>>());
    // Waiting for the next frame, the future is dropped (as a `select!` drops it); the frame
    // published after is still the next batch.
    assert!(s.next().now_or_never().is_none());
    publish(&h, 1);
    let next = decode(s.next().await.expect("a batch"));
    assert!(matches!(next.as_slice(), [ServerMsg::Frame { frame, .. }] if frame.seq == 301));
}

#[tokio::test(flavor = "current_thread")]
async fn a_start_after_a_seq_resumes_there_and_keeps_max_frames() {
    let h = hub(100, 4);
    publish(&h, 50);
    let mut resumed = HostStream::start(
        h.clone(),
        Start {
            since: Some(45),
            ..Start::default()
        },
        true,
    );
    assert_eq!(seqs(&ready(&mut resumed)).0, vec![46, 47, 48, 49, 50]);
    let mut newest = HostStream::start(
        h,
        Start {
            max_frames: Some(3),
            ..Start::default()
        },
        true,
    );
    assert_eq!(seqs(&ready(&mut newest)).0, vec![48, 49, 50]);
}
