//! `use_live_feed()`: the one owner of the page's WebSocket to `/ws`.
//!
//! Connects, subscribes once `hello` says what the server is (one host: everything; a hub: only
//! summaries on the overview, one host's full data on its detail, re-subscribing when the route
//! changes), resuming from the seqs the store holds after a reconnect; decodes each `ServerMsg`
//! and hands it to the store, pings a silent connection and reconnects with exponential
//! backoff. Before a reconnect it asks `/api/session` whether the credentials still hold, and stops
//! for good when they do not or when the server ends a share viewer's link. Its state is an enum
//! signal for the connection badge, and why it ended a second one. The socket glue lives in
//! `feed/socket.rs`; the decisions it takes are the pure functions here.

mod socket;

use crate::access::ShareEnd;
use crate::route::Route;
use leptos::prelude::*;
use shared::access::Role;
use shared::{ClientMsg, PROTOCOL_VERSION};
use std::collections::BTreeMap;

/// Where the connection stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// The first connection attempt is under way.
    Connecting,
    Open,
    /// Lost; the next attempt (`attempt`, from 1) starts in `in_ms`.
    Reconnecting {
        attempt: u32,
        in_ms: u32,
    },
    /// Given up for good (e.g. the server speaks another protocol); reload to retry.
    Closed {
        reason: String,
    },
}

impl ConnState {
    /// The `data-state` value browser tests look for.
    pub fn as_attr(&self) -> &'static str {
        match self {
            ConnState::Connecting => "connecting",
            ConnState::Open => "open",
            ConnState::Reconnecting { .. } => "reconnecting",
            ConnState::Closed { .. } => "closed",
        }
    }
}

/// Why the feed stopped for good on the access side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedEnd {
    /// A share viewer's link ended (revoked, expired, or its cookie stopped working).
    Share(ShareEnd),
    /// The admin's credentials stopped working (the token changed): the page needs the link again.
    AuthGone,
}

/// What a socket close leads to, given `GET /api/session`'s status (`None`: no answer) and who
/// the page is. Only a 401 ends the feed; anything else (the server restarting, a 5xx, a network
/// error) is a reason to reconnect with the usual backoff.
pub fn after_close(session_status: Option<u16>, role: Role) -> Option<FeedEnd> {
    match (session_status, role) {
        (Some(401), Role::Viewer) => Some(FeedEnd::Share(ShareEnd::Ended)),
        (Some(401), Role::Admin) => Some(FeedEnd::AuthGone),
        _ => None,
    }
}

/// How long the session check after a close may take before the feed reconnects anyway (a hung
/// server must not stop the retries).
pub const SESSION_CHECK_MS: u32 = 5_000;

/// First retry delay.
pub const BACKOFF_START_MS: u32 = 500;
/// Retry delays double up to this, so a server back after an outage is found within 10 s.
pub const BACKOFF_MAX_MS: u32 = 10_000;

/// Delay before reconnect attempt `attempt` (1-based): 0.5 s, 1 s, 2 s, ... capped at 10 s.
pub fn backoff_ms(attempt: u32) -> u32 {
    let doublings = attempt.saturating_sub(1).min(31);
    BACKOFF_START_MS
        .saturating_mul(1u32 << doublings)
        .min(BACKOFF_MAX_MS)
}

/// `ws://host/ws`, or `wss://` when the page came over https.
pub fn ws_url(page_protocol: &str, host: &str) -> String {
    let scheme = if page_protocol == "https:" {
        "wss"
    } else {
        "ws"
    };
    format!("{scheme}://{host}/ws")
}

/// What the page asks the server to send in full.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// Every host's frames: a one-host server (or before `hello` says otherwise).
    All,
    /// A hub's overview: the summaries only, which come regardless.
    Summaries,
    /// A hub's detail of one host.
    Host(String),
}

/// What to subscribe to, given the hosts `hello` named (none yet: `None`) and the route. A route
/// to a host the hub does not have asks for summaries only.
pub fn want_for(hosts: Option<&[String]>, route: &Route) -> Want {
    match (hosts, route) {
        (None, _) => Want::All,
        (Some(hosts), _) if hosts.len() <= 1 => Want::All,
        (Some(hosts), Route::Host(name)) if hosts.contains(name) => Want::Host(name.clone()),
        (Some(_), _) => Want::Summaries,
    }
}

