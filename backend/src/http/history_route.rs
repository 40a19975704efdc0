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
    /// `scope:metric,...`: only those series.
    only: Option<String>,
    /// `kind:id`: of the jobs' series, only that job's (a job's run asks this; a busy node
    /// keeps thousands of jobs).
    job: Option<String>,
    /// The segments with their findings (left out by default).
    #[serde(default)]
    findings: bool,
}

fn default_points() -> usize {
    1000
}

/// The longest `job=` taken (job items are `kind:id[:step]`; a systemd unit's name alone may be
/// 255 bytes).
const MAX_JOB_BYTES: usize = 512;

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
    let only = match p
        .only
        .as_deref()
        .map(crate::history::parse_only)
        .transpose()
    {
        Ok(o) => o,
        Err(e) => return bad(&e),
    };
    if let Some(job) = &p.job
        && (job.is_empty() || job.len() > MAX_JOB_BYTES || job.chars().any(char::is_control))
    {
        return bad("job must be a job's key (kind:id), 1 to 512 bytes without control characters");
    }
    let (from, to, points) = (p.from_ms, p.to_ms, p.points);
    let show_users = granted.0.as_ref().is_some_and(Access::show_users);
    let history = match find(&state, &granted, p.host) {
        Ok(Where::Local(h)) => h,
        Ok(Where::Peer(feed)) => {
            let q = PeerQuery {
                from,
                to,
                points,
                only: p.only.clone(),
                job: p.job.clone(),
                findings: p.findings,
            };
            let admin = matches!(granted.0, Some(Access::Admin)) || !state.auth.enabled();
            return peer_history(&state, &feed, q, show_users, admin).await;
        }
        Err(resp) => return *resp,
    };
    let admin = matches!(granted.0, Some(Access::Admin)) || !state.auth.enabled();
    let viewer = crate::history::Viewer {
        show_users,
        admin,
        findings: p.findings,
    };
    // Read and written as JSON off the async workers: a week's answer is megabytes.
    let job = p.job;
    let read = move || {
        let wanted = crate::history::Wanted {
            only: only.as_deref(),
            job: job.as_deref(),
        };
        history
            .answer_for(from, to, points, wanted, viewer)
            .map(|answer| serde_json::to_vec(&answer))
    };
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(Ok(body))) => (
            [(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response(),
        Ok(Err(e)) => read_failed(&e),
        Ok(Ok(Err(e))) => {
            tracing::warn!(error = %e, "history: an answer could not be written as JSON");
            error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                ApiCode::Unavailable,
                "the history read failed",
            )
        }
        Err(_) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            ApiCode::Unavailable,
            "the history read failed",
        ),
    }
}

/// A read that failed: too large (ask less) or the store unreadable now.
fn read_failed(e: &crate::history::StoreError) -> Response {
    match e {
        crate::history::StoreError::TooLarge(_) => {
            error_response(StatusCode::BAD_REQUEST, ApiCode::BadRequest, &e.to_string())
        }
        _ => error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            ApiCode::Unavailable,
            &format!("the history cannot be read now: {e}"),
        ),
    }
}

/// Where a host's history is read.
enum Where {
    /// This server's own host: its store.
    Local(crate::history::History),
    /// A hub's peer: asked over its link.
    Peer(crate::host_feed::HostFeed),
}

/// Where the history of `host` is (this server's own host when absent), if the credential may
/// see that host and its history.
fn find(state: &AppState, granted: &Granted, host: Option<String>) -> Result<Where, Box<Response>> {
    if granted.0.as_ref().is_some_and(|a| !a.sees_history()) {
        return Err(Box::new(error_response(
            StatusCode::FORBIDDEN,
            ApiCode::Forbidden,
            "this share link shows live data only, not the stored history; ask for a link made without --live-only",
        )));
    }
    let local = state.fleet.hubs().first().map(|h| h.host().to_owned());
    let host = host.or(local);
    let scoped = scoped_host(granted);
    let not_found = |code, m: &str| Box::new(error_response(StatusCode::NOT_FOUND, code, m));
    let Some(host) = host.filter(|h| scoped.is_none_or(|s| s == h)) else {
        return Err(not_found(ApiCode::UnknownHost, "no such host"));
    };
    let Some((i, feed)) = state.fleet.find(&host) else {
        return Err(not_found(ApiCode::UnknownHost, "no such host"));
    };
    // A hub's hosts are all peers; `serve --peer`'s come after its own.
    if i >= state.first_peer {
        return Ok(Where::Peer(feed.clone()));
    }
    match &state.history {
        Some(h) => Ok(Where::Local(h.clone())),
        None => Err(not_found(
            ApiCode::NotFound,
            "no history of this host here: history is kept by the vramio that samples a host (`serve` without --no-history); where its file could not be opened (another serve holding it, a disk error) this server's log says why",
        )),
    }
}

