//! How a session's messages are grouped into writes to the socket: a diagnosis published with a
//! frame goes out in the same write as the frame (one wake-up and one `sendto` a tick, not two).

#[path = "common/session_kit.rs"]
mod session_kit;

use axum::extract::ws::Message;
use futures_util::{Sink, stream};
use shared::diagnosis::Thresholds;
use shared::{Frame, ServerMsg};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use vramio::host_feed::diagnoser::{DEFAULT_WINDOW, Diagnoser};
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::session;

/// A socket stand-in: messages queue until a flush, and each flush is one write.
struct Writes {
    pending: Vec<ServerMsg>,
    written: mpsc::UnboundedSender<Vec<ServerMsg>>,
}

impl Sink<Message> for Writes {
    type Error = Infallible;
    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn start_send(mut self: Pin<&mut Self>, msg: Message) -> Result<(), Infallible> {
        let Message::Text(text) = msg else {
            panic!("unexpected {msg:?}");
        };
        let msg = serde_json::from_str(text.as_str()).expect("a server message");
        self.pending.push(msg);
        Ok(())
    }
    fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if !self.pending.is_empty() {
            let write = std::mem::take(&mut self.pending);
            let _ = self.written.send(write);
        }
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.poll_flush(cx)
    }
}

async fn next_write(rx: &mut mpsc::UnboundedReceiver<Vec<ServerMsg>>) -> Vec<ServerMsg> {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a write within 10 s")
        .expect("session alive")
}

/// What a write holds, as `frame <seq>` and `diagnosis <seq of its newest frame>`.
fn kinds(write: &[ServerMsg]) -> Vec<String> {
    write
        .iter()
        .map(|m| match m {
            ServerMsg::Frame { frame, .. } => format!("frame {}", frame.seq),
            ServerMsg::Diagnosis { diagnosis, .. } => {
                format!("diagnosis t_ms {:?}", diagnosis.t_ms)
            }
            other => format!("{other:?}"),
        })
        .collect()
}

// One thread: each publish below completes before the session takes its next step.
#[tokio::test(flavor = "current_thread")]
async fn a_diagnosis_published_with_a_frame_goes_out_in_the_frames_write() {
    let hub = HostFeed::new(
        "h",
        Duration::from_secs(1),
        HostFeedConfig {
            history_frames: 100,
            channel_capacity: 16,
            first_seq: 1,
        },
    );
    let (written, mut writes) = mpsc::unbounded_channel();
    let sink = Writes {
        pending: Vec::new(),
        written,
    };
    let cancel = CancellationToken::new();
    let params = session_kit::params(&hub, &cancel);
    tokio::spawn(session::run(
        params,
        sink,
        stream::pending::<Result<Message, Infallible>>(),
    ));
    // hello, then the host's state: the session is live.
    loop {
        let write = next_write(&mut writes).await;
        if write
            .iter()
            .any(|m| matches!(m, ServerMsg::HostStatus { .. }))
        {
            break;
        }
    }

    let mut diagnoser = Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW);
    let t0 = 1_700_000_000_000;
    let frame = |i: u64| Frame::empty("h", 0, t0 + i * 1000, 1000);
    // The first diagnosis is due at once: it rides with its frame.
    diagnoser.publish_to(&hub, frame(0));
    assert_eq!(
        kinds(&next_write(&mut writes).await),
        vec!["frame 1".to_owned(), format!("diagnosis t_ms Some({t0})")]
    );
    // The host is up now (a change of state, said once).
    let up = next_write(&mut writes).await;
    assert!(
        matches!(
            up.as_slice(),
            [ServerMsg::HostStatus {
                state: shared::HostState::Up,
                ..
            }]
        ),
        "{up:?}"
    );
    // The next one is the same diagnosis, not due for 5 s: the frame goes alone.
    diagnoser.publish_to(&hub, frame(1));
    assert_eq!(
        kinds(&next_write(&mut writes).await),
        vec!["frame 2".to_owned()]
    );
    cancel.cancel();
}
