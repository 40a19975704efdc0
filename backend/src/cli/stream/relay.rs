//! `vramio stream` beside this user's running `vramio serve`: connect to that server's `/ws` (TCP,
//! TLS pinned to its certificate, or its Unix socket, as `server.json` says; the bearer token from
//! the same state directory) and pipe its messages to stdout and stdin's lines to it, so the hub
//! sees that server's history and seq and a `subscribe` line resumes without a gap.

use crate::access::server_file::{Endpoint, ServerFile};
use crate::access::token::Token;
use crate::cli::flags::{AccessArgs, ClientArgs};
use crate::peers::lines::Lines;
use anyhow::{Context, bail};
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, http};

/// Connecting to the local server (and its WebSocket handshake) gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A hub that reads nothing for this long is gone (as a viewer is for the server's session).
const WRITE_TIMEOUT: Duration = crate::http::session::WRITE_TIMEOUT;
/// Largest message taken from the server: the longest line a hub takes.
const MAX_MESSAGE_BYTES: usize = crate::peers::ssh::MAX_LINE_BYTES;

/// Any byte stream the socket can run over.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

pub type Socket = WebSocketStream<Box<dyn Io>>;

/// The running server of this state directory and its token, or why there is none.
pub fn find(access: &AccessArgs) -> anyhow::Result<(Token, ServerFile)> {
    let (token, server) = super::super::client::open(&ClientArgs {
        access: access.clone(),
    })?;
    if !server.relayable() {
        bail!(
            "the server of this state directory (pid {}) is {}, not this host's own `vramio \
             serve`: its frames are not this host's live data",
            server.pid,
            match (server.kind, server.peers) {
                (Some(k), false) => k.command().to_owned(),
                (Some(k), true) => format!("{} with peers", k.command()),
                (None, _) => "of an older vramio that does not say what it serves".to_owned(),
            }
        );
    }
    Ok((token, server))
}

/// Opens the server's `/ws` with the token.
pub async fn connect(server: &ServerFile, token: &Token) -> anyhow::Result<Socket> {
    tokio::time::timeout(CONNECT_TIMEOUT, connect_now(server, token))
        .await
        .with_context(|| format!("no answer within {CONNECT_TIMEOUT:?}"))?
}

async fn connect_now(server: &ServerFile, token: &Token) -> anyhow::Result<Socket> {
    let io: Box<dyn Io> = match &server.endpoint {
        Endpoint::Unix { path } => Box::new(tokio::net::UnixStream::connect(path).await?),
        Endpoint::Tcp { addr } => {
            let addr = if addr.ip().is_unspecified() {
                SocketAddr::new([127, 0, 0, 1].into(), addr.port())
            } else {
                *addr
            };
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            match &server.tls_cert {
                None => Box::new(tcp),
                Some(cert) => {
                    let config = crate::http::pinned::client_config_from_pem(cert)?;
                    let name = rustls::pki_types::ServerName::try_from("localhost")?;
                    Box::new(
                        tokio_rustls::TlsConnector::from(config)
                            .connect(name, tcp)
                            .await?,
                    )
                }
            }
        }
    };
    // The Host the server expects is the one its URL names (as `vramio share` sends it).
    let authority = server
        .base_url
        .split_once("://")
        .map_or("localhost", |(_, a)| a);
    let mut request = format!("ws://{authority}/ws").into_client_request()?;
    let bearer = http::HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        .context("the token is not a header value")?;
    request
        .headers_mut()
        .insert(http::header::AUTHORIZATION, bearer);
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    match tokio_tungstenite::client_async_with_config(request, io, Some(config)).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            bail!("the server answered {}", resp.status())
        }
        Err(e) => Err(e.into()),
    }
}

/// Pipes until stdin ends (the hub left: `Ok`) or the server goes (an error that says so).
pub async fn pipe<R, W>(mut socket: Socket, mut input: Lines<R>, out: W) -> anyhow::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut out = BufWriter::new(out);
    loop {
        tokio::select! {
            msg = socket.next() => match msg {
                Some(Ok(Message::Text(text))) => {
                    let written = tokio::time::timeout(WRITE_TIMEOUT, async {
                        out.write_all(text.as_bytes()).await?;
                        out.write_all(b"\n").await?;
                        out.flush().await
                    })
                    .await;
                    match written {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "stdout closed");
                            return Ok(());
                        }
                        Err(_) => bail!("stdout took no line for {WRITE_TIMEOUT:?}"),
                    }
                }
                Some(Ok(Message::Close(frame))) => match frame {
                    Some(f) if !f.reason.is_empty() => {
                        bail!("the vramio server ended the stream: {}", f.reason)
                    }
                    _ => bail!("the vramio server ended the stream"),
                },
                Some(Ok(_)) => {}
                Some(Err(e)) => bail!("lost the vramio server: {e}"),
                None => bail!("the vramio server closed the connection"),
            },
            line = input.next_line() => match line {
                Ok(Some(line)) => socket
                    .send(Message::Text(line.into()))
                    .await
                    .context("lost the vramio server")?,
                Ok(None) => {
                    let _ = tokio::time::timeout(Duration::from_secs(1), socket.close(None)).await;
                    return Ok(());
                }
                Err(e) => bail!("cannot read stdin: {e}"),
            },
        }
    }
}