/// How long the hub waits for a peer's answer.
const PEER_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// A peer's history, asked over its link (docs/hub.md#history), and kept a while: the same
/// range asked again within [`super::state::HISTORY_CACHE_TTL`] is not asked again.
/// What a hub asks a peer.
struct PeerQuery {
    from: u64,
    to: u64,
    points: usize,
    only: Option<String>,
    /// Applied here to the peer's answer, not sent: `history_query` has no such field, and a
    /// peer of an earlier build refuses fields it does not know.
    job: Option<String>,
    findings: bool,
}

async fn peer_history(
    state: &AppState,
    feed: &crate::host_feed::HostFeed,
    PeerQuery {
        from,
        to,
        points,
        only,
        job,
        findings,
    }: PeerQuery,
    show_users: bool,
    admin: bool,
) -> Response {
    let key = (
        format!(
            "{}\n{}\n{findings}",
            feed.host(),
            only.as_deref().unwrap_or("")
        ),
        from / 10_000,
        to / 10_000,
        points,
    );
    let cached = state.history_cache.get(&key);
    let answer = match cached {
        Some(a) => a,
        None => {
            let q = shared::ClientMsg::HistoryQuery {
                id: 0,
                from_ms: from,
                to_ms: to,
                points: u32::try_from(points).unwrap_or(u32::MAX),
                only,
                findings,
            };
            match feed.ask_peer(q, PEER_WAIT).await {
                Ok(shared::ServerMsg::HistoryAnswer { answer, .. }) => {
                    let a = std::sync::Arc::new(*answer);
                    state.history_cache.put(key, a.clone());
                    a
                }
                Ok(_) => return peer_down(feed, "the peer answered something else"),
                Err(e) => return peer_down(feed, &e),
            }
        }
    };
    // Copied without the series `job=` leaves out.
    let mut answer = shared::stored::Answer {
        series: answer
            .series
            .iter()
            .filter(|s| shared::series::kept_for_job(job.as_deref(), s.scope, &s.item))
            .cloned()
            .collect(),
        segments: answer.segments.clone(),
        events: answer.events.clone(),
        tiers: answer.tiers.clone(),
        notices: answer.notices.clone(),
        ..*answer
    };
    if !show_users {
        crate::history::without_jobs(&mut answer);
    }
    if !findings {
        // A peer that does not know the flag sends them anyway.
        crate::history::without_findings(&mut answer);
    }
    if !admin {
        // The peer answered the hub's admin question; its notices may name paths.
        for n in &mut answer.notices {
            *n = "the peer's history writing needs attention (see its own page)".to_owned();
        }
    }
    Json(answer).into_response()
}

/// The peer's history could not be had: why, with the link's state.
fn peer_down(feed: &crate::host_feed::HostFeed, why: &str) -> Response {
    let (state, _, error) = feed.host_status();
    let link = match error {
        Some(e) => format!(" (the peer is {state:?}: {e})"),
        None => format!(" (the peer is {state:?})").to_lowercase(),
    };
    error_response(
        StatusCode::BAD_GATEWAY,
        ApiCode::PeerDown,
        &format!(
            "the history of {} could not be had from it: {why}{link}",
            feed.host()
        ),
    )
}

#[derive(Debug, Deserialize)]
pub(super) struct MomentParams {
    host: Option<String>,
    t_ms: u64,
}

