//! The hosts a hub watches: other vramio instances reached over SSH (`vramio stream` on the far
//! side, stdout lines) or WebSocket (`vramio serve`, bearer token). Each peer runs on its own task
//! and feeds one [`PeerSink`] (its host's `HostFeed` in the fleet); one peer's failure, slowness or
//! garbage never touches another's.
//!
//! - [`feed`]: turns the protocol messages a peer sends into frames, diagnoses and states, and
//!   remembers the seq to resume from;
//! - [`life`]: connect, stream, report why it ended, back off, resume;
//! - [`spec`]: the peers as written (`ssh://`, `ws://`, `wss://`, a peers file), validated;
//! - [`ws`] (with [`tls`]): the link to a `vramio serve` over WebSocket;
//! - [`ssh`]: the SSH link (the system `ssh`, `vramio stream` on the far side), reading its
//!   stdout with [`lines`]' bounded line reader;
//! - [`dispatch`]: the link for each peer ([`link_for`]).

pub mod dispatch;
pub mod feed;
pub mod life;
pub mod lines;
pub mod query;
pub mod spec;
pub mod ssh;
pub mod tls;
pub mod ws;

pub use dispatch::{LinkOptions, link_for};
pub use spec::{PeerLine, PeerSpec, parse_peers_file, read_peers_file};

use shared::diagnosis::Diagnosis;
use shared::{Frame, HostState};

/// Where one peer's data goes. The fleet's per-host `HostFeed` implements it; tests collect.
pub trait PeerSink: Send + Sync + 'static {
    /// The link's state: `Connecting` while reaching the peer, `Up` once it streams, `Down` with
    /// the reason (ssh's last error line, "unauthorized", "connection refused", "protocol
    /// error: ..."). Staleness (no frame for 3 intervals) is the hub's to notice.
    fn link(&self, state: HostState, error: Option<String>);
    /// A frame from the peer, in order (its `seq` is the peer's; the hub stamps its own).
    fn frame(&self, frame: Frame);
    /// The peer's latest diagnosis (computed there: one place computes it).
    fn diagnosis(&self, diagnosis: Diagnosis);
    /// The peer's history was replaced (a replay there jumped): what came before is not the
    /// host's recent past any more; the new history follows as frames.
    fn reset(&self) {}
    /// The line the hub asks this peer's history through, while its link is up.
    fn questions(&self) -> Option<query::Line> {
        None
    }
}
