//! The HTTP surface: `/ws`, `/api/snapshot`, `/api/health`, `/api/schema`, `/metrics`, the share-link routes
//! and the embedded page.
//!
//! [`app`] is the only place routes are wired; `main.rs` and the tests both call it. Every request
//! passes [`auth::guard`] (host, origin, credentials) first; each route group then says who may
//! use it: anyone (the page, `/api/session`, a link's claim), any viewer (the live data), or the
//! admin (the share API). Bodies are bounded, responses are compressed when the client accepts
//! it and carry the security headers of docs/security.md#1-the-model-in-short.

use super::auth::{self, Access, Granted};
use super::error::{ApiCode, error_response};
use super::metrics_route;
use super::session::{self, SessionParams, ViewLease, WS_WRITE_BUFFER};
use super::share_routes;
use super::slots::Holder;
use super::state::AppState;
use super::{replay_route, status_routes};
use crate::host_feed::HostFeed;
use crate::host_feed::fleet::Fleet;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{DefaultBodyLimit, Extension, Query, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, Uri, header};
use axum::response::Response;
use axum::routing::{any, delete, get, post};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::Deserialize;
use tower_http::compression::CompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;

/// Largest WebSocket message the server buffers from a client (the protocol's own limit,
/// `MAX_CLIENT_MESSAGE_BYTES`, is enforced by the session with close code 1009).
const WS_READ_LIMIT: usize = 64 * 1024;
/// Room for one read from a viewer's socket. Small on purpose: tungstenite zero-fills this much
/// before every read attempt, and a session attempts one each time it wakes (for every frame it
/// sends), so its default of 128 KiB cost a 128 KiB `memset` per frame per viewer. Client
/// messages are a few hundred bytes (the protocol allows 4 KiB); larger ones take more reads.
const WS_READ_BUFFER: usize = 1024;

/// Script, style and socket from this origin only; `wasm-unsafe-eval` lets the bundle compile.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
    style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Largest request body any route reads (share requests and claims are a few hundred bytes).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Every route of the server.
pub fn app(state: AppState) -> Router<()> {
    let public = Router::new()
        .route("/api/session", get(share_routes::session))
        .route("/api/claim", post(share_routes::claim))
        .route("/s/", get(share_routes::link_page))
        .route("/s/{*id}", get(share_routes::link_page));
    let viewer = Router::new()
        .route("/ws", get(ws))
        .route("/api/snapshot", get(status_routes::snapshot))
        .route("/api/health", get(status_routes::health))
        .route("/api/schema", get(schema))
        .route("/api/replay", get(replay_route::replay))
        .route("/api/{*rest}", any(api_not_found))
        .route_layer(axum::middleware::from_fn(auth::require_viewer));
    let admin = Router::new()
        .route(
            "/api/shares",
            get(share_routes::list)
                .post(share_routes::create)
                .delete(share_routes::revoke_all),
        )
        .route("/api/shares/{id}", delete(share_routes::revoke))
        .route("/api/replay", post(replay_route::steer_replay))
        .route_layer(axum::middleware::from_fn(auth::require_admin));
    // Checks its own credentials: the scrape token counts there, and `--metrics-public` can
    // open it.
    let metrics = Router::new().route("/metrics", get(metrics_route::metrics));
    Router::new()
        .merge(public)
        .merge(viewer)
        .merge(admin)
        .merge(metrics)
        .fallback(get(static_file))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            auth::guard,
        ))
        .with_state(state)
        .layer(CompressionLayer::new())
        .layer(header_layer(header::CONTENT_SECURITY_POLICY, CSP))
        .layer(header_layer(header::X_FRAME_OPTIONS, "DENY"))
        .layer(header_layer(header::REFERRER_POLICY, "no-referrer"))
        .layer(header_layer(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
}

fn header_layer(name: HeaderName, value: &'static str) -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
}

#[derive(Deserialize)]
struct WsQuery {
    since_seq: Option<u64>,
}

async fn ws(
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
                                let params = SessionParams {
                                    fleet,
                                    version: env!("CARGO_PKG_VERSION"),
                                    since_seq: q.since_seq,
                                    cancel: state.shutdown.clone(),
                                    lease,
                                    show_users,
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

async fn schema() -> Json<serde_json::Value> {
    Json(shared::schema::wire_schema())
}

async fn api_not_found(uri: Uri) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        ApiCode::NotFound,
        &format!("no API route {}", uri.path()),
    )
}

async fn static_file(uri: Uri, headers: axum::http::HeaderMap) -> Response {
    super::assets::serve(uri, headers).await
}