/// `GET /api/history/moment?host=H&t_ms=T`: the page at a stored moment (a rewind): the frame
/// there and the diagnosis of the window up to it, with the resolution it was kept at.
pub(super) async fn moment(
    State(state): State<AppState>,
    Extension(granted): Extension<Granted>,
    Query(p): Query<MomentParams>,
) -> Response {
    let show_users = granted.0.as_ref().is_some_and(Access::show_users);
    let t = p.t_ms;
    let history = match find(&state, &granted, p.host) {
        Ok(Where::Local(h)) => h,
        Ok(Where::Peer(feed)) => {
            return match feed
                .ask_peer(shared::ClientMsg::MomentQuery { id: 0, t_ms: t }, PEER_WAIT)
                .await
            {
                Ok(shared::ServerMsg::MomentAnswer { mut moment, .. }) => {
                    if !show_users {
                        let hider = crate::host_feed::hider(
                            moment
                                .frame
                                .users()
                                .chain(moment.diagnosis.users())
                                .collect::<Vec<_>>(),
                        );
                        moment.frame.hide_users(&hider);
                        moment.diagnosis = moment.diagnosis.without_users(&hider);
                    }
                    Json(moment).into_response()
                }
                Ok(_) => peer_down(&feed, "the peer answered something else"),
                Err(e) => peer_down(&feed, &e),
            };
        }
        Err(resp) => return *resp,
    };
    let thresholds = state.thresholds.clone();
    let read = move || history.moment_for(t, &thresholds, show_users);
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(Some(m))) => Json(m).into_response(),
        Ok(Ok(None)) => error_response(
            StatusCode::NOT_FOUND,
            ApiCode::NotFound,
            "nothing is stored at or before that moment",
        ),
        Ok(Err(e)) => read_failed(&e),
        Err(_) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            ApiCode::Unavailable,
            "the history read failed",
        ),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct ExportParams {
    host: Option<String>,
    from_ms: u64,
    to_ms: u64,
    format: crate::history::Format,
}

/// `GET /api/history/export?host=H&from_ms=A&to_ms=B&format=csv|ndjson`: the range as a file
/// (admin, or a link that shows users: frames name them).
pub(super) async fn export(
    State(state): State<AppState>,
    Extension(granted): Extension<Granted>,
    Query(p): Query<ExportParams>,
) -> Response {
    if p.from_ms >= p.to_ms || p.to_ms - p.from_ms > MAX_RANGE_MS {
        return error_response(
            StatusCode::BAD_REQUEST,
            ApiCode::BadRequest,
            "from_ms must be before to_ms, at most 400 days apart",
        );
    }
    // Which history first (a link that shows live data only is refused there, by name).
    let history = match find(&state, &granted, p.host) {
        Ok(Where::Local(h)) => h,
        Ok(Where::Peer(feed)) => {
            return error_response(
                StatusCode::NOT_FOUND,
                ApiCode::NotFound,
                &format!(
                    "exports are made where the history is kept: run `vramio history export` on {}",
                    feed.host()
                ),
            );
        }
        Err(resp) => return *resp,
    };
    if !granted.0.as_ref().is_some_and(Access::show_users) && state.auth.enabled() {
        return error_response(
            StatusCode::FORBIDDEN,
            ApiCode::Forbidden,
            "this link hides user names, which an export holds; ask for a link that shows them",
        );
    }
    let (from, to, format) = (p.from_ms, p.to_ms, p.format);
    match tokio::task::spawn_blocking(move || history.export(from, to, format)).await {
        Ok(Ok(body)) => {
            let (mime, ext) = match format {
                crate::history::Format::Csv => ("text/csv; charset=utf-8", "csv"),
                crate::history::Format::Ndjson => ("application/x-ndjson", "ndjson"),
            };
            let name = format!("attachment; filename=\"vramio-history-{from}-{to}.{ext}\"");
            (
                [
                    (axum::http::header::CONTENT_TYPE, mime.to_owned()),
                    (axum::http::header::CONTENT_DISPOSITION, name),
                ],
                body,
            )
                .into_response()
        }
        Ok(Err(e)) => read_failed(&e),
        Err(_) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            ApiCode::Unavailable,
            "the history read failed",
        ),
    }
}
