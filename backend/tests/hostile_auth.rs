//! Hostile credentials against a live server (issue 7): 10,000 bad tokens and malformed share ids
//! (huge, non-UTF-8, `../`, `:key`-style placeholders) each get 401 or 404, and an authorised
//! viewer's frames keep arriving, in order and without a gap. The rate, the process' memory and
//! the viewer's worst wait are printed, not asserted: they measure the machine as much as the
//! server (the soak bench watches memory under load).

use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use shared::{Frame, ServerMsg};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use vramio::access::shares::Shares;
use vramio::access::state_dir::StateDir;
use vramio::access::token::Token;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::auth::Auth;
use vramio::http::same_origin::HostPolicy;
use vramio::http::{AppState, app};

const TOKEN: &str = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";
const ATTEMPTS: usize = 10_000;
const TICK: Duration = Duration::from_millis(100);

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The `i`-th hostile request: path, and headers as raw bytes.
fn hostile(i: usize) -> (String, Vec<(&'static str, Vec<u8>)>) {
    let junk_token = format!("{:064x}", i as u128 * 0x9e37_79b9_7f4a_7c15);
    match i % 10 {
        0 => (
            "/api/snapshot".into(),
            vec![("authorization", format!("Bearer {junk_token}").into_bytes())],
        ),
        1 => (
            "/api/shares".into(),
            vec![(
                "authorization",
                format!("Bearer {}", "A".repeat(8000)).into_bytes(),
            )],
        ),
        2 => (
            "/api/health".into(),
            vec![("authorization", b"Bearer \xff\xfe\xfd".to_vec())],
        ),
        3 => (format!("/?token={junk_token}"), vec![]),
        4 => (format!("/s/{}", "Z".repeat(3000 + i % 100)), vec![]),
        5 => ("/s/..%2F..%2Fstate%2Ftoken".into(), vec![]),
        6 => ("/s/:id".into(), vec![]),
        7 => ("/s/%ff%00%c0%af".into(), vec![]),
        8 => (
            "/api/session".into(),
            vec![(
                "cookie",
                format!("vramio-7575-view={}.{}", "x".repeat(22), "y".repeat(43)).into_bytes(),
            )],
        ),
        _ => (
            "/api/snapshot".into(),
            vec![(
                "cookie",
                b"vramio-7575=\xff\xff; vramio-7575-view=../../x".to_vec(),
            )],
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_bad_credentials_change_nothing_for_a_real_viewer() {
    let root = std::env::temp_dir().join(format!("vramio-hostile-auth-{}", std::process::id()));
    let dir = StateDir::open(Some(&root)).expect("state dir");
    let hub = HostFeed::new("testhost", TICK, HostFeedConfig::for_interval(TICK));
    let auth = Auth::new(
        Some(Token::from_trusted(TOKEN)),
        Shares::open(dir),
        false,
        HostPolicy::loopback_only(),
        None,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = app(AppState::new(hub.clone(), auth));
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    let publisher = {
        let hub = hub.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(TICK);
            for t in 0.. {
                tick.tick().await;
                let _ = hub.publish(Frame::empty(
                    "testhost",
                    0,
                    1_700_000_000_000 + t * 100,
                    100,
                ));
            }
        })
    };

    // The authorised viewer.
    let mut req = format!("ws://{addr}/ws?since_seq=0")
        .into_client_request()
        .expect("request");
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {TOKEN}").parse().expect("header"),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .expect("viewer connects");
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let viewer = tokio::spawn(async move {
        let mut seqs: Vec<u64> = Vec::new();
        let mut worst_gap = Duration::ZERO;
        let mut last: Option<Instant> = None;
        let mut lagged = 0u32;
        loop {
            let msg = tokio::select! {
                _ = &mut stopped => break,
                msg = ws.next() => msg,
            };
            let Some(Ok(msg)) = msg else { break };
            let Ok(text) = msg.into_text() else { continue };
            match serde_json::from_str::<ServerMsg>(text.as_str()) {
                Ok(ServerMsg::Frame { frame, .. }) => {
                    if let Some(at) = last {
                        worst_gap = worst_gap.max(at.elapsed());
                    }
                    last = Some(Instant::now());
                    seqs.push(frame.seq);
                }
                Ok(ServerMsg::Lagged { .. }) => lagged += 1,
                _ => {}
            }
        }
        (seqs, worst_gap, lagged)
    });

    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib();
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut bad = Vec::new();
            for i in (worker..ATTEMPTS).step_by(8) {
                let (path, headers) = hostile(i);
                let mut req = hyper::Request::get(format!("http://{addr}{path}"))
                    .header("host", "127.0.0.1:7575");
                for (k, v) in headers {
                    req = req.header(
                        k,
                        hyper::header::HeaderValue::from_bytes(&v).expect("bytes"),
                    );
                }
                let resp = client
                    .request(req.body(Full::new(Bytes::new())).expect("req"))
                    .await;
                match resp {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let _ = r.into_body().collect().await;
                        if status != 401 && status != 404 {
                            bad.push(format!("{path}: {status}"));
                        }
                    }
                    Err(e) => bad.push(format!("{path}: {e}")),
                }
            }
            bad
        }));
    }
    let mut bad = Vec::new();
    for t in tasks {
        bad.extend(t.await.expect("worker"));
    }
    let took = started.elapsed();
    let after = rss_kib();
    // Let the viewer take a few more frames, then stop it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = stop.send(());
    let (seqs, worst_gap, lagged) = viewer.await.expect("viewer");
    publisher.abort();
    eprintln!(
        "{ATTEMPTS} hostile requests in {:.2} s ({:.0}/s); RSS {before} -> {after} KiB; \
         viewer: {} frames, worst gap {} ms",
        took.as_secs_f64(),
        ATTEMPTS as f64 / took.as_secs_f64(),
        seqs.len(),
        worst_gap.as_millis()
    );
    assert!(
        bad.is_empty(),
        "not 401/404: {:?}",
        &bad[..bad.len().min(10)]
    );
    assert_eq!(lagged, 0, "the viewer never lagged");
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "frames arrive in order, none missing"
    );
    assert!(
        seqs.len() >= 2,
        "{} frames: the viewer's stream went on through the flood",
        seqs.len()
    );
    let _ = std::fs::remove_dir_all(root);
}
