//! Every error an HTTP route answers: a status, a stable code and a sentence for people, as the
//! JSON body `shared::access::ApiError` (`{"error": CODE, "message": ...}`). Routes return
//! [`ApiError`]; server-side failures (5xx) are logged once, here, and the client sees only the
//! sentence.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// The stable ids of API errors (the `error` field). The ones a WebSocket also reports are the
/// same words as `shared::ErrorCode`'s (`unknown_host`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiCode {
    BadRequest,
    BadSpeed,
    Forbidden,
    MetricsFailed,
    NoFrameYet,
    NotFound,
    NotReplaying,
    PeerDown,
    Unavailable,
    SeekPending,
    ShareStore,
    SharingOff,
    TooManyShares,
    TooManyViewers,
    Unauthorized,
    UnknownHost,
}

impl ApiCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiCode::BadRequest => "bad_request",
            ApiCode::BadSpeed => "bad_speed",
            ApiCode::Forbidden => "forbidden",
            ApiCode::MetricsFailed => "metrics_failed",
            ApiCode::NoFrameYet => "no_frame_yet",
            ApiCode::NotFound => "not_found",
            ApiCode::NotReplaying => "not_replaying",
            ApiCode::SeekPending => "seek_pending",
            ApiCode::ShareStore => "share_store",
            ApiCode::SharingOff => "sharing_off",
            ApiCode::TooManyShares => "too_many_shares",
            ApiCode::TooManyViewers => "too_many_viewers",
            ApiCode::Unauthorized => "unauthorized",
            // The word `shared::ErrorCode::UnknownHost` is sent as on `/ws`.
            ApiCode::UnknownHost => "unknown_host",
            ApiCode::PeerDown => "peer_down",
            ApiCode::Unavailable => "unavailable",
        }
    }
}

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: ApiCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ApiCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code.as_str(), message = %self.message, "API error");
        }
        let body = shared::access::ApiError {
            error: self.code.as_str().to_owned(),
            message: self.message,
        };
        (self.status, Json(body)).into_response()
    }
}

/// An [`ApiError`] as a response.
pub fn error_response(status: StatusCode, code: ApiCode, message: &str) -> Response {
    ApiError::new(status, code, message).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_body_is_the_shared_api_error() {
        let resp = error_response(StatusCode::NOT_FOUND, ApiCode::UnknownHost, "no host x");
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let body: shared::access::ApiError = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(body.error, "unknown_host");
        assert_eq!(body.message, "no host x");
        let ws_word = serde_json::to_string(&shared::ErrorCode::UnknownHost).expect("json");
        assert_eq!(ws_word, format!("\"{}\"", ApiCode::UnknownHost.as_str()));
    }
}
