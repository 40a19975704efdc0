//! `GET /metrics`: who may scrape (the admin token, the scrape token, or anyone on a loopback or
//! Unix-socket server started with `--metrics-public`), and the exposition itself, encoded off
//! the async thread.

use super::auth::{Access, Granted, unauthorized};
use super::error::{ApiCode, error_response};
use super::state::AppState;
pub use super::state::MetricsPolicy;
use crate::metrics::Scrape;
use axum::extract::{Extension, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub async fn metrics(
    State(state): State<AppState>,
    Extension(granted): Extension<Granted>,
) -> Response {
    match (&granted.0, state.metrics.public) {
        (Some(Access::Admin | Access::Scrape), _) | (None, true) => {}
        (None, false) => return unauthorized("/metrics"),
        (Some(Access::Viewer(_)), _) => {
            return error_response(
                StatusCode::FORBIDDEN,
                ApiCode::Forbidden,
                "a share link shows the live page only; /metrics needs a token",
            );
        }
    }
    let viewers = state.viewers.in_use();
    let fleet = state.fleet.clone();
    let options = state.metrics.options;
    let history = state.history.clone();
    // A hub of hundreds of hosts takes milliseconds to encode: not on the thread every
    // connection shares.
    let encoded = tokio::task::spawn_blocking(move || {
        let mut scrape = Scrape::of_fleet(&fleet, options, viewers);
        scrape.history = history.as_ref().map(crate::history::History::status);
        scrape.render()
    })
    .await;
    match encoded {
        Ok(Ok(text)) => {
            let mut resp = text.into_response();
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
            );
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            resp
        }
        Ok(Err(_)) | Err(_) => {
            tracing::error!("cannot encode /metrics");
            error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                ApiCode::MetricsFailed,
                "the metrics could not be encoded; see the server's log",
            )
        }
    }
}
