//! The share-link routes: `/s/<id>` (the page, for an active link), `POST /api/claim` (the page
//! trades the fragment's secret for a view cookie), `GET /api/session` (who this browser is), and
//! the admin API `GET/POST/DELETE /api/shares[/<id>]`.
//!
//! Every bad link, whatever is wrong with it (unknown, malformed, expired, revoked, a wrong
//! secret), gets the same 404 bytes, so links cannot be told apart or walked.

use super::auth::{Access, Granted, now_ms};
use super::error::{ApiCode, error_response};
use super::same_origin::{origin_of, split_authority};
use super::state::AppState;
use crate::access::shares::{ShareError, Standing};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use shared::access::{Claim, CreateShare, Role, SessionInfo, ShareList};

/// The one answer for every bad link.
pub const LINK_NOT_FOUND: &str = "<!doctype html><meta charset=utf-8><title>vramio: no such link</title>\
<p>This link does not work: it may have expired or been revoked. Ask whoever shared it for a new one.</p>\n";

fn link_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        LINK_NOT_FOUND,
    )
        .into_response()
}

/// `GET /s/<id>`: the page, if the link is active.
pub async fn link_page(
    State(state): State<AppState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    // The raw path, not a decoded one: ids are base64url, and a path that does not decode
    // (`%ff`) must get the same 404 as any other bad link, not a 400.
    let id = uri.path().strip_prefix("/s/").unwrap_or("");
    match state.auth.shares().standing(id, now_ms()) {
        // A link for one host whose host is no longer served shows nothing (fail closed).
        Standing::Active(g)
            if g.host
                .as_deref()
                .is_some_and(|h| state.fleet.find(h).is_none()) =>
        {
            link_not_found()
        }
        Standing::Active(_) => super::assets::serve_index(headers).await,
        Standing::Expired | Standing::Gone => link_not_found(),
    }
}

/// The port the browser addressed (names its cookies).
fn host_port(headers: &HeaderMap, tls: bool) -> String {
    let authority = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    split_authority(authority)
        .1
        .unwrap_or(if tls { "443" } else { "80" })
        .to_owned()
}

/// `POST /api/claim {id, secret}`: a view cookie that lasts as long as the link.
pub async fn claim(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(claim) = serde_json::from_slice::<Claim>(&body) else {
        return link_not_found();
    };
    let now = now_ms();
    let Standing::Active(grant) = state.auth.shares().check(&claim.id, &claim.secret, now) else {
        return link_not_found();
    };
    let max_age = grant.expires_ms.saturating_sub(now).div_ceil(1000);
    let set = state.auth.view_cookie(
        &host_port(&headers, state.auth.tls()),
        &format!("{}.{}", claim.id, claim.secret),
        max_age,
    );
    let mut resp = StatusCode::NO_CONTENT.into_response();
    if let Ok(v) = HeaderValue::from_str(&set) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

/// `GET /api/session`.
pub async fn session(axum::Extension(granted): axum::Extension<Granted>) -> Response {
    let info = match granted.0 {
        None => return super::auth::unauthorized("/api/session"),
        Some(Access::Scrape) => return super::auth::scrape_only(),
        Some(Access::Admin) => SessionInfo {
            role: Role::Admin,
            show_users: true,
            expires_ms: None,
            label: None,
            host: None,
            live_only: false,
        },
        Some(Access::Viewer(g)) => SessionInfo {
            role: Role::Viewer,
            show_users: g.show_users,
            expires_ms: Some(g.expires_ms),
            label: g.label,
            host: g.host,
            live_only: g.live_only,
        },
    };
    Json(info).into_response()
}

/// What links start with: `--public-url`, else the origin this request came by.
fn base(state: &AppState, headers: &HeaderMap) -> String {
    if let Some(o) = state.auth.public_origin() {
        return o.to_owned();
    }
    let authority = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    origin_of(state.auth.scheme(), authority)
}

fn share_error(e: &ShareError) -> Response {
    match e {
        ShareError::Off(reason) => {
            error_response(StatusCode::SERVICE_UNAVAILABLE, ApiCode::SharingOff, reason)
        }
        ShareError::Invalid(why) => {
            error_response(StatusCode::BAD_REQUEST, ApiCode::BadRequest, why)
        }
        ShareError::TooMany => {
            error_response(StatusCode::CONFLICT, ApiCode::TooManyShares, &e.to_string())
        }
        ShareError::Write(_) | ShareError::Random(_) | ShareError::Worker(_) => {
            tracing::error!(error = %e, "share store");
            error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                ApiCode::ShareStore,
                &e.to_string(),
            )
        }
    }
}

/// Runs a change of the share store (a read, a write and its fsyncs, under the store's lock) on
/// a blocking thread: the one async thread serves every viewer and must not wait on the disk.
async fn off_thread<T: Send + 'static>(
    change: impl FnOnce() -> Result<T, ShareError> + Send + 'static,
) -> Result<T, ShareError> {
    tokio::task::spawn_blocking(change)
        .await
        .unwrap_or_else(|e| Err(ShareError::Worker(e.to_string())))
}

/// `GET /api/shares`.
pub async fn list(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match state.auth.shares().list(now_ms(), &base(&state, &headers)) {
        Ok(shares) => Json(ShareList { shares }).into_response(),
        Err(e) => share_error(&e),
    }
}

/// `POST /api/shares {expires_s?, label?, show_users}`.
pub async fn create(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let req: CreateShare = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                ApiCode::BadRequest,
                &format!("cannot read the request: {e}"),
            );
        }
    };
    if let Some(h) = &req.host
        && state.fleet.find(h).is_none()
    {
        return error_response(
            StatusCode::BAD_REQUEST,
            ApiCode::UnknownHost,
            &format!(
                "no host {h:?} here; hosts: {}",
                state.fleet.names().join(", ")
            ),
        );
    }
    let shares = state.auth.shares().clone();
    let base = base(&state, &headers);
    match off_thread(move || shares.create(&req, now_ms(), &base)).await {
        Ok(info) => {
            tracing::info!(id = %info.id, expires_ms = info.expires_ms, "share link created");
            (StatusCode::CREATED, Json(info)).into_response()
        }
        Err(e) => share_error(&e),
    }
}

/// `DELETE /api/shares/<id>`.
pub async fn revoke(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let shares = state.auth.shares().clone();
    let revoked = {
        let id = id.clone();
        off_thread(move || shares.revoke(&id, now_ms())).await
    };
    match revoked {
        Ok(true) => {
            tracing::info!(id = %id, "share link revoked");
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(false) => error_response(
            StatusCode::NOT_FOUND,
            ApiCode::NotFound,
            "no such share link",
        ),
        Err(e) => share_error(&e),
    }
}

/// `DELETE /api/shares`: a new key, so every link ends.
pub async fn revoke_all(State(state): State<AppState>) -> Response {
    let shares = state.auth.shares().clone();
    match off_thread(move || shares.rotate(now_ms())).await {
        Ok(n) => {
            tracing::info!(revoked = n, "share key rotated: every link revoked");
            Json(serde_json::json!({ "revoked": n })).into_response()
        }
        Err(e) => share_error(&e),
    }
}
