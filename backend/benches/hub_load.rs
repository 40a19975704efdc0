//! The hub under load (DESIGN section 9: 256 peers x 8 GPUs at 1 Hz <= 10% of one core, memory
//! bounded): this bench starts N simulated peers on loopback (WebSocket servers that speak the
//! protocol and send one 8-GPU frame per second each), a release `vramio hub` watching all of
//! them, and one viewer of the hub's overview; then it prints the hub's CPU (every thread's
//! on-CPU time from `/proc/<pid>/task/*/schedstat`) and RSS over a steady window.
//!
//! `cargo bench -p vramio --bench hub_load`; `VRAMIO_HUB_PEERS` (default 256),
//! `VRAMIO_HUB_SECS` (default 30). The peers and the viewer run in this process and are not counted.

use futures_util::{SinkExt, StreamExt};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// An 8-GPU frame from the golden fixture's first GPU, as the peer `name` would send it.
fn frame_template() -> shared::Frame {
    let fixture = include_str!("../../tests/fixtures/protocol/server-frame.json");
    let msg: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
    let mut frame: shared::Frame = serde_json::from_value(msg["frame"].clone()).expect("frame");
    let gpu = frame.gpus[0].clone();
    frame.gpus = (0..8)
        .map(|i| {
            let mut g = gpu.clone();
            g.index = i;
            g.uuid = format!("GPU-{i:08}-0000-0000-0000-000000000000");
            g
        })
        .collect();
    frame
}

/// One simulated peer: accepts WebSocket connections and streams a frame per second.
async fn peer(listener: tokio::net::TcpListener, name: String, sent: Arc<AtomicU64>) {
    let template = frame_template();
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
            continue;
        };
        let hello = shared::ServerMsg::hello(vec![name.clone()], 1000, "bench");
        if ws
            .send(Message::text(serde_json::to_string(&hello).expect("json")))
            .await
            .is_err()
        {
            continue;
        }
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut seq = 1u64;
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let mut f = template.clone();
                    f.seq = seq;
                    f.t_ms = 1_800_000_000_000 + seq * 1000;
                    f.host = name.clone();
                    seq += 1;
                    let msg = shared::ServerMsg::Frame { host: name.clone(), frame: Box::new(f) };
                    let text = serde_json::to_string(&msg).expect("json");
                    if ws.send(Message::text(text)).await.is_err() {
                        break;
                    }
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                incoming = ws.next() => if incoming.is_none() { break },
            }
        }
    }
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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
    std::fs::create_dir_all(&dir).expect("temp dir");
    let peers_file = dir.join("peers");
    let mut file = std::fs::File::create(&peers_file).expect("peers file");
    runtime.block_on(async {
        for i in 0..n {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = l.local_addr().expect("addr");
            writeln!(file, "ws://{addr}").expect("write");
            tokio::spawn(peer(l, format!("sim-{i}"), sent.clone()));
        }
    });
    drop(file);
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(["hub", "--port", "0", "--interval", "1s", "--peers"])
        .arg(&peers_file)
        .arg("--state-dir")
        .arg(dir.join("state"))
        .env("VRAMIO_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start vramio hub");
    let stdout = child.stdout.take().expect("stdout");
    let hub = Killed(child);
    let mut lines = BufReader::new(stdout).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.contains("/?token="))
                .map(str::to_owned)
        })
        .expect("the hub prints its URL");
    std::thread::spawn(move || for _ in lines {});
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
