//! The hub under load (docs/performance.md#targets: 256 peers x 8 GPUs at 1 Hz <= 10% of one core, memory
//! bounded): this bench starts N simulated peers on loopback (WebSocket servers that speak the
//! protocol and send one 8-GPU frame per second each), a release `vramio hub` watching all of
//! them, and one viewer of the hub's overview; then it prints the hub's CPU (every thread's
//! on-CPU time from `/proc/<pid>/task/*/schedstat`) and RSS over a steady window.
//!
//! `cargo bench -p vramio --bench hub_load`; `VRAMIO_HUB_PEERS` (default 256),
//! `VRAMIO_HUB_SECS` (default 30). The peers and the viewer run in this process and are not counted.

use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

#[path = "common/sim_peers.rs"]
mod sim_peers;

use sim_peers::{cpu_ns, rss_kib, start_fleet};

fn main() {
    let n: usize = std::env::var("VRAMIO_HUB_PEERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let secs: u64 = std::env::var("VRAMIO_HUB_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let sent = Arc::new(AtomicU64::new(0));
    let dir = std::env::temp_dir().join(format!("vramio-hub-load-{}", std::process::id()));
    let (hub, url) = start_fleet(&runtime, n, &dir, sent.clone());
    let (base, token) = url.split_once("/?token=").expect("token url");
    let ws_url = format!("{}/ws", base.replace("http://", "ws://"));
    let token = token.to_owned();
    let received = Arc::new(AtomicU64::new(0));
    let got = received.clone();
    runtime.spawn(async move {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut req = ws_url.into_client_request().expect("req");
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().expect("header"),
        );
        let (mut ws, _) = tokio_tungstenite::connect_async(req).await.expect("viewer");
        let _ = ws
            .send(Message::text(r#"{"type":"subscribe","hosts":[]}"#))
            .await;
        while let Some(Ok(m)) = ws.next().await {
            got.fetch_add(m.len() as u64, Ordering::Relaxed);
        }
    });
    let pid = hub.0.id();
    // Every peer connected and streaming before the window starts.
    std::thread::sleep(Duration::from_secs(10 + n as u64 / 50));
    let (cpu0, t0, sent0, got0) = (
        cpu_ns(pid),
        Instant::now(),
        sent.load(Ordering::Relaxed),
        received.load(Ordering::Relaxed),
    );
    std::thread::sleep(Duration::from_secs(secs));
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (cpu_ns(pid) - cpu0) as f64 / 1e9;
    let frames = sent.load(Ordering::Relaxed) - sent0;
    let bytes = received.load(Ordering::Relaxed) - got0;
    println!(
        "hub_load: {n} peers x 8 GPUs at 1 Hz for {wall:.0} s: hub CPU {:.2}% of one core, \
         RSS {} KiB, {:.0} peer frames/s in, overview viewer {:.1} KB/s",
        cpu / wall * 100.0,
        rss_kib(pid),
        frames as f64 / wall,
        bytes as f64 / wall / 1000.0
    );
    drop(hub);
    let _ = std::fs::remove_dir_all(&dir);
}
