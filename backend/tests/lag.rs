//! A session that falls behind the hub's channel, driven by channels (no socket buffers to hide
//! the lag): frames the history ring still holds are backfilled, and `lagged { skipped }` counts
//! only the frames the ring no longer has.

#[path = "common/session_kit.rs"]
mod session_kit;

use axum::extract::ws::Message;
use futures_util::{sink, stream};
use session_kit::next;
use shared::{Frame, ServerMsg};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::session;

/// What the client saw: every frame's seq in arrival order, and the sum of `lagged.skipped`.
#[derive(Debug, Default)]
struct Seen {
    seqs: Vec<u64>,
    skipped: u64,
    lagged_messages: usize,
}

/// A session on `hub` whose client reads nothing until told to: its sink holds one message.
fn start(hub: &HostFeed) -> (mpsc::Receiver<Message>, CancellationToken) {
    let (tx, rx) = mpsc::channel::<Message>(1);
    let sink = Box::pin(sink::unfold(tx, |tx, msg: Message| async move {
        tx.send(msg).await.map_err(|_| "client gone")?;
        Ok::<_, &'static str>(tx)
    }));
    let cancel = CancellationToken::new();
    let params = session_kit::params(hub, &cancel);
    let client = stream::pending::<Result<Message, Infallible>>();
    tokio::spawn(session::run(params, sink, client));
    (rx, cancel)
}

/// Reads until the frame with seq `last` arrived.
async fn read_until(rx: &mut mpsc::Receiver<Message>, last: u64) -> Seen {
    let mut seen = Seen::default();
    while seen.seqs.last() != Some(&last) {
        match next(rx).await {
            ServerMsg::Frame { frame, .. } => seen.seqs.push(frame.seq),
            ServerMsg::Backfill { frames, .. } => seen.seqs.extend(frames.iter().map(|f| f.seq)),
            ServerMsg::Lagged { skipped } => {
                seen.skipped += skipped;
                seen.lagged_messages += 1;
            }
            ServerMsg::HostStatus { .. } | ServerMsg::Diagnosis { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    seen
}

/// Waits for hello and the (empty) start of the stream, so the session is subscribed.
async fn settled(rx: &mut mpsc::Receiver<Message>) {
    assert!(matches!(next(rx).await, ServerMsg::Hello { .. }));
    assert!(matches!(next(rx).await, ServerMsg::HostStatus { .. }));
}

fn frame(t: u64) -> Frame {
    Frame::empty("h", 0, 1_700_000_000_000 + t, 1000)
}

// One thread: the publishes below run back to back before the session takes its next step, so
// the session is certainly behind by all of them.
#[tokio::test(flavor = "current_thread")]
async fn a_client_behind_the_channel_but_within_the_ring_gets_every_frame() {
    let hub = HostFeed::new(
        "h",
        Duration::from_secs(1),
        HostFeedConfig {
            history_frames: 100,
            channel_capacity: 4,
            first_seq: 1,
        },
    );
    let (mut rx, cancel) = start(&hub);
    settled(&mut rx).await;
    for t in 0..30 {
        hub.publish(frame(t)).expect("publish");
    }
    let seen = read_until(&mut rx, 30).await;
    assert_eq!(
        seen.seqs,
        (1..=30).collect::<Vec<u64>>(),
        "no gap, no repeat"
    );
    assert_eq!(seen.skipped, 0, "the ring held every frame: {seen:?}");
    assert_eq!(seen.lagged_messages, 0, "nothing was lost: {seen:?}");

    // And it goes on live after the recovery.
    hub.publish(frame(30)).expect("publish");
    assert_eq!(read_until(&mut rx, 31).await.seqs, vec![31]);
    cancel.cancel();
}

#[tokio::test(flavor = "current_thread")]
async fn a_client_behind_the_ring_is_told_exactly_what_the_ring_dropped() {
    // seq starts at a server start time in ms, as in `vramio serve`.
    let first: u64 = 1_700_000_000_000;
    let hub = HostFeed::new(
        "h",
        Duration::from_secs(1),
        HostFeedConfig {
            history_frames: 10,
            channel_capacity: 4,
            first_seq: first,
        },
    );
    let (mut rx, cancel) = start(&hub);
    settled(&mut rx).await;
    for t in 0..30 {
        hub.publish(frame(t)).expect("publish");
    }
    let last = first + 29;
    let seen = read_until(&mut rx, last).await;
    assert_eq!(
        seen.seqs,
        (first + 20..=last).collect::<Vec<u64>>(),
        "what the ring held"
    );
    assert_eq!(seen.skipped, 20, "exactly the frames the ring dropped");
    assert_eq!(seen.seqs.len() as u64 + seen.skipped, 30);

    // A second lag after the client already had frames counts from its last one.
    for t in 30..50 {
        hub.publish(frame(t)).expect("publish");
    }
    let seen = read_until(&mut rx, first + 49).await;
    assert_eq!(seen.seqs, (first + 40..=first + 49).collect::<Vec<u64>>());
    assert_eq!(seen.skipped, 10);
    cancel.cancel();
}
