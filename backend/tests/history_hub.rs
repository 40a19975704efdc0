//! A hub shows its peers' history (docs/hub.md#history): the range and a moment come from the
//! peer over the link the hub has, WebSocket and `vramio stream` over SSH (the real sshd the
//! tests start), and with the peer down the hub says so.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/fault_kit.rs"]
mod fault_kit;
#[path = "common/sshd.rs"]
mod sshd;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use fault_kit::admin;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use vramio_bin::{Server, TempDir, wait_for};

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The GPU memory points `s` answers for `host` (`None`: its own), once it has any.
async fn points(s: &Server, host: Option<&str>, from_ms: u64) -> Result<usize, String> {
    let host = host
        .map(|h| format!("host={}&", percent(h)))
        .unwrap_or_default();
    let path = format!(
        "/api/history?{host}from_ms={from_ms}&to_ms={}&points=2000&only=gpu:mem_used_bytes",
        now_ms() + 60_000
    );
    let r = admin(s, "GET", &path, "").await;
    if r.status != 200 {
        return Err(format!("{} {}", r.status, r.text()));
    }
    let v = r.json();
    Ok(v["series"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(|x| x["points"].as_array().map(Vec::len))
        .unwrap_or(0))
}

fn token(dir: &TempDir) -> String {
    let token = dir.join("peer.token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef0123456789abcdef").expect("token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    token.to_string_lossy().into_owned()
}

/// A peer `serve` with some history committed.
async fn peer_with_history(dir: &TempDir, token: &str) -> (Server, std::path::PathBuf, u64) {
    let script = dir.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let state = dir.join("peer");
    let from = now_ms() - 5_000;
    let peer = Server::start(&state, &script, &["--port", "0", "--token-file", token]);
    wait_for(
        Duration::from_secs(30),
        "the peer's first commit",
        || async { points(&peer, None, from).await.ok().filter(|n| *n > 0) },
    )
    .await;
    (peer, script, from)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_reads_a_ws_peers_history_and_says_when_the_peer_is_down() {
    let dir = TempDir::new("history-hub-ws");
    let t = token(&dir);
    let (peer, script, from) = peer_with_history(&dir, &t).await;
    let name = peer.authority().to_owned();
    let hub = Server::start_command(
        "hub",
        &dir.join("hub"),
        &script,
        &[
            "--port",
            "0",
            "--peer-token-file",
            &t,
            &format!("ws://{name}"),
        ],
    );
    let n = wait_for(
        Duration::from_secs(20),
        "the peer's history through the hub",
        || async {
            points(&hub, Some(&name), from)
                .await
                .ok()
                .filter(|n| *n > 0)
        },
    )
    .await;
    let own = points(&peer, None, from).await.expect("the peer's own");
    assert!(n <= own + 20 && n + 20 >= own, "hub {n}, peer {own}");

    let r = admin(
        &hub,
        "GET",
        &format!(
            "/api/history/moment?host={}&t_ms={}",
            percent(&name),
            now_ms()
        ),
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let m: shared::stored::Moment = serde_json::from_slice(&r.body).expect("a moment");
    assert_eq!(m.frame.gpus.len(), 1);

    // The hub's own page has no history of its own for a host it does not serve.
    let r = admin(&hub, "GET", "/api/history?host=nope&from_ms=0&to_ms=1", "").await;
    assert_eq!(r.status, 404, "{}", r.text());

    drop(peer);
    let r = wait_for(
        Duration::from_secs(30),
        "the hub saying the peer is down",
        || async {
            let path = format!(
                "/api/history?host={}&from_ms={}&to_ms={}",
                percent(&name),
                from + 1,
                now_ms()
            );
            let r = admin(&hub, "GET", &path, "").await;
            (r.status == 502).then_some(r)
        },
    )
    .await;
    let v = r.json();
    assert_eq!(v["error"], "peer_down", "{v}");
    assert!(
        v["message"].as_str().is_some_and(|m| m.contains(&name)),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_reads_an_ssh_peers_history_through_vramio_stream() {
    if !sshd::available() {
        return;
    }
    let sshd = sshd::Sshd::start("history-hub-ssh");
    let dir = TempDir::new("history-hub-ssh");
    let t = token(&dir);
    let (_peer, script, from) = peer_with_history(&dir, &t).await;
    // The far side's `vramio stream` relays the running serve of that state directory.
    let remote = format!(
        "env VRAMIO_STATE_DIR={} VRAMIO_TOKEN_FILE={t} {} stream",
        dir.join("peer").display(),
        env!("CARGO_BIN_EXE_vramio"),
    );
    let ssh_config = sshd.client_config.to_string_lossy().into_owned();
    let hub = Server::start_command(
        "hub",
        &dir.join("hub"),
        &script,
        &[
            "--port",
            "0",
            "--ssh-config",
            &ssh_config,
            "--remote-command",
            &remote,
            "ssh://testpeer",
        ],
    );
    let n = wait_for(
        Duration::from_secs(30),
        "the ssh peer's history",
        || async {
            points(&hub, Some("ssh://testpeer"), from)
                .await
                .ok()
                .filter(|n| *n > 0)
        },
    )
    .await;
    assert!(n > 0);
}
