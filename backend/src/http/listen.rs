//! Where the server listens: TCP, TCP with TLS (rustls; handshakes run beside the accept loop,
//! bounded in number and time, so a slow client never holds up others), or a Unix socket created
//! with mode 0600 and no TCP port at all. Each connection's kernel send buffer is capped
//! ([`SEND_BUFFER`]), and a request head must arrive within [`HEADER_READ_TIMEOUT`].

use axum::Router;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A TLS handshake must finish within this.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at once; more connections wait in the kernel's backlog.
pub const MAX_HANDSHAKES: usize = 128;
/// Bytes the kernel may queue unsent towards one client (`SO_SNDBUF`; Linux doubles it for its
/// bookkeeping). Left to itself the kernel grows this to `tcp_wmem`'s 4 MiB, minutes of small
/// messages for a viewer that reads slowly: every larger message (a backfill) then waits for that
/// backlog to drain and a slow but reading viewer hit the write timeout (found by the soak bench).
/// Capped, the backlog is seconds, the session lags and catches up from the ring instead, and a
/// thousand viewers cannot pin 4 GB of kernel memory. 64 KiB still moves a 400 KB page over a
/// 100 ms round trip in well under a second.
pub const SEND_BUFFER: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("cannot read the TLS certificate {}: {problem}", path.display())]
    Cert { path: PathBuf, problem: String },
    #[error("cannot read the TLS key {}: {problem}", path.display())]
    Key { path: PathBuf, problem: String },
    #[error("the TLS certificate and key do not work together: {0}")]
    Tls(String),
    #[error("another server already listens on {}", .0.display())]
    SocketInUse(PathBuf),
    #[error("{} exists and is not a socket; refusing to replace it", .0.display())]
    NotASocket(PathBuf),
    #[error("cannot listen on {what}: {source}")]
    Bind { what: String, source: io::Error },
}

/// The rustls server configuration for a PEM certificate chain and key.
pub fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, ListenError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ListenError::Cert {
            path: cert.to_owned(),
            problem: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(ListenError::Cert {
            path: cert.to_owned(),
            problem: "no PEM CERTIFICATE in it".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| ListenError::Key {
        path: key.to_owned(),
        problem: e.to_string(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ListenError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ListenError::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// TLS connections, handshaken by a task of their own and handed to `axum::serve` when ready.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accept_task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

impl TlsListener {
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(MAX_HANDSHAKES);
        let acceptor = TlsAcceptor::from(config);
        let permits = Arc::new(Semaphore::new(MAX_HANDSHAKES));
        let accept_task = tokio::spawn(async move {
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let (stream, addr) = match tcp.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, as axum does.
                        tracing::debug!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                limit_send_buffer(&stream);
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, addr)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%addr, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%addr, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            ready,
            local,
            accept_task,
        })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// Binds a Unix socket at `path` with mode 0600. A stale socket (nobody answers) is replaced; a
/// live one, or any other file, is refused.
pub fn bind_unix(path: &Path) -> Result<UnixListener, ListenError> {
    let bind_err = |source| ListenError::Bind {
        what: format!("unix:{}", path.display()),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(ListenError::SocketInUse(path.to_owned()));
            }
            std::fs::remove_file(path).map_err(bind_err)?;
        }
        Ok(_) => return Err(ListenError::NotASocket(path.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(bind_err(e)),
    }
    // The socket is created with the umask's mode: make that 0600 from the first instant.
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
    let bound = UnixListener::bind(path);
    rustix::process::umask(old);
    let listener = bound.map_err(bind_err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(bind_err)?;
    Ok(listener)
}

/// A bound listener of any kind.
pub enum Bound {
    Tcp(TcpListener),
    Tls(TlsListener),
    Unix(UnixListener, PathBuf),
}

/// A connection must send a whole request head within this, or it is closed: a client that
/// connects and sends nothing, or a byte a minute, holds no file descriptor for long. hyper starts
/// the same clock when a kept-alive connection waits for its next request, so this is also the
/// idle timeout between requests. An upgraded WebSocket is past it (its session has its own
/// write timeout, and a viewer need not send anything).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `router` on `bound` until `shutdown` completes; removes a Unix socket afterwards.
pub async fn serve(
    bound: Bound,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with(bound, router, shutdown, HEADER_READ_TIMEOUT).await
}

/// [`serve`] with another header-read (and idle) timeout, for tests.
pub async fn serve_with(
    bound: Bound,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    header_timeout: Duration,
) -> io::Result<()> {
    match bound {
        Bound::Tcp(l) => accept_loop(l, router, shutdown, header_timeout, limit_send_buffer).await,
        // Capped before the handshake, by the TLS listener.
        Bound::Tls(l) => accept_loop(l, router, shutdown, header_timeout, |_| {}).await,
        Bound::Unix(l, path) => {
            let served = accept_loop(l, router, shutdown, header_timeout, limit_send_buffer).await;
            let _ = std::fs::remove_file(&path);
            served
        }
    }
}

/// Caps the kernel's send buffer of one connection at [`SEND_BUFFER`]. A socket that refuses
/// keeps the kernel's default: it is a bound on memory and delay, not on correctness.
fn limit_send_buffer(socket: &impl std::os::fd::AsFd) {
    if let Err(e) = rustix::net::sockopt::set_socket_send_buffer_size(socket, SEND_BUFFER) {
        tracing::debug!(error = %e, "cannot set SO_SNDBUF");
    }
}

/// Accepts connections until `shutdown`, serving each over HTTP/1.1 (with upgrades, for `/ws`) on
/// a task of its own, then asks every connection to finish its request and close, and waits for
/// them, as `axum::serve` does; unlike it, each connection has the header-read timeout, and
/// `prepare` sees each connection first.
async fn accept_loop<L>(
    mut listener: L,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    header_timeout: Duration,
    prepare: fn(&L::Io),
) -> io::Result<()>
where
    L: axum::serve::Listener,
    L::Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    let (closing, closed) = tokio::sync::watch::channel(false);
    let connections = tokio_util::task::TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let io = tokio::select! {
            (io, _addr) = listener.accept() => io,
            () = &mut shutdown => break,
        };
        prepare(&io);
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let mut closed = closed.clone();
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder
                .serve_connection(TokioIo::new(io), service)
                .with_upgrades();
            tokio::pin!(conn);
            tokio::select! {
                served = conn.as_mut() => {
                    if let Err(e) = served {
                        tracing::trace!(error = %e, "connection ended");
                    }
                    return;
                }
                _ = closed.wait_for(|c| *c) => conn.as_mut().graceful_shutdown(),
            }
            let _ = conn.await;
        });
    }
    drop(listener);
    let _ = closing.send(true);
    connections.close();
    connections.wait().await;
    Ok(())
}
