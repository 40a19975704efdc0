//! The HTTP surface: `/ws`, `/api/snapshot`, `/api/health`, `/api/schema`, `/api/replay`,
//! `/metrics`, the share-link routes and the embedded page, wired here and handled in modules of
//! their own.
//!
//! [`app`] is the only place routes are wired; `main.rs` and the tests both call it. Every request
//! passes [`auth::guard`] (host, origin, credentials) first; each route group then says who may
//! use it: anyone (the page, `/api/session`, a link's claim), any viewer (the live data), or the
//! admin (the share API). Bodies are bounded, responses are compressed when the client accepts
//! it and carry the security headers of docs/security.md#1-the-model-in-short.

use super::auth;
use super::error::{ApiCode, error_response};
use super::metrics_route;
use super::share_routes;
use super::state::AppState;
use super::{history_route, replay_route, status_routes, ws_route};
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue, StatusCode, Uri, header};
use axum::response::Response;
use axum::routing::{any, delete, get, post};
use axum::{Json, Router};
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, Predicate};
use tower_http::set_header::SetResponseHeaderLayer;

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
        .route("/ws", get(ws_route::ws))
        .route("/api/snapshot", get(status_routes::snapshot))
        .route("/api/health", get(status_routes::health))
        .route("/api/schema", get(schema))
        .route("/api/replay", get(replay_route::replay))
        .route("/api/history", get(history_route::history))
        .route("/api/history/moment", get(history_route::moment))
        .route("/api/history/export", get(history_route::export))
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
        // The API's JSON is compressed as it goes; the page's files were compressed at build.
        // Level 4: zstd for browsers that take it (Chromium, Firefox) wrote a week's chart answer
        // (3.9 MB of JSON) in about 13 ms to 778 KB, where brotli 4 took 60 to 100 ms to 728 KB;
        // brotli stays for the others, then gzip (docs/performance.md#history).
        .layer(
            CompressionLayer::new()
                .quality(tower_http::CompressionLevel::Precise(4))
                .compress_when(DefaultPredicate::new().and(
                    |_, _, _: &_, ext: &axum::http::Extensions| {
                        ext.get::<super::assets::SentAsBuilt>().is_none()
                    },
                )),
        )
        .layer(header_layer(header::CONTENT_SECURITY_POLICY, CSP))
        .layer(header_layer(header::X_FRAME_OPTIONS, "DENY"))
        .layer(header_layer(header::REFERRER_POLICY, "no-referrer"))
        .layer(header_layer(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
}

fn header_layer(name: HeaderName, value: &'static str) -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
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
