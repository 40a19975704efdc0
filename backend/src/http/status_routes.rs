//! `/api/snapshot` and `/api/health`: the newest frame and diagnosis, and whether frames flow, of
//! one host or, on a server of several hosts asked for none in particular, of every host. A link
//! for one host sees that host only, and nothing (404, naming no host) once it is not served.

use super::auth::{Access, Granted};
use super::error::{ApiCode, error_response};
use super::state::AppState;
use crate::host_feed::HostFeed;
use axum::Json;
use axum::extract::{Extension, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

/// The one host a viewer's link is limited to.
pub(super) fn scoped_host(granted: &Granted) -> Option<&str> {
    match &granted.0 {
        Some(Access::Viewer(g)) => g.host.as_deref(),
        _ => None,
    }
}

#[derive(Deserialize)]
pub(super) struct HostQuery {
    host: Option<String>,
}

/// The host a link for one host is limited to, or a 404 that names no host: the link's host is
/// not served here, and such a link sees nothing.
fn scoped_hub(state: &AppState, host: &str) -> Result<HostFeed, Box<Response>> {
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
fn pick_host(state: &AppState, name: Option<&str>) -> Result<HostFeed, Box<Response>> {
    match name {
        None => state.fleet.hubs().first().cloned().ok_or_else(|| {
            Box::new(error_response(
                StatusCode::NOT_FOUND,
                ApiCode::UnknownHost,
                "no host is served here",
            ))
        }),
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

pub(super) async fn snapshot(
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
fn host_snapshot(hub: &HostFeed, show_users: bool, body: &mut String) -> bool {
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
        body.push_str(d.diagnosis_json_for(show_users));
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

pub(super) async fn health(
    State(state): State<AppState>,
    Extension(granted): Extension<Granted>,
) -> Response {
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
fn host_health(h: &HostFeed) -> serde_json::Value {
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
