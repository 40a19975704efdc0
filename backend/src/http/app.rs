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
use crate::hub::Hub;
use crate::hub::fleet::Fleet;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{DefaultBodyLimit, Extension, Query, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, delete, get, post};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;
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
        .route("/api/snapshot", get(snapshot))
        .route("/api/health", get(health))
        .route("/api/schema", get(schema))
        .route("/api/replay", get(replay))
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
        .route("/api/replay", post(steer_replay))
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
        _ => None,
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
                            Pick::One(hub) => Some(Fleet::single(hub)),
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
    One(Hub),
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

/// The one host a viewer's link is limited to.
fn scoped_host(granted: &Granted) -> Option<&str> {
    match &granted.0 {
        Some(Access::Viewer(g)) => g.host.as_deref(),
        _ => None,
    }
}

#[derive(Deserialize)]
struct HostQuery {
    host: Option<String>,
}

/// The host a link for one host is limited to, or a 404 that names no host: the link's host is
/// not served here, and such a link sees nothing.
fn scoped_hub(state: &AppState, host: &str) -> Result<Hub, Box<Response>> {
    state
        .fleet
        .find(host)
        .map(|(_, h)| h.clone())
        .ok_or_else(|| {
            Box::new(error_response(
                StatusCode::NOT_FOUND,
                ApiCode::UnknownHost,
                "the host this link shows is not served here",
            ))
        })
}

/// The host a `?host=` names (the first host without one), or a 404 that lists the hosts.
fn pick_host(state: &AppState, name: Option<&str>) -> Result<Hub, Box<Response>> {
    match name {
        None => Ok(state.hub.clone()),
        Some(n) => state.fleet.find(n).map(|(_, h)| h.clone()).ok_or_else(|| {
            Box::new(error_response(
                StatusCode::NOT_FOUND,
                ApiCode::UnknownHost,
                &format!(
                    "no host {n:?} here; hosts: {}",
                    state.fleet.names().join(", ")
                ),
            ))
        }),
    }
}

async fn snapshot(
    State(state): State<AppState>,
    Extension(granted): Extension<Granted>,
    Query(q): Query<HostQuery>,
) -> Response {
    let show_users = granted.0.as_ref().is_some_and(Access::show_users);
    let scope = scoped_host(&granted);
    if scope.is_some() && q.host.is_some() && q.host.as_deref() != scope {
        return error_response(
            StatusCode::FORBIDDEN,
            ApiCode::Forbidden,
            "this link shows one host",
        );
    }
    // A hub asked for no host in particular answers for every host.
    if scope.is_none() && q.host.is_none() && state.fleet.len() > 1 {
        return fleet_snapshot(&state, show_users);
    }
    let picked = match scope {
        Some(s) => scoped_hub(&state, s),
        None => pick_host(&state, q.host.as_deref()),
    };
    let hub = match picked {
        Ok(h) => h,
        Err(resp) => return *resp,
    };
    let mut body = String::new();
    if host_snapshot(&hub, show_users, &mut body) {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    } else {
        error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            ApiCode::NoFrameYet,
            "the first sample has not been taken yet; retry in a second",
        )
    }
}