/// The `subscribe` for `want`, resuming from `held` (per host, the newest seq the store holds):
/// one host resumes after the smallest seq held (nothing held: everything the server has); a
/// hub's detail resumes its host from that host's seq; the overview asks for no frames at all.
/// The page takes a whole history's older frames as chart samples (its charts need no more).
pub fn subscribe_msg(want: &Want, held: &BTreeMap<String, u64>) -> String {
    let msg = match want {
        Want::All => ClientMsg::Subscribe {
            hosts: None,
            since_seq: held.values().min().copied(),
            since: None,
            samples: true,
            max_frames: None,
        },
        Want::Summaries => ClientMsg::Subscribe {
            hosts: Some(Vec::new()),
            since_seq: None,
            since: None,
            samples: true,
            max_frames: None,
        },
        Want::Host(name) => ClientMsg::Subscribe {
            hosts: Some(vec![name.clone()]),
            since_seq: None,
            since: held
                .get(name)
                .map(|seq| BTreeMap::from([(name.clone(), *seq)])),
            samples: true,
            max_frames: None,
        },
    };
    serde_json::to_string(&msg).unwrap_or_else(|_| r#"{"type":"subscribe"}"#.to_owned())
}

/// The reply to a `hello` whose protocol this page does not speak.
pub fn protocol_mismatch(server_protocol: u32) -> Option<String> {
    (server_protocol != PROTOCOL_VERSION).then(|| {
        format!(
            "The server speaks protocol {server_protocol}, this page speaks {PROTOCOL_VERSION}: \
             reload the page."
        )
    })
}

/// How often the watchdog looks at an open connection.
pub const WATCHDOG_EVERY_MS: u32 = 5_000;
/// Silence after which the watchdog pings (frames normally arrive every interval).
pub const PING_AFTER_MS: f64 = 5_000.0;
/// Silence (pings unanswered) after which the connection is taken as dead and replaced.
pub const DEAD_AFTER_MS: f64 = 15_000.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    Fine,
    Ping,
    Reconnect,
}

/// What to do with an open connection that last heard from the server `silent_ms` ago.
pub fn watchdog(silent_ms: f64) -> Watch {
    if silent_ms >= DEAD_AFTER_MS {
        Watch::Reconnect
    } else if silent_ms >= PING_AFTER_MS {
        Watch::Ping
    } else {
        Watch::Fine
    }
}

/// The feed's signals: the connection state, and why it ended for good (if it did on the access
/// side).
#[derive(Clone, Copy)]
pub struct LiveFeed {
    pub state: ReadSignal<ConnState>,
    pub ended: ReadSignal<Option<FeedEnd>>,
}

