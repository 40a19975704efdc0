//! What the hub benches share: simulated peers (WebSocket servers that speak the protocol and send
//! one 8-GPU frame per second), a release `vramio hub` watching them, and /proc figures.
#![allow(dead_code, reason = "each bench uses what it needs")]

use futures_util::{SinkExt, StreamExt};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

pub fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// An 8-GPU frame from the golden fixture's first GPU, as the peer `name` would send it.
pub fn frame_template() -> shared::Frame {
    let fixture = include_str!("../../../tests/fixtures/protocol/server-frame.json");
    let msg: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
    let mut frame: shared::Frame = serde_json::from_value(msg["frame"].clone()).expect("frame");
    let gpu = frame.gpus[0].clone();
    frame.gpus = (0..8)
        .map(|i| {
            let mut g = gpu.clone();
            g.index = i;
            g.uuid = Some(format!("GPU-{i:08}-0000-0000-0000-000000000000"));
            g
        })
        .collect();
    frame
}

/// One simulated peer named `name` (its `hello`'s `instance` too) that counts the frames it sent.
pub async fn peer(listener: tokio::net::TcpListener, name: String, sent: Arc<AtomicU64>) {
    let me = SimPeer {
        instance: name.clone(),
        name,
        sent,
        hellos: Arc::default(),
    };
    serve(listener, me).await;
}

/// Who a simulated peer is: the host it serves, its start (`hello`'s `instance`: another one
/// tells the hub the peer started over), the frames it sent and the `hello`s it said.
#[derive(Clone)]
pub struct SimPeer {
    pub name: String,
    pub instance: String,
    pub sent: Arc<AtomicU64>,
    /// Counts connections greeted: the hub (re)connected.
    pub hellos: Arc<AtomicU64>,
}

/// Accepts WebSocket connections one at a time and streams a frame per second to each. Frames
/// are numbered on from the last connection's, as a server's are: a hub that reconnects to the
/// same start resumes without taking new frames for old ones.
pub async fn serve(listener: tokio::net::TcpListener, me: SimPeer) {
    let template = frame_template();
    let name = me.name;
    let mut seq = 1u64;
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
            continue;
        };
        let hello = shared::ServerMsg::hello(vec![name.clone()], 1000, "bench", &me.instance);
        if ws
            .send(Message::text(serde_json::to_string(&hello).expect("json")))
            .await
            .is_err()
        {
            continue;
        }
        me.hellos.fetch_add(1, Ordering::Relaxed);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
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
                    me.sent.fetch_add(1, Ordering::Relaxed);
                }
                incoming = ws.next() => if incoming.is_none() { break },
            }
        }
    }
}

pub struct Killed(pub Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `n` simulated peers on `runtime` and a `vramio hub` watching them: the hub process and the
/// URL it printed (with its token). `sent` counts the frames the peers sent.
pub fn start_fleet(
    runtime: &tokio::runtime::Runtime,
    n: usize,
    dir: &std::path::Path,
    sent: Arc<AtomicU64>,
) -> (Killed, String) {
    let addrs: Vec<std::net::SocketAddr> = runtime.block_on(async {
        let mut addrs = Vec::with_capacity(n);
        for i in 0..n {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            addrs.push(l.local_addr().expect("addr"));
            tokio::spawn(peer(l, format!("sim-{i}"), sent.clone()));
        }
        addrs
    });
    start_hub(&addrs, dir)
}

/// A release `vramio hub` (1 s interval, port 0, state in `dir`) watching `ws://` peers at
/// `addrs`: the process and the URL it printed (with its token). It logs at `warn`, or as
/// `VRAMIO_BENCH_HUB_LOG` says (a `VRAMIO_LOG` filter), to this process' stderr.
pub fn start_hub(addrs: &[std::net::SocketAddr], dir: &std::path::Path) -> (Killed, String) {
    std::fs::create_dir_all(dir).expect("temp dir");
    let peers_file = dir.join("peers");
    let mut file = std::fs::File::create(&peers_file).expect("peers file");
    for addr in addrs {
        writeln!(file, "ws://{addr}").expect("write");
    }
    drop(file);
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(["hub", "--port", "0", "--interval", "1s", "--peers"])
        .arg(&peers_file)
        .arg("--state-dir")
        .arg(dir.join("state"))
        .env(
            "VRAMIO_LOG",
            std::env::var("VRAMIO_BENCH_HUB_LOG").unwrap_or_else(|_| "warn".into()),
        )
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
    (hub, url)
}
