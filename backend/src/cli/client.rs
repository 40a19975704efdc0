//! `vramio url` and `vramio share`: find the running server through the state directory's
//! `server.json`, and talk to its admin API (bearer token from the same directory) over TCP, TLS
//! (pinning the server's certificate) or its Unix socket.

use super::flags::{ClientArgs, ShareArgs, ShareCommand};
use super::serve::dashboard_url;
use crate::access::server_file::{Endpoint, ServerFile};
use crate::access::state_dir::StateDir;
use crate::access::token::Token;
use anyhow::{Context, bail};
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use shared::access::{ApiError, CreateShare, ShareInfo, ShareList};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// A request to the local server gives up after this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest answer read.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// The state directory, the token, and the running server; an error says why none is there.
pub(crate) fn open(args: &ClientArgs) -> anyhow::Result<(Token, ServerFile)> {
    // A client only reads: a state directory that is not there is not made.
    let path = match &args.access.state_dir {
        Some(p) => p.clone(),
        None => crate::access::state_dir::default_path()
            .ok_or(crate::access::state_dir::StateDirError::NoHome)?,
    };
    if !path.exists() {
        bail!(
            "no vramio server is running with the state directory {}: none has run with it yet (the directory does not exist); start one with `vramio`",
            path.display()
        );
    }
    let dir = StateDir::open(Some(&path))?;
    let token = match &args.access.token_file {
        Some(f) => Token::from_file(f)?,
        None => match dir.read(crate::access::token::TOKEN_FILE)? {
            Some(_) => Token::load_or_create(&dir)?,
            None => bail!(
                "no vramio server is running with the state directory {}: none has run with it yet (it holds no token); start one with `vramio`",
                dir.path().display()
            ),
        },
    };
    let Some(server) = ServerFile::read(&dir)? else {
        bail!(
            "no vramio server is running with the state directory {} (it has no server.json); start one with `vramio`",
            dir.path().display()
        );
    };
    if !server.is_alive() {
        bail!(
            "no vramio server is running with the state directory {}: its server.json is from pid {}, which has exited",
            dir.path().display(),
            server.pid
        );
    }
    Ok((token, server))
}

/// `vramio url`.
pub fn url(args: &ClientArgs) -> anyhow::Result<()> {
    let (token, server) = open(args)?;
    println!("{}", dashboard_url(&server.base_url, Some(&token)));
    Ok(())
}

/// `vramio share ...`.
pub fn share(args: &ShareArgs) -> anyhow::Result<()> {
    let (token, server) = open(args.command.client())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(share_async(&args.command, &token, &server))
}

async fn share_async(cmd: &ShareCommand, token: &Token, server: &ServerFile) -> anyhow::Result<()> {
    match cmd {
        ShareCommand::Create {
            expires,
            label,
            show_users,
            host,
            live_only,
            ..
        } => {
            let body = serde_json::to_string(&CreateShare {
                expires_s: Some(expires.as_secs().max(1)),
                label: label.clone(),
                show_users: *show_users,
                host: host.clone(),
                live_only: *live_only,
            })?;
            let (status, text) =
                call(server, token, Method::POST, "/api/shares", Some(body)).await?;
            let info: ShareInfo = expect(status, StatusCode::CREATED, &text)?;
            println!(
                "read-only link {}{}, expires in {}{}{}:",
                info.id,
                info.label
                    .as_deref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default(),
                humantime::format_duration(Duration::from_secs(expires.as_secs())),
                if info.show_users {
                    ", shows user names"
                } else {
                    ""
                },
                if info.live_only {
                    ", live data only"
                } else {
                    ""
                }
            );
            println!("{}", info.url);
        }
        ShareCommand::List { .. } => {
            let (status, text) = call(server, token, Method::GET, "/api/shares", None).await?;
            let list: ShareList = expect(status, StatusCode::OK, &text)?;
            if list.shares.is_empty() {
                println!("no active share links");
            }
            let now = crate::http::auth::now_ms();
            for s in list.shares {
                let left = Duration::from_secs(s.expires_ms.saturating_sub(now) / 1000);
                println!(
                    "{}  expires in {:<12} {:<10} {:<10} {}\n    {}",
                    s.id,
                    humantime::format_duration(left).to_string(),
                    if s.show_users { "users" } else { "no users" },
                    if s.live_only { "live only" } else { "history" },
                    s.label.unwrap_or_default(),
                    s.url
                );
            }
        }
        ShareCommand::Revoke { id: Some(id), .. } => {
            let (status, text) = call(
                server,
                token,
                Method::DELETE,
                &format!("/api/shares/{id}"),
                None,
            )
            .await?;
            match status {
                StatusCode::NO_CONTENT => println!("revoked {id}"),
                StatusCode::NOT_FOUND => bail!("no active share link has the id {id}"),
                _ => bail!("{}", api_message(status, &text)),
            }
        }
        ShareCommand::Revoke { id: None, .. } => {
            let (status, text) = call(server, token, Method::DELETE, "/api/shares", None).await?;
            let v: serde_json::Value = expect(status, StatusCode::OK, &text)?;
            println!(
                "revoked every link ({} active) and made a new signing key",
                v["revoked"]
            );
        }
    }
    Ok(())
}

