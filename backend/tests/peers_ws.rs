//! WebSocket peers end to end: real `vramio serve` processes (fake NVML, tokens in temp state
//! dirs, loopback only), each watched by `peers::life::supervise` with the `WsLink` that
//! `peers::link_for` makes, feeding a real `vramio::host_feed::HostFeed` per peer. Kills, restarts, cut
//! connections, SIGSTOP, wrong tokens, misbehaving fake peers and wss with `--peer-ca`.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/peer_kit.rs"]
mod peer_kit;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use peer_kit::{Fake, INTERVAL, Proxy, Watched, fake_peer, gaps, recording_peer, rss_bytes};
use shared::HostState;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vramio::peers::life::BACKOFF_START;
use vramio_bin::{Server, TempDir};

/// Generous bound for things that take a few intervals.
const SOON: Duration = Duration::from_secs(10);

/// A temp dir with a state dir and a fake-NVML script for one serve.
struct Host {
    tmp: TempDir,
    state: PathBuf,
    script: PathBuf,
}

impl Host {
    fn new(what: &str) -> Host {
        let tmp = TempDir::new(what);
        let state = tmp.join("state");
        let script = tmp.join("gpu.json");
        std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
        Host { tmp, state, script }
    }
    fn serve(&self, args: &[&str]) -> Server {
        Server::start(&self.state, &self.script, args)
    }
    /// The token file the serve made in its state dir (0600).
    fn token(&self) -> Option<PathBuf> {
        Some(self.state.join("token"))
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn signal(s: &Server, sig: rustix::process::Signal) {
    let pid = i32::try_from(s.pid())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .expect("a pid");
    rustix::process::kill_process(pid, sig).expect("signal");
}

/// The hub's own seqs are 1, 2, 3, ... whatever the peer did.
fn assert_hub_seqs_step_by_one(w: &Watched) {
    let seqs = w.hub_seqs();
    assert!(!seqs.is_empty(), "no frames");
    assert_eq!(gaps(&seqs), vec![], "hub seqs {seqs:?}");
    assert_eq!(seqs[0], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_serves_stream_and_a_killed_one_goes_down_and_comes_back() {
    let hosts = [Host::new("p1"), Host::new("p2"), Host::new("p3")];
    let port3 = free_port();
    let s1 = hosts[0].serve(&["--port", "0"]);
    let s2 = hosts[1].serve(&["--port", "0"]);
    let s3 = hosts[2].serve(&["--port", &port3.to_string()]);
    let peer = |s: &Server| format!("ws://{}", s.authority());
    let w: Vec<Watched> = [(&s1, 0), (&s2, 1), (&s3, 2)]
        .iter()
        .map(|(s, i)| Watched::start(&peer(s), hosts[*i].token(), None))
        .collect();
    for x in &w {
        x.more_frames(4, SOON).await;
        assert_eq!(x.status().0, HostState::Up);
        assert_hub_seqs_step_by_one(x);
        assert_eq!(
            gaps(&x.remote_seqs()),
            vec![],
            "one run of a serve has no gap"
        );
    }
    assert_eq!(w[2].tap.hub.host(), format!("127.0.0.1:{port3}"));

    let before = [w[0].frames(), w[1].frames()];
    let killed = Instant::now();
    drop(s3);
    // A killed serve's socket closes at once: the link ends, and the next try is refused.
    let why = w[2]
        .until(
            HostState::Down,
            "connection refused",
            INTERVAL * 3 + BACKOFF_START * 2,
        )
        .await;
    println!("down after {:?}: {why}", killed.elapsed());
    let seen_before_restart = w[2].remote_seqs();
    for (x, n) in w.iter().zip(before) {
        let more = x.frames() - n;
        assert!(
            more >= 2,
            "{} got only {more} frames meanwhile",
            x.tap.hub.host()
        );
        assert_eq!(x.status().0, HostState::Up);
    }

    let s3 = hosts[2].serve(&["--port", &port3.to_string()]);
    w[2].until(HostState::Up, "", Duration::from_secs(20)).await;
    w[2].more_frames(4, SOON).await;
    let seqs = w[2].remote_seqs();
    let after = &seqs[seen_before_restart.len()..];
    assert!(
        after[0] > *seen_before_restart.last().expect("frames"),
        "the restarted serve's seqs go on increasing: {seqs:?}"
    );
    assert_eq!(
        gaps(after),
        vec![],
        "the restarted run has no gap: {after:?}"
    );
    assert_hub_seqs_step_by_one(&w[2]);
    drop((s1, s2, s3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_connection_resumes_without_a_gap() {
    let host = Host::new("cut");
    let s = host.serve(&["--port", "0"]);
    let proxy = Proxy::start(s.authority().to_owned()).await;
    let w = Watched::start(
        &format!("ws://127.0.0.1:{}", proxy.port),
        host.token(),
        None,
    );
    w.more_frames(4, SOON).await;
    let before = w.frames();
    // Six intervals without a connection: those frames can only come back by resuming.
    proxy.cut(INTERVAL * 6).await;
    w.until(HostState::Up, "", SOON).await;
    w.more_frames(8, SOON).await;
    let seqs = w.remote_seqs();
    assert!(!w.downs().is_empty(), "the cut took the link down");
    assert_eq!(gaps(&seqs), vec![], "resumed with since_seq: {seqs:?}");
    assert!(seqs.len() > before + 8);
    assert_hub_seqs_step_by_one(&w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_goes_only_in_the_header_and_a_reconnect_subscribes_after_the_last_seq() {
    let tmp = TempDir::new("rec");
    let token = tmp.join("token");
    let secret = "s3cr3t-".repeat(6);
    std::fs::write(&token, &secret).expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (port, seen) = recording_peer().await;
    let w = Watched::start(&format!("ws://127.0.0.1:{port}"), Some(token), None);
    // The peer hangs up after each frame; the second connection comes after the backoff.
    let seen = vramio_bin::wait_for(Duration::from_secs(10), "two connections", || {
        let got = seen.lock().map(|s| s.clone()).unwrap_or_default();
        async move { (got.len() >= 2).then_some(got) }
    })
    .await;
    for s in &seen {
        assert_eq!(s.uri, "/ws", "no credential in the URL");
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {secret}").as_str())
        );
    }
    let first: serde_json::Value = serde_json::from_str(&seen[0].first_message).expect("JSON");
    let second: serde_json::Value = serde_json::from_str(&seen[1].first_message).expect("JSON");
    assert_eq!(first["type"], "subscribe", "subscribe is sent first");
    assert!(first["since_seq"].is_null(), "{first}");
    assert_eq!(
        second["since_seq"], 100,
        "resumes after the last frame: {second}"
    );
    assert!(
        w.downs().iter().all(|d| !d.contains(&secret)),
        "{:?}",
        w.downs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_serve_goes_stale_then_down_and_a_wrong_token_is_unauthorized() {
    let (a, b) = (Host::new("stop"), Host::new("other"));
    let sa = a.serve(&["--port", "0"]);
    let sb = b.serve(&["--port", "0"]);
    let wa = Watched::start(&format!("ws://{}", sa.authority()), a.token(), None);
    let wb = Watched::start(&format!("ws://{}", sb.authority()), b.token(), None);
    wa.more_frames(4, SOON).await;
    wb.more_frames(4, SOON).await;

    let wrong = a.tmp.join("wrong-token");
    std::fs::write(&wrong, "0".repeat(64)).expect("write");
    std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let bad = Watched::start(&format!("ws://{}", sb.authority()), Some(wrong), None);
    let why = bad.until(HostState::Down, "unauthorized", SOON).await;
    assert_eq!(bad.frames(), 0, "{why}");
    let none = Watched::start(&format!("ws://{}", sb.authority()), None, None);
    none.until(HostState::Down, "unauthorized: no token", SOON)
        .await;

    let rss = rss_bytes();
    let stopped = Instant::now();
    signal(&sa, rustix::process::Signal::STOP);
    wa.until(
        HostState::Stale,
        "no frame for",
        INTERVAL * 3 + Duration::from_secs(2),
    )
    .await;
    println!("stale after {:?}", stopped.elapsed());
    wb.more_frames(8, SOON).await;
    let why = wa
        .until(HostState::Down, "no data for 10 s", Duration::from_secs(20))
        .await;
    println!("down after {:?}: {why}", stopped.elapsed());
    let grown = rss_bytes().saturating_sub(rss);
    println!(
        "RSS {} MiB, grown {} KiB while stopped",
        rss >> 20,
        grown >> 10
    );
    assert!(grown < 64 << 20, "memory grew by {grown} bytes");

    let seen = wa.frames();
    signal(&sa, rustix::process::Signal::CONT);
    wa.until(HostState::Up, "", Duration::from_secs(20)).await;
    wa.more_frames(4, SOON).await;
    assert_eq!(
        gaps(&wa.remote_seqs()),
        vec![],
        "the stopped serve kept its history"
    );
    assert!(wa.frames() > seen);
    drop((sa, sb));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_huge_messages_are_protocol_errors_and_others_flow() {
    let host = Host::new("good");
    let s = host.serve(&["--port", "0"]);
    let good = Watched::start(&format!("ws://{}", s.authority()), host.token(), None);
    good.more_frames(2, SOON).await;
    let mut fakes = Vec::new();
    for how in [Fake::Garbage, Fake::RawBytes, Fake::Huge, Fake::Endless] {
        let port = fake_peer(how).await;
        fakes.push((
            how,
            Watched::start(&format!("ws://127.0.0.1:{port}"), None, None),
        ));
    }
    let rss = rss_bytes();
    for (how, w) in &fakes {
        let why = w.until(HostState::Down, "protocol error", SOON).await;
        println!("{how:?}: {why}");
        if matches!(how, Fake::Huge | Fake::Endless) {
            assert!(why.contains("message too large"), "{how:?}: {why}");
        }
    }
    let before = good.frames();
    good.more_frames(8, SOON).await;
    assert_eq!(good.status().0, HostState::Up);
    assert_eq!(gaps(&good.remote_seqs()), vec![]);
    assert!(good.frames() >= before + 8);
    let grown = rss_bytes().saturating_sub(rss);
    println!("RSS grew {} MiB against the fakes", grown >> 20);
    assert!(
        grown < 200 << 20,
        "a 100 MB message was buffered: +{grown} bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_trusts_the_peer_ca_and_names_tls_errors() {
    let host = Host::new("tls");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("cert");
    let (cert, key) = (host.tmp.join("cert.pem"), host.tmp.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).expect("write cert");
    std::fs::write(&key, ck.signing_key.serialize_pem()).expect("write key");
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("cert");
    let other_ca = host.tmp.join("other.pem");
    std::fs::write(&other_ca, other.cert.pem()).expect("write");
    let (c, k) = (cert.to_str().expect("UTF-8"), key.to_str().expect("UTF-8"));
    let s = host.serve(&["--port", "0", "--tls-cert", c, "--tls-key", k]);
    let port = s.port();

    let w = Watched::start(
        &format!("wss://localhost:{port}"),
        host.token(),
        Some(cert.clone()),
    );
    w.more_frames(4, SOON).await;
    assert_eq!(w.status().0, HostState::Up);
    assert_eq!(w.tap.hub.host(), format!("localhost:{port}"));

    let wrong_ca = Watched::start(
        &format!("wss://localhost:{port}"),
        host.token(),
        Some(other_ca),
    );
    let why = wrong_ca.until(HostState::Down, "TLS error", SOON).await;
    assert!(why.contains("invalid peer certificate"), "{why}");
    let wrong_name = Watched::start(&format!("wss://127.0.0.1:{port}"), host.token(), Some(cert));
    let why = wrong_name.until(HostState::Down, "TLS error", SOON).await;
    assert!(why.contains("not valid for name"), "{why}");
    let plain = Watched::start(&format!("ws://localhost:{port}"), host.token(), None);
    plain.until(HostState::Down, "", SOON).await;
    assert_eq!(plain.frames(), 0);
    drop(s);
}
