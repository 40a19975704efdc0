//! A session on a hub for tests that drive it through channels: its parameters, with the wait for
//! a first `subscribe` skipped. Include with `#[path = "common/session_kit.rs"] mod session_kit;`.

use tokio_util::sync::CancellationToken;
use vramio::host_feed::HostFeed;
use vramio::host_feed::fleet::Fleet;
use vramio::http::session::SessionParams;

/// An owner's session on `hub` from the first frame (`since_seq` 0), ended by `cancel`.
pub fn params(hub: &HostFeed, cancel: &CancellationToken) -> SessionParams {
    SessionParams {
        fleet: Fleet::single(hub.clone()),
        version: "test",
        // Skips the wait for a first `subscribe`.
        since_seq: Some(0),
        cancel: cancel.clone(),
        lease: None,
        show_users: true,
    }
}
