//! `GET /api/history?host=H&from_ms=A&to_ms=B&points=N`: the stored history of the host this
//! server samples, for any viewer of that host (docs/api.md#history). A link for another host
//! learns nothing of this one; a host whose history is not kept here is a 404 that says why.

use super::auth::{Access, Granted};
use super::error::{ApiCode, error_response};
use super::state::AppState;
use super::status_routes::scoped_host;
use axum::Json;
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// The longest range one request reads (a year and a bit: the hour tier's span).
const MAX_RANGE_MS: u64 = 400 * 86_400_000;
/// Points per series at most.
pub const MAX_POINTS: usize = 20_000;

#[derive(Debug, Deserialize)]
pub(super) struct Params {
    host: Option<String>,
    from_ms: u64,
    to_ms: u64,
    #[serde(default = "default_points")]
    points: usize,
}

fn default_points() -> usize {
    1000
}

pub(super) async fn history(
    State(state): State<AppState>,
    Extension(granted): Extension<Granted>,
    Query(p): Query<Params>,
) -> Response {
    let bad = |m: &str| error_response(StatusCode::BAD_REQUEST, ApiCode::BadRequest, m);
    if p.from_ms >= p.to_ms {
        return bad("from_ms must be before to_ms");
    }
    if p.to_ms - p.from_ms > MAX_RANGE_MS {
        return bad("the range is longer than 400 days");
    }
    if p.points == 0 || p.points > MAX_POINTS {
        return bad("points must be 1 to 20000");
    }
    let local = state.fleet.hubs().first().map(|h| h.host().to_owned());
    let host = p.host.or_else(|| local.clone());
    let scoped = scoped_host(&granted);
    if scoped.is_some_and(|s| Some(s) != host.as_deref()) || host.is_none() {
        return error_response(StatusCode::NOT_FOUND, ApiCode::UnknownHost, "no such host");
    }
    let history = match &state.history {
        Some(h) if host == local => h.clone(),
        _ => {
            return error_response(
                StatusCode::NOT_FOUND,
                ApiCode::NotFound,
                "no history of this host here: history is kept by the vramio that samples a host (`serve` without --no-history)",
            );
        }
    };
    let (from, to, points) = (p.from_ms, p.to_ms, p.points);
    let show_users = granted.0.as_ref().is_some_and(Access::show_users);
    let admin = matches!(granted.0, Some(Access::Admin)) || !state.auth.enabled();
    let read = move || {
        let mut answer = history.read(from, to, points)?;
        if !show_users {
            hide_users(&mut answer, &history.users(from, to));
        }
        answer.notices = notices(&history.status(), admin);
        Ok::<_, crate::history::StoreError>(answer)
    };
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(answer)) => Json(answer).into_response(),
        Ok(Err(e)) => error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            ApiCode::NotFound,
            &format!("the history cannot be read now: {e}"),
        ),
        Err(_) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            ApiCode::NotFound,
            "the history read failed",
        ),
    }
}

/// Hides `users` in the items of job series (a job's id can hold its owner's name: a unit
/// `user@1000.service`, a container named after its user).
fn hide_users(answer: &mut crate::history::Answer, users: &[String]) {
    use shared::series::Scope;
    let hider = crate::host_feed::hider(users.iter().map(String::as_str));
    for s in &mut answer.series {
        if matches!(s.scope, Scope::Job | Scope::JobGpu) {
            hider.hide(&mut s.item);
        }
    }
}

/// What the page says about the history: the admin gets the paths, a share viewer the gist.
fn notices(status: &crate::history::Status, admin: bool) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(why) = &status.paused {
        out.push(if admin {
            why.clone()
        } else {
            "history writing is paused on this server".to_owned()
        });
    }
    if let Some(aside) = &status.set_aside {
        out.push(if admin {
            format!("the history file could not be opened at start and was moved aside: {aside}")
        } else {
            "an earlier history file could not be opened and was set aside".to_owned()
        });
    }
    out
}
