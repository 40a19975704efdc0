//! A WebSocket viewer of the real binary's `/ws`, over any stream (TCP, TLS): open with custom
//! headers (a cookie, an Origin, a bearer token), read the next message or close code, and find
//! this test process among a frame's GPU processes. Include with
//! `#[path = "common/ws_viewer.rs"] mod ws_viewer;`.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use futures_util::StreamExt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};

/// What a WebSocket said next: a text message, or the close code (`None`: no close frame).
#[derive(Debug)]
pub enum Got {
    Text(serde_json::Value, String),
    Closed(Option<u16>),
}

/// Opens `url` over `io` with `headers`.
pub async fn ws_over<S>(io: S, url: &str, headers: &[(&str, &str)]) -> WebSocketStream<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut req = url.into_client_request().expect("a ws URL");
    for (n, v) in headers {
        req.headers_mut().insert(
            HeaderName::from_bytes(n.as_bytes()).expect("header name"),
            HeaderValue::from_str(v).expect("header value"),
        );
    }
    let (ws, _) = tokio_tungstenite::client_async(req, io)
        .await
        .expect("websocket handshake");
    ws
}

pub async fn next<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>) -> Got {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message within 10 s");
        match msg {
            Some(Ok(Message::Text(t))) => {
                let v = serde_json::from_str(t.as_str()).expect("JSON text");
                return Got::Text(v, t.as_str().to_owned());
            }
            Some(Ok(Message::Close(c))) => return Got::Closed(c.map(|c| u16::from(c.code))),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return Got::Closed(None),
        }
    }
}

/// Reads until a message of `kind`; panics on a close first.
pub async fn until<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
    kind: &str,
) -> serde_json::Value {
    loop {
        match next(ws).await {
            Got::Text(v, _) if v["type"] == kind => return v,
            Got::Text(..) => {}
            Got::Closed(c) => panic!("closed ({c:?}) before a {kind}"),
        }
    }
}

/// The frames a `frame` or `backfill` message carries.
pub fn frames_of(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    match v["type"].as_str() {
        Some("frame") => vec![&v["frame"]],
        Some("backfill") => v["frames"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// This test process as a GPU process in `frame`, if listed.
pub fn my_process(frame: &serde_json::Value) -> Option<&serde_json::Value> {
    let me = u64::from(std::process::id());
    frame["gpus"]
        .as_array()?
        .iter()
        .filter_map(|g| g["processes"].as_array())
        .flatten()
        .find(|p| p["pid"].as_u64() == Some(me))
}

impl Got {
    pub fn closed(&self) -> Option<u16> {
        match self {
            Got::Closed(c) => *c,
            Got::Text(_, t) => panic!("expected a close, got {t}"),
        }
    }
}

/// Reads frames until one lists this process with a `user`; returns that process.
pub async fn me_with_user<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
) -> serde_json::Value {
    loop {
        match next(ws).await {
            Got::Text(v, _) => {
                let found = frames_of(&v)
                    .into_iter()
                    .filter_map(my_process)
                    .find(|p| p.get("user").is_some());
                if let Some(p) = found {
                    return p.clone();
                }
            }
            Got::Closed(c) => panic!("closed ({c:?}) before a frame with a user"),
        }
    }
}
