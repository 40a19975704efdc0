//! The `/ws` protocol (docs/api.md#1-overview): JSON text messages tagged by `type`.
//!
//! Server: `hello` first, then `backfill` (frames the client missed or never saw), then one `frame`
//! per tick per host, `summary` per tick for every host (a hub's overview), `diagnosis` when it
//! changes (and at least every few seconds), `host_status`, `reset` when a replay jumps (the host's
//! history is replaced by the `history` samples and the `backfill` after it), `lagged { skipped }`
//! when a client fell behind, `error` for a bad client message, `pong`. Client: `subscribe { hosts,
//! since_seq, since }` (which hosts' full frames, resuming after which seq) and `ping`.
//! [`PROTOCOL_VERSION`] changes on any breaking change; golden fixtures in `tests/` pin it.

use crate::diagnosis::Diagnosis;
use crate::frame::Frame;
use crate::summary::HostSummary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod decode;

/// Bumped on any breaking change of the messages or of [`Frame`].
pub const PROTOCOL_VERSION: u32 = 7;

/// Largest client message the server reads; larger ones close the socket with 1009.
pub const MAX_CLIENT_MESSAGE_BYTES: usize = 4096;

/// Messages the server sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// First message on every connection.
    Hello {
        protocol: u32,
        /// The server's crate version.
        version: String,
        hosts: Vec<String>,
        interval_ms: u64,
        /// This start of the server: random, new each time it starts. A hub that sees it change
        /// starts the host over (a restarted peer numbers its frames anew, maybe lower than
        /// before). Absent from servers older than it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
    },
    /// Recent frames, oldest first, so charts are full at once and reconnects have no gap.
    Backfill { host: String, frames: Vec<Frame> },
    /// One tick of one host (boxed: a frame is far larger than the other messages). `host` is the
    /// name the server knows the host by (a hub: the peer as given), which may differ from the
    /// hostname inside the frame.
    Frame { host: String, frame: Box<Frame> },
    /// One host at a glance, every tick, for every host (the overview).
    Summary {
        host: String,
        summary: Box<HostSummary>,
    },
    /// The host's current diagnosis: sent when it changes and at least every few seconds.
    Diagnosis {
        host: String,
        diagnosis: Box<Diagnosis>,
    },
    /// Liveness of a host's data.
    HostStatus {
        host: String,
        state: HostState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_seen_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The host's history was replaced (a replay jumped to another moment): the frames held for
    /// it are no longer its recent past. The next `frames` frames or samples (`history`, then
    /// `backfill`) are the new history (with none, the next frame starts it); a page keeps showing
    /// the old one until they are all in, then swaps, so nothing flashes empty or half-filled.
    Reset { host: String, frames: u64 },
    /// Older frames of a new history as chart samples only (after `reset`, oldest first): a jump
    /// sends the charts' 15 minutes in a tenth of the bytes, and the newest frames whole.
    History {
        host: String,
        samples: Vec<crate::history::Sample>,
    },
    /// The client fell behind and `skipped` frames were not sent; the stream goes on.
    Lagged { skipped: u64 },
    /// The answer to a `history_query` (docs/api.md#history): the stored range.
    HistoryAnswer {
        id: u64,
        answer: Box<crate::stored::Answer>,
    },
    /// The answer to a `moment_query`: the page at a stored moment.
    MomentAnswer {
        id: u64,
        moment: Box<crate::stored::Moment>,
    },
    /// A `history_query` or `moment_query` that has no answer here, and why.
    QueryFailed { id: u64, message: String },
    /// A client message was refused; the connection stays open.
    Error { code: ErrorCode, message: String },
    /// Answer to `ping`.
    Pong,
}

/// Liveness of a host's frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostState {
    /// A hub is still reaching the host.
    Connecting,
    Up,
    /// No frame for several intervals.
    Stale,
    Down,
}

/// Why a client message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Not JSON, or not a known message.
    BadMessage,
    /// Binary frames are not part of the protocol.
    Unsupported,
    /// A host named in `subscribe` is not served here.
    UnknownHost,
    /// The share link this viewer came through was revoked; the server closes the socket.
    ShareRevoked,
    /// The share link this viewer came through has expired; the server closes the socket.
    ShareExpired,
}

/// Messages the client sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMsg {
    /// Start (or restart) the stream: backfill every frame after `since_seq` still held, then go
    /// live. Without `since_seq`, all held frames. `hosts` absent means every host.
    Subscribe {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hosts: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since_seq: Option<u64>,
        /// Per host, the newest seq the client holds (resume several hosts at once). Wins over
        /// `since_seq` for the hosts it names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<BTreeMap<String, u64>>,
        /// The client takes the older frames of a whole-history backfill as chart samples
        /// (`reset`, `history`, then the newest frame whole): the page does, which makes a first
        /// load of 15 minutes a tenth of the bytes; a hub's link to a peer keeps whole frames.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        samples: bool,
        /// At most this many of the newest frames per host in the backfill: a hub asks for the
        /// share of history it keeps of that peer, not the peer's whole 15 minutes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_frames: Option<u64>,
    },
    Ping,
    /// The stored history of the server's own host over a range, at about `points` points per
    /// series (what `GET /api/history` answers); a hub asks its peers with it.
    HistoryQuery {
        id: u64,
        from_ms: u64,
        to_ms: u64,
        points: u32,
        /// `scope:metric,...`: only those series (all when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        only: Option<String>,
        /// The segments with their findings and evidence (without, a month of segments is
        /// most of a chart's answer: the timeline needs only when, which verdict, how bad).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        findings: bool,
    },
    /// The page at a stored moment of the server's own host (what `GET /api/history/moment`
    /// answers).
    MomentQuery {
        id: u64,
        t_ms: u64,
    },
}

impl ServerMsg {
    /// `hello` from the server start `instance` (see [`ServerMsg::Hello`]).
    pub fn hello(hosts: Vec<String>, interval_ms: u64, version: &str, instance: &str) -> Self {
        ServerMsg::Hello {
            protocol: PROTOCOL_VERSION,
            version: version.to_owned(),
            hosts,
            interval_ms,
            instance: Some(instance.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_messages_parse() {
        let m: ClientMsg =
            serde_json::from_str(r#"{"type":"subscribe","since_seq":41}"#).expect("valid");
        assert_eq!(
            m,
            ClientMsg::Subscribe {
                hosts: None,
                since_seq: Some(41),
                since: None,
                samples: false,
                max_frames: None,
            }
        );
        assert!(serde_json::from_str::<ClientMsg>(r#"{"type":"ping"}"#).is_ok());
    }

    #[test]
    fn unknown_client_messages_are_rejected() {
        assert!(serde_json::from_str::<ClientMsg>(r#"{"type":"reboot"}"#).is_err());
        assert!(serde_json::from_str::<ClientMsg>(r#"{"since_seq":1}"#).is_err());
        assert!(
            serde_json::from_str::<ClientMsg>(r#"{"type":"subscribe","since_seq":-1}"#).is_err()
        );
        assert!(serde_json::from_str::<ClientMsg>(r#"{"type":"subscribe","bogus":1}"#).is_err());
    }
}
