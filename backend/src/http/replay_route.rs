//! `/api/replay`: a replay's span, position, speed and verdict timeline for any viewer of the
//! replayed host, and its steering (pause, play, speed, jump) for the admin; 404 on a server that
//! is not replaying.

use super::auth::Granted;
use super::error::{ApiCode, error_response};
use super::state::AppState;
use super::status_routes::scoped_host;
use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::time::Duration;

/// How long `POST /api/replay` waits for a jump to be made.
const SEEK_WAIT: Duration = Duration::from_secs(5);

/// `GET /api/replay`: the replay's span, position, speed and verdict timeline; 404 when this
/// server is not replaying, and for a link of another host than the replayed one (the first host
/// served): a link for one host learns nothing of another.
pub(super) async fn replay(
    State(state): State<AppState>,
    Extension(granted): Extension<Granted>,
) -> Response {
    let replayed = state.fleet.hubs().first().map(|h| h.host());
    let other_host = scoped_host(&granted).is_some_and(|s| Some(s) != replayed);
    match &state.replay {
        Some(r) if !other_host => Json(r.info()).into_response(),
        _ => error_response(
            StatusCode::NOT_FOUND,
            ApiCode::NotReplaying,
            "this server shows live data, not a replay",
        ),
    }
}

/// `POST /api/replay` (admin): pause or play the replay, set its speed, jump to a moment; answers
/// the new state (after a jump, once the hub holds that moment, so the page's next frames are it).
pub(super) async fn steer_replay(
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
