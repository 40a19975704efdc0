//! A session on a host feed for tests that drive it through channels: its parameters, with the
//! wait for a first `subscribe` skipped, and the next message it sent. Include with
//! `#[path = "common/session_kit.rs"] mod session_kit;`.

use axum::extract::ws::Message;
use shared::ServerMsg;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use vramio::host_feed::HostFeed;
use vramio::host_feed::fleet::Fleet;
use vramio::http::session::SessionParams;

/// An owner's session on `hub` from the first frame (`since_seq` 0), ended by `cancel`.
#[allow(
    dead_code,
    reason = "not every test that includes the kit builds its sessions this way"
)]
pub fn params(hub: &HostFeed, cancel: &CancellationToken) -> SessionParams {
    SessionParams {
        fleet: Fleet::single(hub.clone()),
        version: "test",
        // Skips the wait for a first `subscribe`.
        since_seq: Some(0),
        cancel: cancel.clone(),
        lease: None,
        show_users: true,
        history: None,
    }
}

/// The next message the session sent into `rx`, decoded (panics after 10 s, or on anything but
/// a server message).
#[allow(
    dead_code,
    reason = "not every test that includes the kit reads messages this way"
)]
pub async fn next(rx: &mut mpsc::Receiver<Message>) -> ServerMsg {
    let msg = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a message within 10 s")
        .expect("session alive");
    match msg {
        Message::Text(t) => serde_json::from_str(t.as_str()).expect("a server message"),
        other => panic!("unexpected {other:?}"),
    }
}
