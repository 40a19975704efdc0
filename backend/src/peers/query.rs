//! Questions a hub asks a peer about its stored history (`history_query`, `moment_query`) over
//! the link it already has, and their answers routed back (docs/hub.md#history). Each link
//! opens a [`Line`] while it is up; the hub's `/api/history` asks through it and waits.

use shared::{ClientMsg, ServerMsg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Questions waiting to be written on one link.
const QUEUE: usize = 16;
/// Questions on the wire at once, per link.
const MAX_PENDING: usize = 64;

/// A question and where its answer goes.
#[derive(Debug)]
pub struct Query {
    pub msg: ClientMsg,
    pub reply: oneshot::Sender<Result<ServerMsg, String>>,
}

/// A peer's question line: empty while its link is down.
#[derive(Clone, Default)]
pub struct Line(Arc<Mutex<Option<mpsc::Sender<Query>>>>);

impl Line {
    /// Opens the line for a new connection; the link reads the receiver.
    pub fn open(&self) -> mpsc::Receiver<Query> {
        let (tx, rx) = mpsc::channel(QUEUE);
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        rx
    }

    /// Closes it (the link ended): questions asked now fail at once.
    pub fn close(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Asks `msg` (its id is set by the link) and waits up to `timeout` for the answer.
    pub async fn ask(&self, msg: ClientMsg, timeout: Duration) -> Result<ServerMsg, String> {
        let tx = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| "the peer is not connected".to_owned())?;
        let (reply, rx) = oneshot::channel();
        tx.try_send(Query { msg, reply }).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => "too many questions wait on this peer".to_owned(),
            mpsc::error::TrySendError::Closed(_) => "the peer's link ended".to_owned(),
        })?;
        match tokio::time::timeout(timeout, rx).await {
            Err(_) => Err(format!(
                "the peer did not answer within {} s",
                timeout.as_secs()
            )),
            Ok(Err(_)) => Err("the peer's link ended before it answered".to_owned()),
            Ok(Ok(answer)) => answer,
        }
    }
}

/// The questions one connection has on the wire, by id.
#[derive(Debug, Default)]
pub struct Pending {
    next: u64,
    waiting: HashMap<u64, oneshot::Sender<Result<ServerMsg, String>>>,
}

impl Pending {
    /// The line to write for `q`, with a fresh id; `None` (and the asker told) when too many
    /// wait.
    pub fn send(&mut self, q: Query) -> Option<String> {
        self.waiting.retain(|_, tx| !tx.is_closed());
        if self.waiting.len() >= MAX_PENDING {
            let _ = q
                .reply
                .send(Err("too many questions wait on this peer".into()));
            return None;
        }
        self.next += 1;
        let id = self.next;
        let msg = match q.msg {
            ClientMsg::HistoryQuery {
                from_ms,
                to_ms,
                points,
                only,
                findings,
                ..
            } => ClientMsg::HistoryQuery {
                id,
                from_ms,
                to_ms,
                points,
                only,
                findings,
            },
            ClientMsg::MomentQuery { t_ms, .. } => ClientMsg::MomentQuery { id, t_ms },
            other => other,
        };
        let line = serde_json::to_string(&msg).ok()?;
        self.waiting.insert(id, q.reply);
        Some(line)
    }

    /// Hands an answer to whoever asked; `false` when `msg` is not an answer.
    pub fn answer(&mut self, msg: ServerMsg) -> bool {
        let id = match &msg {
            ServerMsg::HistoryAnswer { id, .. }
            | ServerMsg::MomentAnswer { id, .. }
            | ServerMsg::QueryFailed { id, .. } => *id,
            _ => return false,
        };
        if let Some(tx) = self.waiting.remove(&id) {
            let _ = tx.send(match msg {
                ServerMsg::QueryFailed { message, .. } => Err(message),
                other => Ok(other),
            });
        }
        true
    }
}

/// A connection's end of its peer's line: open while the connection lives, closed when it ends
/// however it ends.
pub struct Open {
    line: Option<Line>,
    rx: Option<mpsc::Receiver<Query>>,
}

impl Open {
    pub fn new(line: Option<Line>) -> Open {
        let rx = line.as_ref().map(Line::open);
        Open { line, rx }
    }

    /// The next question (never, without a line).
    pub async fn next(&mut self) -> Option<Query> {
        match &mut self.rx {
            Some(rx) => rx.recv().await,
            None => std::future::pending().await,
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if let Some(l) = &self.line {
            l.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_reaches_its_asker_by_id_and_a_closed_line_fails_at_once() {
        let line = Line::default();
        assert_eq!(
            line.ask(
                ClientMsg::MomentQuery { id: 0, t_ms: 1 },
                Duration::from_secs(1)
            )
            .await
            .expect_err("an error"),
            "the peer is not connected"
        );
        let mut rx = line.open();
        let asking = tokio::spawn({
            let line = line.clone();
            async move {
                line.ask(
                    ClientMsg::MomentQuery { id: 0, t_ms: 5 },
                    Duration::from_secs(5),
                )
                .await
            }
        });
        let q = rx.recv().await.expect("a question");
        let mut pending = Pending::default();
        let text = pending.send(q).expect("a line");
        assert_eq!(text, r#"{"type":"moment_query","id":1,"t_ms":5}"#);
        assert!(!pending.answer(ServerMsg::Pong));
        assert!(pending.answer(ServerMsg::QueryFailed {
            id: 1,
            message: "nothing".into()
        }));
        assert_eq!(
            asking.await.expect("joined").expect_err("an error"),
            "nothing"
        );
        // An answer nobody waits for is still an answer (dropped).
        assert!(pending.answer(ServerMsg::QueryFailed {
            id: 9,
            message: String::new()
        }));
    }
}
