//! A mount that vanishes (`umount -l` of a loop-mounted ext4) at a random moment of a tick: the
//! next frames of `vramio serve` no longer list it, nothing panics, and the server goes on
//! (`/api/health` 200, new frames on `/api/snapshot`); a mount that comes back is listed again.
//! `vramio check` over a window in which a mount vanishes still gives a diagnosis.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/fault_kit.rs"]
mod fault_kit;
#[path = "common/loop_mount.rs"]
mod loop_mount;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use fault_kit::{Rng, admin};
use loop_mount::{LoopMount, loop_mount_or_skip};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use vramio_bin::{Server, TempDir, wait_for};

/// Times the mount goes and comes back.
const CYCLES: usize = 3;
/// `Server::start` samples every 250 ms.
const TICK_MS: u64 = 250;
const WAIT: Duration = Duration::from_secs(5);
const IMAGE_BYTES: u64 = 4 << 20;

fn mount_again(m: &LoopMount) {
    let ok = Command::new("mount")
        .args(["-o", "loop"])
        .arg(&m.image)
        .arg(&m.dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mount {} again", m.dir.display());
}

fn lazy_umount(m: &LoopMount) {
    let ok = Command::new("umount")
        .arg("-l")
        .arg(&m.dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "umount -l {}", m.dir.display());
}

/// The latest frame; `None` before the first.
async fn try_frame(s: &Server) -> Option<Value> {
    let r = admin(s, "GET", "/api/snapshot", "").await;
    if r.status == 503 && r.json()["error"] == "no_frame_yet" {
        return None;
    }
    assert_eq!(r.status, 200, "{}\n{}", r.text(), s.stderr());
    Some(r.json()["frame"].clone())
}

/// The latest frame, once there is one.
async fn frame(s: &Server) -> Value {
    wait_for(WAIT, "the first frame", || try_frame(s)).await
}

fn seq(f: &Value) -> u64 {
    f["seq"].as_u64().expect("a seq")
}

/// Whether `f` lists the mount at `point`; where it does, the space must be the small loop
/// filesystem's, never that of the filesystem beneath the mount point once it is gone.
fn lists(f: &Value, point: &str) -> bool {
    let Some(m) = f["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .find(|m| m["mount_point"] == point)
    else {
        return false;
    };
    let total = m["total_bytes"].as_u64().unwrap_or(0);
    assert!(
        total <= IMAGE_BYTES,
        "frame {} shows {total} bytes under {point}, a {IMAGE_BYTES}-byte image: {m}",
        seq(f)
    );
    true
}

/// The first frame numbered `at_least` or later.
async fn frame_from(s: &Server, at_least: u64) -> Value {
    wait_for(WAIT, &format!("frame {at_least}"), || async {
        let f = frame(s).await;
        (seq(&f) >= at_least).then_some(f)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_drops_a_vanished_mount_from_its_frames_and_goes_on() {
    let test = "mount-gone-serve";
    let Some(mnt) = loop_mount_or_skip(test, "gone-serve", IMAGE_BYTES) else {
        return;
    };
    let started = Instant::now();
    let point = mnt.dir.to_str().expect("a UTF-8 temp path").to_owned();
    let tmp = TempDir::new("mount-gone");
    let script = tmp.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let s = Server::start(&tmp.join("state"), &script, &["--port", "0"]);
    let mut rng = Rng::seeded(test, 0x5eed_0003);
    for cycle in 0..CYCLES {
        if cycle > 0 {
            mount_again(&mnt);
        }
        wait_for(WAIT, &format!("cycle {cycle}: {point} listed"), || async {
            lists(&frame(&s).await, &point).then_some(())
        })
        .await;
        tokio::time::sleep(rng.millis(0, TICK_MS)).await;
        lazy_umount(&mnt);
        let gone_at = seq(&frame(&s).await);
        // The tick under way when it went may still list it; the next one reads the table anew.
        for n in gone_at + 2..gone_at + 4 {
            let f = frame_from(&s, n).await;
            assert!(
                !lists(&f, &point),
                "cycle {cycle}: frame {} (unmounted after {gone_at}) still lists {point}: {}",
                seq(&f),
                f["mounts"]
            );
        }
    }
    let h = admin(&s, "GET", "/api/health", "").await;
    assert_eq!(h.status, 200, "{}", h.text());
    let last = seq(&frame(&s).await);
    frame_from(&s, last + 2).await;
    assert!(!s.stderr().contains("panicked"), "{}", s.stderr());
    let status = s.terminate();
    assert!(status.success(), "the server ended with {status}");
    eprintln!("{test}: {CYCLES} cycles in {:?}", started.elapsed());
}

#[test]
fn check_over_a_window_in_which_a_mount_vanishes_gives_a_diagnosis() {
    let test = "mount-gone-check";
    let Some(mnt) = loop_mount_or_skip(test, "gone-check", IMAGE_BYTES) else {
        return;
    };
    let started = Instant::now();
    let point = mnt.dir.to_str().expect("a UTF-8 temp path").to_owned();
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let nvml = fake_nvml::fake_nvml_path();
    let child = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(["check", "--json", "--window", "3s", "--interval", "100ms"])
        .arg("--nvml-lib")
        .arg(&nvml)
        .env(fake_nvml::SCRIPT_ENV, script.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vramio check");
    std::thread::sleep(Duration::from_millis(1500));
    lazy_umount(&mnt);
    let out = child.wait_with_output().expect("vramio check ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {stderr}"));
    let code = out.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "a diagnosis, not unknown: exit {code:?}: {report}"
    );
    let frames = report["frames"].as_u64().unwrap_or(0);
    assert!(frames >= 25, "3 s at 100 ms: {frames} frames: {report}");
    eprintln!(
        "{test}: {point} gone mid-window, {frames} frames, verdict {}, in {:?}",
        report["verdict"],
        started.elapsed()
    );
}
