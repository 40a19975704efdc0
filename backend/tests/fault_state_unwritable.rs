//! A state directory that stops taking writes while `vramio serve` runs (made read-only, or its
//! filesystem full): `share create` fails with an error naming `shares.json` and the cause, over
//! HTTP (500) and from the CLI, the server keeps serving its page, `/api/health` and its links,
//! and once the directory takes writes again a new link is made.
//!
//! Root ignores permission bits, so `chmod` cannot make the directory unwritable here: the
//! read-only case bind-mounts the directory read-only over itself (the server's open
//! `server.lock` stays on the writable mount beneath, so the remount is allowed), the full case
//! puts it on a loop-mounted ext4 and fills that.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/fault_kit.rs"]
mod fault_kit;
#[path = "common/loop_mount.rs"]
mod loop_mount;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use fault_kit::admin;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use vramio_bin::{Resp, Server, TempDir, run, wait_for};

/// A read-only bind mount of a directory over itself, undone when dropped.
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn over(dir: &Path) -> ReadOnly {
        let mount = |args: &[&str]| {
            let ok = Command::new("mount")
                .args(args)
                .arg(dir)
                .arg(dir)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "mount {args:?} {}", dir.display());
        };
        mount(&["--bind"]);
        let guard = ReadOnly(dir.to_owned());
        let ok = Command::new("mount")
            .args(["-o", "remount,bind,ro"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount {} read-only", dir.display());
        guard
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        loop_mount::unmount(&self.0);
    }
}

/// The filler of a full filesystem, removed (the space given back) when dropped.
struct Full(PathBuf);

impl Drop for Full {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const WAIT: Duration = Duration::from_secs(5);

/// The frame number of a `/api/snapshot` answer.
fn seq(r: &Resp) -> u64 {
    r.json()["frame"]["seq"].as_u64().expect("a frame seq")
}

async fn labels(s: &Server) -> Vec<String> {
    let r = admin(s, "GET", "/api/shares", "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut l: Vec<String> = r.json()["shares"]
        .as_array()
        .expect("shares")
        .iter()
        .map(|l| l["label"].as_str().expect("a label").to_owned())
        .collect();
    l.sort();
    l
}

async fn create(s: &Server, label: &str) -> Resp {
    let body = serde_json::json!({ "label": label }).to_string();
    admin(s, "POST", "/api/shares", &body).await
}

/// Serves from `state`, breaks its writes with `break_writes` (undone when what it returns is
/// dropped), and checks what the server does then and after; `cause` is the OS's wording.
async fn share_create_fails_clearly_and_recovers<G>(
    state: &Path,
    break_writes: impl FnOnce() -> G,
    cause: &str,
) {
    let tmp = TempDir::new("state-unwritable");
    let script = tmp.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let s = Server::start(state, &script, &["--port", "0"]);
    let r = create(&s, "before").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let page = admin(&s, "GET", "/", "").await.status;
    let first = wait_for(WAIT, "the first frame", || async {
        let r = admin(&s, "GET", "/api/snapshot", "").await;
        (r.status == 200).then(|| seq(&r))
    })
    .await;

    let broken = break_writes();
    assert!(
        std::fs::write(state.join("probe"), b"x").is_err(),
        "the state directory still takes writes"
    );
    let _ = std::fs::remove_file(state.join("probe"));
    let r = create(&s, "during").await;
    assert_eq!(r.status, 500, "{}", r.text());
    let message = r.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(
        message.contains(&state.join("shares.json").display().to_string())
            && message.contains(cause),
        "the answer names the file and the cause: {}",
        r.text()
    );
    let state_s = state.to_str().expect("a UTF-8 temp path");
    let cli = run(&["share", "create", "--label", "cli", "--state-dir", state_s]);
    assert!(!cli.ok(), "share create succeeded: {cli:?}");
    assert!(
        cli.stderr.contains("shares.json") && cli.stderr.contains(cause),
        "the CLI names the file and the cause: {}",
        cli.stderr
    );
    eprintln!("HTTP 500: {message}\nCLI: {}", cli.stderr.trim());
    assert_eq!(admin(&s, "GET", "/api/health", "").await.status, 200);
    assert_eq!(admin(&s, "GET", "/", "").await.status, page, "the page");
    wait_for(WAIT, "a frame after the writes broke", || async {
        let r = admin(&s, "GET", "/api/snapshot", "").await;
        assert_eq!(r.status, 200, "{}", r.text());
        (seq(&r) > first).then_some(())
    })
    .await;
    assert_eq!(labels(&s).await, ["before"], "the links made before");

    drop(broken);
    let r = create(&s, "after").await;
    assert_eq!(r.status, 201, "once writable again: {}", r.text());
    assert_eq!(labels(&s).await, ["after", "before"]);
    let temp_left = std::fs::read_dir(state)
        .expect("the state directory")
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().contains(".tmp-"));
    assert!(!temp_left, "a failed write leaves no temp file");
    assert!(!s.stderr().contains("panicked"), "{}", s.stderr());
    let status = s.terminate();
    assert!(status.success(), "the server ended with {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_state_dir_fails_share_create_clearly_until_writable() {
    let test = "state-read-only";
    if !loop_mount::may_mount_or_skip(test) {
        return;
    }
    let started = Instant::now();
    let tmp = TempDir::new("state-ro");
    let state = tmp.join("state");
    share_create_fails_clearly_and_recovers(
        &state,
        || ReadOnly::over(&state),
        "Read-only file system",
    )
    .await;
    eprintln!("{test}: {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_state_dir_fails_share_create_clearly_until_space_is_freed() {
    let test = "state-full";
    let Some(mnt) = loop_mount::loop_mount_or_skip(test, "state-full", 4 << 20) else {
        return;
    };
    let started = Instant::now();
    let state = mnt.dir.join("state");
    share_create_fails_clearly_and_recovers(
        &state,
        || Full(loop_mount::fill(&mnt.dir, 0)),
        "No space left",
    )
    .await;
    eprintln!("{test}: {:?}", started.elapsed());
}
