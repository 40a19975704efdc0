//! The socket's side of a session, outside the protocol: writes within [`WRITE_TIMEOUT`], sorting
//! what the client sent before it is read as JSON, and ending with the close code (and, for a
//! share link, the `error`) that says why.

use super::{Ended, WRITE_TIMEOUT};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes};
use futures_util::{Sink, SinkExt};
use shared::protocol::MAX_CLIENT_MESSAGE_BYTES;
use shared::{ErrorCode, ServerMsg};
use std::time::Duration;

/// A message the hub encoded, as a WebSocket text message (the bytes are shared, not copied;
/// checking they are UTF-8 again is the one cost, well under a microsecond for a frame).
pub fn text(encoded: &crate::host_feed::Encoded) -> Message {
    Message::Text(Utf8Bytes::try_from(encoded.to_bytes()).unwrap_or_default())
}

/// RFC 6455 close codes used here.
const CLOSE_GOING_AWAY: u16 = 1001;
const CLOSE_TOO_BIG: u16 = 1009;
/// Private-use close code: the share link this viewer came by has ended.
pub const CLOSE_SHARE_ENDED: u16 = 4403;

/// A client message before it is read as JSON: its text, or what to do instead.
pub enum Raw {
    Text(Utf8Bytes),
    Reply(ServerMsg),
    Ignore,
    End(Ended),
}

/// Queues `msgs` and flushes once: one write to the socket, within [`WRITE_TIMEOUT`].
pub async fn write<S: Sink<Message> + Unpin>(
    sink: &mut S,
    msgs: impl IntoIterator<Item = Message>,
) -> Result<(), Ended> {
    let write = async move {
        for msg in msgs {
            sink.feed(msg).await?;
        }
        sink.flush().await
    };
    match tokio::time::timeout(WRITE_TIMEOUT, write).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) | Err(_) => Err(Ended::WriteFailed),
    }
}

/// Writes `msg`, encoded, on its own.
pub async fn write_msg<S: Sink<Message> + Unpin>(
    sink: &mut S,
    msg: &ServerMsg,
) -> Result<(), Ended> {
    let text = serde_json::to_string(msg).map_err(|_| Ended::WriteFailed)?;
    write(sink, [Message::Text(text.into())]).await
}

/// Sorts what the socket gave: read errors and oversized messages end the session (1009 for too
/// big), binary messages get an error reply, control frames are ignored.
pub fn raw<E: std::fmt::Display>(incoming: Result<Message, E>) -> Raw {
    match incoming {
        Err(e) => {
            let text = e.to_string();
            tracing::debug!(error = %text, "websocket read failed");
            // tungstenite reports its own size limit as "Space limit exceeded: ..." or
            // "Message too long"; anything else is a broken connection.
            if text.contains("too long") || text.contains("limit exceeded") {
                Raw::End(Ended::TooBig)
            } else {
                Raw::End(Ended::ClientClosed)
            }
        }
        Ok(Message::Close(_)) => Raw::End(Ended::ClientClosed),
        Ok(Message::Ping(_) | Message::Pong(_)) => Raw::Ignore,
        Ok(Message::Binary(b)) if b.len() > MAX_CLIENT_MESSAGE_BYTES => Raw::End(Ended::TooBig),
        Ok(Message::Binary(_)) => Raw::Reply(ServerMsg::Error {
            code: ErrorCode::Unsupported,
            message: "binary messages are not part of the protocol; send JSON text".into(),
        }),
        Ok(Message::Text(t)) if t.len() > MAX_CLIENT_MESSAGE_BYTES => Raw::End(Ended::TooBig),
        Ok(Message::Text(t)) => Raw::Text(t),
    }
}

/// Ends a session on `sink` the way `ended` says: for a share link its `error` message first,
/// then the close frame (best effort: the peer may already be gone). Nothing for a client that
/// left or a socket that failed.
pub async fn say_goodbye<S: Sink<Message> + Unpin>(sink: &mut S, ended: &Ended) {
    let (code, reason, error) = match ended {
        Ended::ServerShutdown => (CLOSE_GOING_AWAY, "server shutting down", None),
        Ended::TooBig => (CLOSE_TOO_BIG, "message too big", None),
        Ended::ShareRevoked => (
            CLOSE_SHARE_ENDED,
            "share link revoked",
            Some((ErrorCode::ShareRevoked, "this link was revoked")),
        ),
        Ended::ShareExpired => (
            CLOSE_SHARE_ENDED,
            "share link expired",
            Some((ErrorCode::ShareExpired, "this link has expired")),
        ),
        Ended::HostGone => (
            CLOSE_SHARE_ENDED,
            "this link's host is not served here",
            Some((
                ErrorCode::ShareRevoked,
                "the host this link shows is not served here",
            )),
        ),
        Ended::ClientClosed | Ended::WriteFailed => return,
    };
    if let Some((code, message)) = error {
        let msg = ServerMsg::Error {
            code,
            message: message.into(),
        };
        if let Ok(text) = serde_json::to_string(&msg) {
            let _ = tokio::time::timeout(
                Duration::from_secs(1),
                sink.send(Message::Text(text.into())),
            )
            .await;
        }
    }
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    };
    let _ = tokio::time::timeout(
        Duration::from_secs(1),
        sink.send(Message::Close(Some(frame))),
    )
    .await;
}