/// Starts the live feed into the store in context, for a page whose session has `role` and
/// whose address says `route`. Call once, from `App`, after the session is known.
pub fn use_live_feed(role: Role, route: ReadSignal<Route>) -> LiveFeed {
    let store = crate::store::use_store();
    let state = RwSignal::new(ConnState::Connecting);
    let ended = RwSignal::new(None);
    let server = store.server();
    let want = Memo::new(move |_| {
        server.with(|s| route.with(|r| want_for(s.as_ref().map(|s| s.hosts.as_slice()), r)))
    });
    let feed = socket::start(
        socket::Signals {
            store,
            state,
            ended,
            want,
        },
        role,
    );
    // A new route on an open connection re-subscribes (the socket skips an unchanged one).
    Effect::new(move |_| {
        want.track();
        socket::resubscribe(&feed);
    });
    LiveFeed {
        state: state.read_only(),
        ended: ended.read_only(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_half_a_second_to_ten() {
        let delays: Vec<u32> = (1..=8).map(backoff_ms).collect();
        assert_eq!(
            delays,
            vec![500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]
        );
        assert_eq!(backoff_ms(0), 500);
        assert_eq!(backoff_ms(u32::MAX), 10_000);
    }

    #[test]
    fn url_follows_the_page_scheme() {
        assert_eq!(ws_url("http:", "127.0.0.1:7575"), "ws://127.0.0.1:7575/ws");
        assert_eq!(ws_url("https:", "example.org"), "wss://example.org/ws");
    }

    #[test]
    fn one_host_subscribes_to_everything_and_resumes_from_the_last_seq() {
        let none = BTreeMap::new();
        assert_eq!(
            subscribe_msg(&Want::All, &none),
            r#"{"type":"subscribe","samples":true}"#
        );
        let held = BTreeMap::from([("gpu1".to_owned(), 41)]);
        assert_eq!(
            subscribe_msg(&Want::All, &held),
            r#"{"type":"subscribe","since_seq":41,"samples":true}"#
        );
    }

    #[test]
    fn a_hub_subscribes_per_route() {
        let held = BTreeMap::from([("ssh://gpu1".to_owned(), 41), ("gpu2:7575".to_owned(), 7)]);
        assert_eq!(
            subscribe_msg(&Want::Summaries, &held),
            r#"{"type":"subscribe","hosts":[],"samples":true}"#
        );
        assert_eq!(
            subscribe_msg(&Want::Host("ssh://gpu1".into()), &held),
            r#"{"type":"subscribe","hosts":["ssh://gpu1"],"since":{"ssh://gpu1":41},"samples":true}"#
        );
        // A host never held yet: its whole backfill.
        assert_eq!(
            subscribe_msg(&Want::Host("gpu3".into()), &held),
            r#"{"type":"subscribe","hosts":["gpu3"],"samples":true}"#
        );
    }

    #[test]
    fn what_to_want_follows_the_server_and_the_route() {
        let one = vec!["gpu1".to_owned()];
        let hub = vec!["ssh://gpu1".to_owned(), "gpu2:7575".to_owned()];
        let to = |n: &str| Route::Host(n.to_owned());
        assert_eq!(want_for(None, &Route::Home), Want::All);
        assert_eq!(want_for(Some(&one), &Route::Home), Want::All);
        assert_eq!(want_for(Some(&one), &to("gpu1")), Want::All);
        assert_eq!(want_for(Some(&one), &to("other")), Want::All);
        assert_eq!(want_for(Some(&hub), &Route::Home), Want::Summaries);
        assert_eq!(
            want_for(Some(&hub), &to("gpu2:7575")),
            Want::Host("gpu2:7575".into())
        );
        assert_eq!(want_for(Some(&hub), &to("gpu9")), Want::Summaries);
    }

    #[test]
    fn states_map_to_test_attributes() {
        assert_eq!(ConnState::Connecting.as_attr(), "connecting");
        assert_eq!(ConnState::Open.as_attr(), "open");
        let r = ConnState::Reconnecting {
            attempt: 2,
            in_ms: 1000,
        };
        assert_eq!(r.as_attr(), "reconnecting");
        let c = ConnState::Closed { reason: "x".into() };
        assert_eq!(c.as_attr(), "closed");
    }

    #[test]
    fn protocol_mismatch_is_explained() {
        assert_eq!(protocol_mismatch(PROTOCOL_VERSION), None);
        let msg = protocol_mismatch(PROTOCOL_VERSION + 1).unwrap_or_default();
        assert!(msg.contains("reload"));
    }

    #[test]
    fn only_a_401_after_a_close_ends_the_feed() {
        assert_eq!(
            after_close(Some(401), Role::Viewer),
            Some(FeedEnd::Share(ShareEnd::Ended))
        );
        assert_eq!(after_close(Some(401), Role::Admin), Some(FeedEnd::AuthGone));
        // The server restarting, overloaded or behind a failing proxy: keep trying.
        for status in [
            None,
            Some(200),
            Some(403),
            Some(404),
            Some(500),
            Some(502),
            Some(503),
        ] {
            assert_eq!(after_close(status, Role::Viewer), None, "{status:?}");
            assert_eq!(after_close(status, Role::Admin), None, "{status:?}");
        }
    }

    #[test]
    fn watchdog_pings_then_gives_up() {
        assert_eq!(watchdog(1000.0), Watch::Fine);
        assert_eq!(watchdog(6000.0), Watch::Ping);
        assert_eq!(watchdog(16_000.0), Watch::Reconnect);
    }
}
