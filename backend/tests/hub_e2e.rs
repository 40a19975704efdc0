//! `vramio hub` end to end: two real `vramio serve` peers over WebSocket (one token file for
//! both), one hub, one WebSocket viewer of the hub. Every host's summary and frames arrive under
//! the peer's name with the hub's own increasing seq; killing one peer marks it down with its
//! reason while the other keeps flowing.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/sshd.rs"]
mod sshd;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use futures_util::StreamExt;
use shared::{HostState, ServerMsg};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use vramio_bin::{Server, TempDir};

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next(ws: &mut Ws) -> ServerMsg {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message in time")
            .expect("open")
            .expect("ok");
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).expect("a server message");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_shows_two_serves_and_says_why_one_went_down() {
    let dir = TempDir::new("hub-e2e");
    let script = dir.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let token = dir.join("peer.token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef0123456789abcdef").expect("token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let token_arg = token.to_string_lossy().into_owned();
    let peer_a = Server::start(
        &dir.join("a"),
        &script,
        &[
            "--port",
            "0",
            "--token-file",
            &token_arg,
            "--name",
            "same-name",
        ],
    );
    let peer_b = Server::start(
        &dir.join("b"),
        &script,
        &[
            "--port",
            "0",
            "--token-file",
            &token_arg,
            "--name",
            "same-name",
        ],
    );
    let a = format!("ws://{}", peer_a.authority());
    let b = format!("ws://{}", peer_b.authority());
    let hub = Server::start_command(
        "hub",
        &dir.join("hub"),
        &script,
        &["--port", "0", "--peer-token-file", &token_arg, &a, &b],
    );
    let mut req = format!("ws://{}/ws", hub.authority())
        .into_client_request()
        .expect("request");
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", hub.token()).parse().expect("header"),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .expect("connect to the hub");
    let ServerMsg::Hello { hosts, .. } = next(&mut ws).await else {
        panic!("hello first");
    };
    let names = vec![peer_a.authority().to_owned(), peer_b.authority().to_owned()];
    assert_eq!(hosts, names, "hosts are named by the peer as given");

    // Both up, both streaming, each with the hub's own increasing seq; the same reported
    // hostname does not merge them.
    let mut seqs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut up: BTreeMap<String, String> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while (up.len() < 2 || seqs.values().filter(|s| s.len() >= 4).count() < 2)
        && Instant::now() < deadline
    {
        match next(&mut ws).await {
            ServerMsg::Summary { host, summary } if summary.state == HostState::Up => {
                up.insert(host, summary.hostname.clone().unwrap_or_default());
            }
            ServerMsg::Frame { host, frame } => seqs.entry(host).or_default().push(frame.seq),
            ServerMsg::Backfill { host, frames } => seqs
                .entry(host)
                .or_default()
                .extend(frames.iter().map(|f| f.seq)),
            _ => {}
        }
    }
    assert_eq!(up.len(), 2, "both peers up: {up:?}");
    assert!(up.values().all(|h| h == "same-name"), "{up:?}");
    for (host, s) in &seqs {
        assert!(s.len() >= 4, "{host}: {s:?}");
        assert!(s.windows(2).all(|w| w[1] == w[0] + 1), "{host}: {s:?}");
    }

    // Kill one: it goes down with a reason, the other keeps flowing.
    let killed = peer_b.authority().to_owned();
    drop(peer_b);
    let started = Instant::now();
    let mut reason = None;
    let mut other_frames = 0;
    while (reason.is_none() || other_frames < 3) && started.elapsed() < Duration::from_secs(20) {
        match next(&mut ws).await {
            ServerMsg::Summary { host, summary }
                if host == killed && summary.state == HostState::Down =>
            {
                reason = summary.error.clone();
            }
            ServerMsg::Frame { host, .. } if host == names[0] => other_frames += 1,
            _ => {}
        }
    }
    let reason = reason.expect("the killed peer is down");
    eprintln!("down after {} ms: {reason}", started.elapsed().as_millis());
    assert!(
        reason.contains("refused") || reason.contains("closed") || reason.contains("lost"),
        "{reason}"
    );
    assert!(other_frames >= 3, "the other peer kept flowing");
    drop(peer_a);
    drop(hub);
}

/// Frames per host seen on `ws` until `done` says enough (or 30 s pass).
async fn collect(
    ws: &mut Ws,
    seqs: &mut BTreeMap<String, Vec<u64>>,
    states: &mut BTreeMap<String, (HostState, Option<String>)>,
    done: impl Fn(&BTreeMap<String, Vec<u64>>, &BTreeMap<String, (HostState, Option<String>)>) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(seqs, states) {
        assert!(Instant::now() < deadline, "timed out: {states:?}");
        match next(ws).await {
            ServerMsg::Summary { host, summary } => {
                states.insert(host, (summary.state, summary.error.clone()));
            }
            ServerMsg::Frame { host, frame } => seqs.entry(host).or_default().push(frame.seq),
            ServerMsg::Backfill { host, frames } => seqs
                .entry(host)
                .or_default()
                .extend(frames.iter().map(|f| f.seq)),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_serves_and_an_ssh_peer_in_one_hub() {
    if !sshd::available() {
        return;
    }
    let sshd = sshd::Sshd::start("hub-e2e");
    let dir = TempDir::new("hub-e2e-4");
    let script = dir.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let token = dir.join("peer.token");
    std::fs::write(
        &token,
        "00112233445566778899aabbccddeeff00112233445566778899",
    )
    .expect("token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let t = token.to_string_lossy().into_owned();
    let start_serve = |name: &str, port: &str| {
        Server::start(
            &dir.join(name),
            &script,
            &["--port", port, "--token-file", &t],
        )
    };
    let serves = vec![
        start_serve("a", "0"),
        start_serve("b", "0"),
        start_serve("c", "0"),
    ];
    let remote = format!(
        "env {}={} {} stream --no-relay --nvml-lib {} --interval 250ms",
        fake_nvml::SCRIPT_ENV,
        script.display(),
        env!("CARGO_BIN_EXE_vramio"),
        fake_nvml::fake_nvml_path().display()
    );
    let ssh_config = sshd.client_config.to_string_lossy().into_owned();
    let mut args: Vec<String> = [
        "--port",
        "0",
        "--peer-token-file",
        &t,
        "--ssh-config",
        &ssh_config,
        "--remote-command",
        &remote,
        "ssh://testpeer",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(serves.iter().map(|s| format!("ws://{}", s.authority())));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let hub = Server::start_command("hub", &dir.join("hub"), &script, &args);
    let mut req = format!("ws://{}/ws", hub.authority())
        .into_client_request()
        .expect("request");
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", hub.token()).parse().expect("header"),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .expect("connect");
    let ServerMsg::Hello { hosts, .. } = next(&mut ws).await else {
        panic!("hello first");
    };
    assert_eq!(hosts.len(), 4);
    assert_eq!(hosts[0], "ssh://testpeer");
    let mut seqs = BTreeMap::new();
    let mut states = BTreeMap::new();
    collect(&mut ws, &mut seqs, &mut states, |s, _| {
        s.len() == 4 && s.values().all(|v| v.len() >= 4)
    })
    .await;
    for (host, s) in &seqs {
        assert!(s.windows(2).all(|w| w[1] == w[0] + 1), "{host}: {s:?}");
    }

    // Kill one serve: down with its reason while the others (the ssh peer too) flow.
    let killed = serves[1].authority().to_owned();
    let port = serves[1].port().to_string();
    let mut serves = serves;
    drop(serves.remove(1));
    let before: BTreeMap<String, usize> = seqs.iter().map(|(h, s)| (h.clone(), s.len())).collect();
    let t0 = Instant::now();
    collect(&mut ws, &mut seqs, &mut states, |s, st| {
        st.get(&killed)
            .is_some_and(|(state, _)| *state == HostState::Down)
            && s.iter()
                .filter(|(h, _)| **h != killed)
                .all(|(h, v)| v.len() >= before[h] + 3)
    })
    .await;
    eprintln!(
        "down after {} ms: {:?}",
        t0.elapsed().as_millis(),
        states[&killed]
    );

    // Restart it on the same port: up again, and the hub's seq for it goes on without a jump.
    let _back = start_serve("b", &port);
    let held = seqs[&killed].len();
    collect(&mut ws, &mut seqs, &mut states, |s, st| {
        st.get(&killed)
            .is_some_and(|(state, _)| *state == HostState::Up)
            && s[&killed].len() >= held + 3
    })
    .await;
    let s = &seqs[&killed];
    assert!(
        s.windows(2).all(|w| w[1] == w[0] + 1),
        "the hub's seq never jumps: {s:?}"
    );
    drop(hub);
}