/// Appends `{"frame": <latest frame>, "diagnosis": <latest diagnosis>}` of `hub` to `body`, from
/// the encodings the hub already holds (the diagnosis is absent until the first one is made);
/// false, with nothing appended, before the host's first frame.
fn host_snapshot(hub: &Hub, show_users: bool, body: &mut String) -> bool {
    let Some(entry) = hub.latest() else {
        return false;
    };
    let diagnosis = hub.latest_diagnosis();
    let frame = entry.frame_json_for(show_users);
    body.reserve(frame.len() + 4096);
    body.push_str(r#"{"frame":"#);
    body.push_str(frame);
    if let Some(d) = &diagnosis {
        body.push_str(r#","diagnosis":"#);
        body.push_str(d.diagnosis_json());
    }
    body.push('}');
    true
}

/// A hub's `/api/snapshot` without `?host=`: `{"hosts": {NAME: {"frame", "diagnosis"} | null}}`,
/// every host served (`null` before a host's first frame).
fn fleet_snapshot(state: &AppState, show_users: bool) -> Response {
    let mut body = String::from(r#"{"hosts":{"#);
    for (i, hub) in state.fleet.hubs().iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&serde_json::Value::from(hub.host()).to_string());
        body.push(':');
        if !host_snapshot(hub, show_users, &mut body) {
            body.push_str("null");
        }
    }
    body.push_str("}}");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// How long `POST /api/replay` waits for a jump to be made.
const SEEK_WAIT: Duration = Duration::from_secs(5);

/// `GET /api/replay`: the replay's span, position, speed and verdict timeline; 404 when this
/// server is not replaying.
async fn replay(State(state): State<AppState>) -> Response {
    match &state.replay {
        Some(r) => Json(r.info()).into_response(),
        None => error_response(
            StatusCode::NOT_FOUND,
            ApiCode::NotReplaying,
            "this server shows live data, not a replay",
        ),
    }
}

/// `POST /api/replay` (admin): pause or play the replay, set its speed, jump to a moment; answers
/// the new state (after a jump, once the hub holds that moment, so the page's next frames are it).
async fn steer_replay(
    State(state): State<AppState>,
    Json(control): Json<shared::replay::ReplayControl>,
) -> Response {
    let Some(r) = &state.replay else {
        return error_response(
            StatusCode::NOT_FOUND,
            ApiCode::NotReplaying,
            "this server shows live data, not a replay",
        );
    };
    let speed = match control
        .speed
        .as_deref()
        .map(crate::ingest::player::Speed::parse)
    {
        Some(Err(why)) => return error_response(StatusCode::BAD_REQUEST, ApiCode::BadSpeed, &why),
        Some(Ok(s)) => Some(s),
        None => None,
    };
    r.steer(control.playing, speed);
    if let Some(t_ms) = control.seek_ms {
        let r = r.clone();
        let made = tokio::task::spawn_blocking(move || {
            let n = r.seek(t_ms);
            r.wait_for_seek(n, SEEK_WAIT)
        })
        .await
        .unwrap_or(false);
        if !made {
            return error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                ApiCode::SeekPending,
                "the player has not made the jump yet; it will",
            );
        }
    }
    Json(r.info()).into_response()
}

async fn health(State(state): State<AppState>, Extension(granted): Extension<Granted>) -> Response {
    let scope = scoped_host(&granted);
    if scope.is_none() && state.fleet.len() > 1 {
        return fleet_health(&state);
    }
    let picked = match scope {
        Some(s) => scoped_hub(&state, s),
        None => pick_host(&state, None),
    };
    let hub = match picked {
        Ok(h) => h,
        Err(resp) => return *resp,
    };
    let (host_state, age) = hub.host_state();
    let latest = hub.latest();
    let hosts: Vec<serde_json::Value> = state
        .fleet
        .hubs()
        .iter()
        .filter(|h| scope.is_none_or(|s| s == h.host()))
        .map(host_health)
        .collect();
    let body = json!({
        "hosts": hosts,
        "status": host_state,
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": shared::PROTOCOL_VERSION,
        "host": hub.host(),
        "uptime_s": state.started.elapsed().as_secs(),
        "last_seq": latest.as_ref().map(|e| e.seq),
        "last_frame_age_ms": age.map(|a| a.as_millis() as u64),
        "viewers": hub.receiver_count(),
        "frontend_bundle": super::assets::has_bundle(),
    });
    let code = match host_state {
        shared::HostState::Up => StatusCode::OK,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    (code, Json(body)).into_response()
}

/// One host's line in `/api/health`'s `hosts`.
fn host_health(h: &Hub) -> serde_json::Value {
    let (state, age, error) = h.host_status();
    json!({
        "name": h.host(),
        "state": state,
        "error": error,
        "last_frame_age_ms": age.map(|a| a.as_millis() as u64),
    })
}

/// A hub's `/api/health`: the whole fleet, so a liveness probe does not follow one peer. 200
/// while at least one host is up (`status` `up` when all are, else `degraded`), 503 when none is
/// (`down`).
fn fleet_health(state: &AppState) -> Response {
    let hubs = state.fleet.hubs();
    let up = hubs
        .iter()
        .filter(|h| h.host_state().0 == shared::HostState::Up)
        .count();
    let (status, code) = match up {
        0 => ("down", StatusCode::SERVICE_UNAVAILABLE),
        n if n == hubs.len() => ("up", StatusCode::OK),
        _ => ("degraded", StatusCode::OK),
    };
    let body = json!({
        "hosts": hubs.iter().map(host_health).collect::<Vec<_>>(),
        "status": status,
        "hosts_up": up,
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": shared::PROTOCOL_VERSION,
        "uptime_s": state.started.elapsed().as_secs(),
        "viewers": state.viewers.in_use(),
        "frontend_bundle": super::assets::has_bundle(),
    });
    (code, Json(body)).into_response()
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
