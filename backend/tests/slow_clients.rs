//! Clients that hold connections without using them: one that connects and sends nothing, one
//! that sends half a request head, one that keeps a connection alive between requests, are each
//! closed after the header-read timeout; a WebSocket viewer that sends nothing is not (it is past
//! the timeout once upgraded). A client that stops reading finds only a bounded amount queued
//! towards it in the kernel.

use futures_util::StreamExt;
use shared::Frame;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::listen::{Bound, serve_with};
use vramio::http::{AppState, app};

const TIMEOUT: Duration = Duration::from_millis(400);

async fn server() -> (std::net::SocketAddr, HostFeed) {
    let hub = HostFeed::new(
        "testhost",
        Duration::from_millis(100),
        HostFeedConfig::for_interval(Duration::from_millis(100)),
    );
    let state = AppState::new(hub.clone(), vramio::http::auth::Auth::disabled());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(serve_with(
        Bound::Tcp(listener),
        app(state),
        std::future::pending(),
        TIMEOUT,
    ));
    (addr, hub)
}

/// Reads until the server closes; how long that took (panics past 10 s).
async fn closed_after(stream: &mut TcpStream) -> Duration {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return start.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the server kept the connection open for 10 s"),
        }
    }
}

#[tokio::test]
async fn silent_slow_and_idle_connections_are_closed() {
    let (addr, _hub) = server().await;
    let mut silent = TcpStream::connect(addr).await.expect("connect");
    let waited = closed_after(&mut silent).await;
    assert!(waited >= TIMEOUT / 2, "closed after {waited:?}");

    let mut slow = TcpStream::connect(addr).await.expect("connect");
    slow.write_all(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .expect("half a head");
    closed_after(&mut slow).await;

    // A kept-alive connection gets its answer, then is closed once idle.
    let mut idle = TcpStream::connect(addr).await.expect("connect");
    idle.write_all(b"GET /api/schema HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .expect("a request");
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).await.expect("an answer");
    assert_eq!(&first, b"HTTP/1.1 200");
    closed_after(&mut idle).await;
}

#[tokio::test]
async fn a_quiet_websocket_viewer_stays() {
    let (addr, hub) = server().await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .expect("upgrade");
    let publisher = tokio::spawn(async move {
        for seq in 1..=30u64 {
            let _ = hub.publish(Frame::empty(
                "testhost",
                0,
                1_700_000_000_000 + seq * 100,
                100,
            ));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    // Three timeouts long, sending nothing: frames still come.
    let until = Instant::now() + TIMEOUT * 3;
    let mut frames = 0;
    while Instant::now() < until {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
            Ok(Some(Ok(m))) if m.is_text() && m.to_text().unwrap_or("").contains("\"frame\"") => {
                frames += 1;
            }
            Ok(Some(Ok(_))) => {}
            other => panic!("the viewer's socket ended: {other:?}"),
        }
    }
    assert!(frames >= 3, "{frames} frames");
    publisher.abort();
}

/// How many bytes a response body had handed to the connection when a client that never reads
/// stopped taking them (its own receive buffer 16 KiB): what the server's kernel queues for it.
async fn bytes_queued_for_a_reader_that_stopped() -> usize {
    use axum::body::{Body, Bytes};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    const CHUNK: usize = 16 * 1024;
    let produced = Arc::new(AtomicUsize::new(0));
    let counter = produced.clone();
    let router = axum::Router::new().route(
        "/big",
        axum::routing::get(move || {
            let counter = counter.clone();
            async move {
                let chunks = futures_util::stream::repeat_with(move || {
                    counter.fetch_add(CHUNK, Ordering::SeqCst);
                    Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; CHUNK]))
                })
                .take(64 * 1024 * 1024 / CHUNK);
                Body::from_stream(chunks)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(serve_with(
        Bound::Tcp(listener),
        router,
        std::future::pending(),
        TIMEOUT,
    ));
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(16 * 1024).expect("SO_RCVBUF");
    let mut client = socket.connect(addr).await.expect("connect");
    client
        .write_all(b"GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .expect("a request");
    // Until the body stops moving: no change for half a second, within 20 s.
    let mut last = usize::MAX;
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = produced.load(Ordering::SeqCst);
        if now == last {
            break;
        }
        last = now;
    }
    server.abort();
    last
}

#[tokio::test]
async fn a_client_that_stops_reading_has_little_queued_towards_it() {
    let queued = bytes_queued_for_a_reader_that_stopped().await;
    // The capped send buffer (Linux counts twice SEND_BUFFER, overhead included), the client's
    // 16 KiB receive window and hyper's own buffers. The kernel's default lets this grow to
    // tcp_wmem's 4 MiB.
    let bound = 2 * vramio::http::listen::SEND_BUFFER + 512 * 1024;
    assert!(
        queued <= bound,
        "{queued} bytes went to a client that reads nothing (bound {bound})"
    );
}
