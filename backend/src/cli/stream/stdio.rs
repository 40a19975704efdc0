//! stdin and stdout as the two halves of a socket for [`crate::http::session::run`]: each text
//! message out is one line (flushed at once), each line in is one text message, read with the
//! bounded [`Lines`] so a client's endless line cannot fill memory.

use crate::peers::lines::{LineError, Lines};
use axum::extract::ws::Message;
use futures_util::{Sink, Stream};
use std::pin::Pin;
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt, BufWriter};

/// A sink that writes each text message and a newline to `out`, then flushes; other messages
/// (`Close`, pings) have no line form and are dropped.
pub fn line_sink<W>(out: W) -> Pin<Box<dyn Sink<Message, Error = std::io::Error> + Send>>
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    Box::pin(futures_util::sink::unfold(
        BufWriter::new(out),
        |mut out, msg: Message| async move {
            if let Message::Text(text) = msg {
                out.write_all(text.as_bytes()).await?;
                out.write_all(b"\n").await?;
                out.flush().await?;
            }
            Ok::<_, std::io::Error>(out)
        },
    ))
}

/// The lines of `input` (each at most `limit` bytes) as text messages; ends at end of input.
pub fn line_stream<R>(
    input: R,
    limit: usize,
) -> Pin<Box<dyn Stream<Item = Result<Message, LineError>> + Send>>
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    Box::pin(futures_util::stream::unfold(
        Some(Lines::new(input, limit)),
        |lines| async move {
            let mut lines = lines?;
            match lines.next_line().await {
                Ok(Some(line)) => Some((Ok(Message::Text(line.into())), Some(lines))),
                Ok(None) => None,
                // After an error the reader is spent: end the stream behind it.
                Err(e) => Some((Err(e), None)),
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::{SinkExt, StreamExt};
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn messages_become_lines_and_lines_messages() {
        let (a, mut b) = tokio::io::duplex(1024);
        let mut sink = line_sink(a);
        sink.send(Message::Text(r#"{"type":"pong"}"#.into()))
            .await
            .expect("send");
        sink.send(Message::Close(None)).await.expect("close");
        sink.send(Message::Text("x".into())).await.expect("send");
        drop(sink);
        let mut got = String::new();
        b.read_to_string(&mut got).await.expect("read");
        assert_eq!(got, "{\"type\":\"pong\"}\nx\n");

        let input: &[u8] = b"{\"type\":\"ping\"}\n0123456789abcdefghijklmn\nnever read\n";
        let mut stream = line_stream(input, 20);
        let first = stream.next().await.expect("a line").expect("ok");
        assert_eq!(first, Message::Text(r#"{"type":"ping"}"#.into()));
        let e = stream.next().await.expect("an item").expect_err("too long");
        assert!(e.to_string().contains("too long"), "{e}");
        assert!(stream.next().await.is_none(), "spent after an error");
    }

    #[tokio::test]
    async fn a_closed_stdout_is_a_write_error() {
        let (a, b) = tokio::io::duplex(64);
        drop(b);
        let mut sink = line_sink(a);
        assert!(sink.send(Message::Text("x".into())).await.is_err());
    }
}
