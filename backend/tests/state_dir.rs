//! One server per state directory: a second `serve`, `hub` or `replay` on a directory a server
//! holds is refused, naming that server (pid, command, URL) and `--state-dir`, and leaves the
//! first one's `server.json`, token and share links alone; `vramio stream` relays a live `serve`
//! of this host and nothing else (a replay's recorded frames are not live data).

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use shared::Frame;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use vramio_bin::{Server, TempDir, run};

fn recording(dir: &TempDir) -> String {
    let path = dir.join("run.ndjson");
    let mut text = String::new();
    for i in 0..20u64 {
        let frame = Frame::empty("recorded-host", i + 1, 1_700_000_000_000 + i * 1000, 1000);
        text.push_str(&serde_json::to_string(&frame).expect("frame"));
        text.push('\n');
    }
    std::fs::write(&path, text).expect("recording");
    path.to_string_lossy().into_owned()
}

#[test]
fn a_second_server_on_one_state_directory_is_refused_naming_the_first() {
    let tmp = TempDir::new("state-lock");
    let state = tmp.join("state");
    let state_s = state.to_string_lossy().into_owned();
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let first = Server::start(&state, script.path(), &["--port", "0"]);
    let server_json = std::fs::read(state.join("server.json")).expect("server.json");
    let token = std::fs::read(state.join("token")).expect("token");
    let rec = recording(&tmp);
    for args in [
        vec!["serve", "--port", "0", "--state-dir", &state_s],
        vec![
            "hub",
            "ws://127.0.0.1:9",
            "--port",
            "0",
            "--state-dir",
            &state_s,
        ],
        vec!["replay", &rec, "--port", "0", "--state-dir", &state_s],
    ] {
        let second = run(&args);
        assert!(!second.ok(), "{args:?}: {second:?}");
        let said = &second.stderr;
        for part in [
            first.pid().to_string().as_str(),
            "vramio serve",
            first.base(),
            "--state-dir",
            state_s.as_str(),
        ] {
            assert!(said.contains(part), "{args:?} names {part:?}: {said}");
        }
    }
    assert_eq!(
        std::fs::read(state.join("server.json")).expect("still there"),
        server_json,
        "the refused servers left the first one's server.json alone"
    );
    assert_eq!(std::fs::read(state.join("token")).expect("token"), token);
    let url = run(&["url", "--state-dir", &state_s]);
    assert!(url.ok(), "{url:?}");
    assert!(url.last_line().starts_with(first.base()), "{url:?}");

    // Once the first has stopped, the directory is free.
    let _ = first.terminate();
    let again = Server::start(&state, script.path(), &["--port", "0"]);
    assert_eq!(
        std::fs::read(state.join("token")).expect("token"),
        token,
        "the same token"
    );
    drop(again);
}

/// `vramio stream` beside a `vramio replay` of the same state directory does not pipe the
/// replay's recorded frames as this host's live data: it samples, and says why.
#[test]
fn stream_relays_a_live_serve_only() {
    let tmp = TempDir::new("relay-replay");
    let state = tmp.join("state");
    let state_s = state.to_string_lossy().into_owned();
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let rec = recording(&tmp);
    let _replay = Server::start_command("replay", &state, script.path(), &[&rec, "--port", "0"]);
    let fake = fake_nvml::fake_nvml_path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args([
            "stream",
            "--state-dir",
            &state_s,
            "--interval",
            "250ms",
            "--nvml-lib",
        ])
        .arg(&fake)
        .env(fake_nvml::SCRIPT_ENV, script.path())
        .env("VRAMIO_LOG", "info")
        .env_remove("VRAMIO_STATE_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vramio stream");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut hosts = Vec::new();
    for _ in 0..6 {
        let line = lines.next().expect("a line").expect("text");
        let msg: shared::ServerMsg = serde_json::from_str(&line).expect("protocol");
        match msg {
            shared::ServerMsg::Hello { hosts: h, .. } => hosts = h,
            shared::ServerMsg::Frame { frame, .. } => {
                assert_ne!(frame.host, "recorded-host", "a recorded frame was relayed");
            }
            _ => {}
        }
    }
    assert!(!hosts.iter().any(|h| h == "recorded-host"), "{hosts:?}");
    drop(child.stdin.take());
    let _ = child.kill();
    let out = child.wait_with_output().expect("ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not relaying") && stderr.contains("vramio replay"),
        "{stderr}"
    );
}
