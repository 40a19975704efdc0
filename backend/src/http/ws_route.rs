//! `/ws`: the WebSocket upgrade. Chooses which hosts the viewer is served (a share link for one
//! host: that host or nothing; anyone else: every host), takes a viewer slot, and runs the one
//! [`session::run`] for them.

use super::auth::{Access, Granted};
use super::error::{ApiCode, error_response};
use super::session::{self, SessionParams, ViewLease, WS_WRITE_BUFFER};
use super::slots::Holder;
use super::state::AppState;
use crate::host_feed::HostFeed;
use crate::host_feed::fleet::Fleet;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::StreamExt;
use serde::Deserialize;

/// Largest WebSocket message the server buffers from a client (the protocol's own limit,
/// `MAX_CLIENT_MESSAGE_BYTES`, is enforced by the session with close code 1009).
const WS_READ_LIMIT: usize = 64 * 1024;
/// Room for one read from a viewer's socket. Small on purpose: tungstenite zero-fills this much
/// before every read attempt, and a session attempts one each time it wakes (for every frame it
/// sends), so its default of 128 KiB cost a 128 KiB `memset` per frame per viewer. Client
/// messages are a few hundred bytes (the protocol allows 4 KiB); larger ones take more reads.
const WS_READ_BUFFER: usize = 1024;

#[derive(Deserialize)]
pub(super) struct WsQuery {
    since_seq: Option<u64>,
}

pub(super) async fn ws(
    State(state): State<AppState>,
    Extension(granted): Extension<Granted>,
    Query(q): Query<WsQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let lease = match granted.0 {
        Some(Access::Viewer(grant)) => Some(ViewLease {
            grant,
            shares: state.auth.shares().clone(),
        }),
        // The admin, or anyone when authentication is off (`--no-auth`).
        Some(Access::Admin) | None => None,
        // Kept out by `require_viewer` already; named here so no new kind of access falls
        // through to an admin's session.
        Some(Access::Scrape) => {
            return error_response(
                StatusCode::FORBIDDEN,
                ApiCode::Forbidden,
                "the scrape token reads /metrics only",
            );
        }
    };
    let holder = match &lease {
        Some(l) => Holder::Link(l.grant.id.clone()),
        None => Holder::Admin,
    };
    let Some(permit) = state.viewers.take(holder) else {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            ApiCode::TooManyViewers,
            "this vramio serves as many viewers as it allows; try again later",
        );
    };
    upgrade
        .read_buffer_size(WS_READ_BUFFER)
        .max_message_size(WS_READ_LIMIT)
        .max_frame_size(WS_READ_LIMIT)
        .max_write_buffer_size(WS_WRITE_BUFFER)
        .on_upgrade(move |socket| {
            let (sink, stream) = socket.split();
            let show_users = lease.as_ref().is_none_or(|l| l.grant.show_users);
            let sessions = state.sessions.clone();
            async move {
                sessions
                    .track_future(async move {
                        let _permit = permit;
                        let fleet = match pick_session(&state, lease.as_ref()) {
                            Pick::Nothing => None,
                            Pick::Fleet => Some(state.fleet.clone()),
                            Pick::One(feed) => Some(Fleet::single(feed)),
                        };
                        let ended = match fleet {
                            None => {
                                let mut sink = sink;
                                let ended = session::Ended::HostGone;
                                session::say_goodbye(&mut sink, &ended).await;
                                ended
                            }
                            Some(fleet) => {
                                // The history is the server's own host's: only for a session
                                // that shows that host.
                                let own = state.fleet.hubs().first().map(|h| h.host().to_owned());
                                let shows_own = fleet
                                    .hubs()
                                    .iter()
                                    .any(|h| Some(h.host()) == own.as_deref());
                                let history =
                                    state.history.clone().filter(|_| shows_own).map(|history| {
                                        session::query::Access {
                                            history,
                                            thresholds: state.thresholds.clone(),
                                            admin: lease.is_none(),
                                            live_only: lease
                                                .as_ref()
                                                .is_some_and(|l| l.grant.live_only),
                                        }
                                    });
                                let params = SessionParams {
                                    fleet,
                                    version: env!("CARGO_PKG_VERSION"),
                                    since_seq: q.since_seq,
                                    cancel: state.shutdown.clone(),
                                    lease,
                                    show_users,
                                    history,
                                };
                                session::run(params, sink, stream).await
                            }
                        };
                        tracing::debug!(?ended, "websocket session ended");
                    })
                    .await;
            }
        })
}

/// Which hosts a `/ws` upgrade is served (each in the same [`session::run`]).
enum Pick {
    /// Every host served here: the one of `serve`, all of a hub's.
    Fleet,
    /// The one host a share link shows.
    One(HostFeed),
    /// A link for one host that is not served here: it sees nothing (close 4403).
    Nothing,
}

/// Chooses the hosts for an upgrade: a link for one host gets that host or nothing (never the
/// fleet: a scoped grant fails closed); anyone else gets every host served.
fn pick_session(state: &AppState, lease: Option<&ViewLease>) -> Pick {
    match lease.and_then(|l| l.grant.host.as_deref()) {
        Some(h) => match state.fleet.find(h) {
            Some((_, hub)) => Pick::One(hub.clone()),
            None => Pick::Nothing,
        },
        None => Pick::Fleet,
    }
}