pub(crate) fn api_message(status: StatusCode, text: &str) -> String {
    match serde_json::from_str::<ApiError>(text) {
        Ok(e) => format!("the server answered {status}: {}", e.message),
        Err(_) => format!("the server answered {status}: {}", text.trim()),
    }
}

fn expect<T: serde::de::DeserializeOwned>(
    status: StatusCode,
    want: StatusCode,
    text: &str,
) -> anyhow::Result<T> {
    if status != want {
        bail!("{}", api_message(status, text));
    }
    serde_json::from_str(text).with_context(|| format!("unexpected answer: {text}"))
}

/// One request to the server with the bearer token; the status and body.
pub async fn call(
    server: &ServerFile,
    token: &Token,
    method: Method,
    path: &str,
    body: Option<String>,
) -> anyhow::Result<(StatusCode, String)> {
    call_sized(
        server,
        token,
        method,
        path,
        body,
        MAX_ANSWER_BYTES,
        REQUEST_TIMEOUT,
    )
    .await
}

/// [`call`] for an answer of up to `limit` bytes within `timeout` (an export).
pub async fn call_sized(
    server: &ServerFile,
    token: &Token,
    method: Method,
    path: &str,
    body: Option<String>,
    limit: usize,
    timeout: Duration,
) -> anyhow::Result<(StatusCode, String)> {
    let authority = server
        .base_url
        .split_once("://")
        .map_or("localhost", |(_, a)| a)
        .to_owned();
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, authority)
        .header(header::AUTHORIZATION, format!("Bearer {}", token.expose()));
    if body.is_some() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let req = req.body(Full::new(Bytes::from(body.unwrap_or_default())))?;
    let what = match &server.endpoint {
        Endpoint::Tcp { addr } => addr.to_string(),
        Endpoint::Unix { path } => format!("unix:{}", path.display()),
    };
    tokio::time::timeout(timeout, send(server, req, limit))
        .await
        .with_context(|| format!("the server at {what} did not answer within {timeout:?}"))?
        .with_context(|| format!("cannot reach the vramio server at {what}"))
}

async fn send(
    server: &ServerFile,
    req: Request<Full<Bytes>>,
    limit: usize,
) -> anyhow::Result<(StatusCode, String)> {
    match &server.endpoint {
        Endpoint::Unix { path } => {
            exchange(tokio::net::UnixStream::connect(path).await?, req, limit).await
        }
        Endpoint::Tcp { addr } => {
            let addr = if addr.ip().is_unspecified() {
                SocketAddr::new([127, 0, 0, 1].into(), addr.port())
            } else {
                *addr
            };
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            match &server.tls_cert {
                None => exchange(tcp, req, limit).await,
                Some(cert) => {
                    let config = crate::http::pinned::client_config_from_pem(cert)?;
                    let name = rustls::pki_types::ServerName::try_from("localhost")?;
                    let tls = tokio_rustls::TlsConnector::from(config)
                        .connect(name, tcp)
                        .await?;
                    exchange(tls, req, limit).await
                }
            }
        }
    }
}

async fn exchange<I>(
    io: I,
    req: Request<Full<Bytes>>,
    limit: usize,
) -> anyhow::Result<(StatusCode, String)>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(conn);
    let resp = sender.send_request(req).await?;
    let status = resp.status();
    let body = Limited::new(resp.into_body(), limit)
        .collect()
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the answer: {e}"))?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}
