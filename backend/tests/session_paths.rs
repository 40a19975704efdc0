//! One session path for one host and several, driven by channels: a host alone and the same host
//! selected out of several get the same messages, and a slow socket leaves the hosts of a
//! multi-host session unpolled (they lag and catch up from the ring) instead of queueing frames
//! behind it.

#[path = "common/session_kit.rs"]
mod session_kit;

use axum::extract::ws::Message;
use futures_util::{Sink, Stream, StreamExt, sink, stream};
use session_kit::next;
use shared::{Frame, ServerMsg};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use vramio::host_feed::fleet::Fleet;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::session::{self, SessionParams};

fn hub(name: &str, history: usize, channel: usize) -> HostFeed {
    HostFeed::new(
        name,
        Duration::from_secs(1),
        HostFeedConfig {
            history_frames: history,
            channel_capacity: channel,
            first_seq: 1,
        },
    )
}

fn publish(h: &HostFeed, t: u64) {
    h.publish(Frame::empty(h.host(), 0, 1_700_000_000_000 + t, 1000))
        .expect("publish");
}

/// A socket whose server side holds `room` messages until the client reads them.
fn socket(room: usize) -> (impl Sink<Message> + Unpin, mpsc::Receiver<Message>) {
    let (tx, rx) = mpsc::channel::<Message>(room);
    let sink = Box::pin(sink::unfold(tx, |tx, msg: Message| async move {
        tx.send(msg).await.map_err(|_| "client gone")?;
        Ok::<_, &'static str>(tx)
    }));
    (sink, rx)
}

/// What the client sends: `first`, then nothing until the session ends.
fn client(first: Option<&'static str>) -> impl Stream<Item = Result<Message, Infallible>> + Unpin {
    let first = first.map(|t| Ok(Message::text(t)));
    Box::pin(stream::iter(first).chain(stream::pending()))
}

fn start(
    fleet: Fleet,
    since_seq: Option<u64>,
    first: Option<&'static str>,
    room: usize,
) -> (mpsc::Receiver<Message>, CancellationToken) {
    let (sink, rx) = socket(room);
    let cancel = CancellationToken::new();
    let params = SessionParams {
        fleet,
        version: "test",
        since_seq,
        cancel: cancel.clone(),
        lease: None,
        show_users: true,
        history: None,
    };
    tokio::spawn(session::run(params, sink, client(first)));
    (rx, cancel)
}

/// The next `n` messages, without `hello` and `summary` (what differs between one host and
/// several), as JSON.
async fn messages(rx: &mut mpsc::Receiver<Message>, n: usize) -> Vec<String> {
    let mut got = Vec::new();
    while got.len() < n {
        let m = next(rx).await;
        if !matches!(m, ServerMsg::Hello { .. } | ServerMsg::Summary { .. }) {
            got.push(serde_json::to_string(&m).expect("encodes"));
        }
    }
    got
}

#[tokio::test(flavor = "current_thread")]
async fn a_host_alone_and_the_same_host_of_several_get_the_same_messages() {
    let h = hub("h", 100, 16);
    let other = hub("o", 100, 16);
    for t in 0..5 {
        publish(&h, t);
        publish(&other, t);
    }
    let d = shared::diagnosis::diagnose(&[], &Default::default(), None);
    h.publish_diagnosis(5, &d).expect("diagnosis");
    let (mut alone, stop_alone) = start(
        Fleet::single(h.clone()),
        None,
        Some(r#"{"type":"subscribe","since_seq":2,"samples":true}"#),
        64,
    );
    let (mut of_two, stop_of_two) = start(
        Fleet::new(vec![other.clone(), h.clone()]),
        None,
        Some(r#"{"type":"subscribe","hosts":["h"],"since":{"h":2},"samples":true}"#),
        64,
    );
    // The backfill after seq 2, the host's state and the current diagnosis.
    let started = messages(&mut alone, 3).await;
    assert_eq!(started, messages(&mut of_two, 3).await);
    assert!(started[0].contains(r#""type":"backfill""#), "{started:?}");
    // Then live frames, of that host only.
    publish(&other, 5);
    publish(&h, 5);
    publish(&h, 6);
    let live = messages(&mut alone, 2).await;
    assert_eq!(live, messages(&mut of_two, 2).await);
    assert!(
        live.iter().all(|m| m.contains(r#""type":"frame""#)),
        "{live:?}"
    );
    stop_alone.cancel();
    stop_of_two.cancel();
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_socket_leaves_several_hosts_unpolled_rather_than_queueing_their_frames() {
    // Each host's channel holds 4 frames; its ring every frame published here.
    let hubs = vec![hub("a", 1000, 4), hub("b", 1000, 4)];
    let (mut rx, cancel) = start(Fleet::new(hubs.clone()), Some(0), None, 1);
    // hello, then each host's state: both streams are live.
    let mut states = 0;
    while states < 2 {
        if let ServerMsg::HostStatus { .. } = next(&mut rx).await {
            states += 1;
        }
    }
    // The client stops reading; frames come one at a time, each with time for the session to
    // take it (a session that kept taking frames would queue every one of them).
    for t in 0..40 {
        for h in &hubs {
            publish(h, t);
        }
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }
    let mut seen: BTreeMap<String, (Vec<u64>, usize)> = BTreeMap::new();
    while seen.values().map(|(s, _)| s.len()).sum::<usize>() < 80 {
        match next(&mut rx).await {
            ServerMsg::Frame { host, frame } => {
                let e = seen.entry(host).or_default();
                e.0.push(frame.seq);
                e.1 += 1;
            }
            ServerMsg::Backfill { host, frames } => {
                seen.entry(host)
                    .or_default()
                    .0
                    .extend(frames.iter().map(|f| f.seq));
            }
            ServerMsg::HostStatus { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    for (host, (seqs, live)) in &seen {
        assert_eq!(
            seqs,
            &(1..=40).collect::<Vec<u64>>(),
            "{host}: none lost or repeated"
        );
        // At most the write in progress and what the host's channel held: the rest came from
        // the ring.
        assert!(*live <= 6, "{host}: {live} frames queued live");
    }
    cancel.cancel();
}
