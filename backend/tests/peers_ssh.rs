//! SSH peers against a real OpenSSH server on 127.0.0.1 (docs/architecture.md#4-commands-and-flags): the hub's
//! [`SshLink`] runs the system `ssh -F <test config>` to an alias, the far side is this build's
//! `vramio stream` on a scripted fake NVML, and [`life::supervise`] feeds a real [`HostFeed`]. Then
//! the ways a link fails, each with ssh's own words: a key the server does not know, a host key
//! nobody knows, a remote command that is not there.
//!
//! Skipped (with a note) where sshd is not installed, except in CI, where `.ci/run` installs it.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/sshd.rs"]
mod sshd;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use shared::HostState;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::peers::PeerSink;
use vramio::peers::life;
use vramio::peers::ssh::SshLink;

const INTERVAL: Duration = Duration::from_millis(250);

/// `vramio stream` as the far side runs it: this build, by absolute path, on the fake NVML.
fn remote_command(script: &std::path::Path) -> String {
    format!(
        "env {}={} {} stream --no-relay --nvml-lib {} --interval 250ms",
        fake_nvml::SCRIPT_ENV,
        script.display(),
        env!("CARGO_BIN_EXE_vramio"),
        fake_nvml::fake_nvml_path().display()
    )
}

fn link(sshd: &sshd::Sshd, alias: &str, command: String) -> SshLink {
    SshLink::new(None, alias.to_owned(), None)
        .ssh_config(Some(sshd.client_config.clone()))
        .remote_command(command)
}

/// Every state a link reported, in order.
#[derive(Default)]
struct Record {
    links: Mutex<Vec<(HostState, Option<String>)>>,
}

impl PeerSink for Record {
    fn link(&self, state: HostState, error: Option<String>) {
        self.links.lock().expect("lock").push((state, error));
    }
    fn frame(&self, _frame: shared::Frame) {}
    fn diagnosis(&self, _diagnosis: shared::diagnosis::Diagnosis) {}
}

/// The reason of the first `down` the link reports (within 30 s).
async fn first_down(sshd: &sshd::Sshd, link: SshLink) -> String {
    let sink = Arc::new(Record::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn(life::supervise(
        link,
        sink.clone(),
        usize::MAX,
        cancel.clone(),
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    let reason = loop {
        let down = sink
            .links
            .lock()
            .expect("lock")
            .iter()
            .find(|(s, _)| *s == HostState::Down)
            .map(|(_, why)| why.clone().unwrap_or_default());
        if let Some(reason) = down {
            break reason;
        }
        assert!(
            Instant::now() < deadline,
            "no down within 30 s: {:?}\nsshd log:\n{}",
            sink.links.lock().expect("lock"),
            sshd.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    cancel.cancel();
    task.await.expect("supervise ends on cancel");
    let states = sink.links.lock().expect("lock").clone();
    assert_eq!(states[0].0, HostState::Connecting, "{states:?}");
    assert!(
        !states.iter().any(|(s, _)| *s == HostState::Up),
        "{states:?}"
    );
    reason
}

/// `vramio stream` processes reading this fake-NVML script (the far side of a link): the script
/// is in their environment.
fn remote_streams(script: &std::path::Path) -> usize {
    let needle = format!("{}={}", fake_nvml::SCRIPT_ENV, script.display());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            let read = |f: &str| {
                std::fs::read(e.path().join(f))
                    .map(|c| String::from_utf8_lossy(&c).replace('\0', "\n"))
                    .unwrap_or_default()
            };
            let cmdline = read("cmdline");
            cmdline.starts_with(env!("CARGO_BIN_EXE_vramio"))
                && cmdline.contains("\nstream\n")
                && read("environ").lines().any(|l| l == needle)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ssh_alias_streams_frames_into_a_hub() {
    if !sshd::available() {
        return;
    }
    let sshd = sshd::Sshd::start("stream");
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let hub = HostFeed::new(
        "ssh://testpeer",
        INTERVAL,
        HostFeedConfig::for_interval(INTERVAL),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn(life::supervise(
        link(&sshd, "testpeer", remote_command(script.path())),
        Arc::new(hub.clone()),
        usize::MAX,
        cancel.clone(),
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    while hub.history_len() < 6 || hub.latest_diagnosis().is_none() {
        assert!(
            Instant::now() < deadline,
            "{} frames within 30 s; state {:?}\nsshd log:\n{}",
            hub.history_len(),
            hub.host_status(),
            sshd.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (state, _, reason) = hub.host_status();
    assert_eq!((state, reason), (HostState::Up, None));
    let frames = hub.history_after(None);
    let seqs: Vec<u64> = frames.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let last: shared::Frame =
        serde_json::from_str(frames.last().expect("a frame").frame_json()).expect("a frame");
    assert_eq!(last.gpus.len(), 1, "the fake's GPU came through ssh");
    assert_eq!(last.host, vramio::cli::hostname(), "the far side's name");
    assert!(remote_streams(script.path()) >= 1, "the far side runs");

    // Ending the link kills ssh; the far side then sees the end of its stdin and exits.
    cancel.cancel();
    task.await.expect("supervise ends on cancel");
    let deadline = Instant::now() + Duration::from_secs(10);
    while remote_streams(script.path()) > 0 {
        assert!(
            Instant::now() < deadline,
            "the remote vramio stream still runs 10 s after the link ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_server_does_not_know_is_permission_denied() {
    if !sshd::available() {
        return;
    }
    let sshd = sshd::Sshd::start("wrongkey");
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let reason = first_down(
        &sshd,
        link(&sshd, "wrongkey", remote_command(script.path())),
    )
    .await;
    assert!(reason.contains("Permission denied"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_host_key_is_host_key_verification_failed() {
    if !sshd::available() {
        return;
    }
    let sshd = sshd::Sshd::start("unknownhost");
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let reason = first_down(
        &sshd,
        link(&sshd, "unknownhost", remote_command(script.path())),
    )
    .await;
    assert_eq!(reason, "Host key verification failed.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_remote_binary_says_so() {
    if !sshd::available() {
        return;
    }
    let sshd = sshd::Sshd::start("nobinary");
    let reason = first_down(
        &sshd,
        link(&sshd, "testpeer", "/nonexistent/vramio stream".into()),
    )
    .await;
    assert!(
        reason.contains("No such file") || reason.contains("command not found"),
        "{reason}"
    );
    assert!(reason.contains("/nonexistent/vramio"), "{reason}");
}
