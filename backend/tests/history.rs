//! The history a `serve` keeps (docs/history.md), through the real binary:
//!
//! - `kill -9` at random moments, 20 times on one state directory: every restart opens the
//!   store, and every point read back before a kill is there after it (history from before a
//!   restart shows after it);
//! - a garbage history file is moved aside and named, and serving goes on;
//! - a full disk (a loop-mounted ext4 as `--history-dir`) pauses writing, which `/metrics`
//!   shows, serving goes on, and writing resumes by itself once space is freed.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/fault_kit.rs"]
mod fault_kit;
#[path = "common/loop_mount.rs"]
mod loop_mount;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use fault_kit::{Rng, admin};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use vramio_bin::{Server, TempDir, wait_for};

const ROUNDS: usize = 20;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The times of the GPU's memory points the server has stored from `from_ms` on.
async fn stored_times(s: &Server, from_ms: u64) -> BTreeSet<u64> {
    let path = format!(
        "/api/history?from_ms={from_ms}&to_ms={}&points=20000",
        now_ms() + 60_000
    );
    let r = admin(s, "GET", &path, "").await;
    assert_eq!(r.status, 200, "{}\n{}", r.text(), s.stderr());
    let v = r.json();
    v["series"]
        .as_array()
        .expect("series")
        .iter()
        .find(|x| x["scope"] == "gpu" && x["metric"] == "mem_used_bytes")
        .map(|x| {
            x["points"]
                .as_array()
                .expect("points")
                .iter()
                .map(|p| p[0].as_u64().expect("t_ms"))
                .collect()
        })
        .unwrap_or_default()
}

fn sigkill(pid: u32) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .expect("a child pid");
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("SIGKILL");
}

fn script(tmp: &TempDir) -> std::path::PathBuf {
    let script = tmp.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    script
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_random_moments_never_costs_more_than_the_last_batch() {
    let tmp = TempDir::new("history-kill");
    let state = tmp.join("state");
    let script = script(&tmp);
    let mut rng = Rng::seeded("history-kill", 0x4157_0001);
    let from_ms = now_ms();
    let mut seen: BTreeSet<u64> = BTreeSet::new();
    let mut grew = 0;
    for round in 0..ROUNDS {
        let s = Server::start(&state, &script, &["--port", "0"]);
        let before = stored_times(&s, from_ms).await;
        let lost: Vec<_> = seen.difference(&before).collect();
        assert!(
            lost.is_empty(),
            "round {round}: {} points read before the kill are gone: {lost:?}\n{}",
            lost.len(),
            s.stderr()
        );
        assert!(!s.stderr().contains("moved aside"), "{}", s.stderr());
        // Run 1 to 10 s (a 10 s batch commits in most rounds), read what is stored, and kill
        // at once or a moment later.
        tokio::time::sleep(rng.millis(1_000, 10_000)).await;
        seen = stored_times(&s, from_ms).await;
        if seen.len() > before.len() {
            grew += 1;
        }
        tokio::time::sleep(rng.millis(0, 300)).await;
        sigkill(s.pid());
        drop(s);
    }
    assert!(
        grew >= ROUNDS / 3,
        "batches committed in only {grew} rounds"
    );
    let s = Server::start(&state, &script, &["--port", "0"]);
    let after = stored_times(&s, from_ms).await;
    assert!(after.is_superset(&seen), "{}", s.stderr());
    // Points only at the 250 ms interval's samples rolled into seconds: one a second at most.
    assert!(after.iter().all(|t| t % 1000 == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_history_file_is_moved_aside_and_named_and_serving_goes_on() {
    let tmp = TempDir::new("history-garbage");
    let state = tmp.join("state");
    let dir = state.join("history");
    std::fs::create_dir_all(&dir).expect("dir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::fs::write(dir.join("history.redb"), vec![0x42u8; 64 * 1024]).expect("garbage");
    let script = script(&tmp);
    let s = Server::start(&state, &script, &["--port", "0"]);
    let stderr = wait_for(Duration::from_secs(10), "the set-aside notice", || {
        let e = s.stderr();
        async move { e.contains("moved aside").then_some(e) }
    })
    .await;
    assert!(stderr.contains("history.redb.damaged-"), "{stderr}");
    let aside: Vec<String> = std::fs::read_dir(&dir)
        .expect("ls")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("history.redb.damaged-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read(dir.join(&aside[0])).expect("kept").len(),
        64 * 1024,
        "the damaged file is kept whole"
    );
    wait_for(Duration::from_secs(10), "serving", || async {
        (admin(&s, "GET", "/api/health", "").await.status == 200).then_some(())
    })
    .await;
    // The fresh store answers.
    let r = admin(&s, "GET", "/api/history?from_ms=0&to_ms=1", "").await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The value of an unlabelled sample of `name` in a `/metrics` text.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_pauses_writing_and_it_resumes_when_space_returns() {
    let test = "history-full";
    let Some(mnt) = loop_mount::loop_mount_or_skip(test, "history-full", 8 << 20) else {
        return;
    };
    let tmp = TempDir::new(test);
    let state = tmp.join("state");
    let script = script(&tmp);
    let hist = mnt.dir.join("history");
    let s = Server::start(
        &state,
        &script,
        &[
            "--port",
            "0",
            "--history-dir",
            hist.to_str().expect("UTF-8"),
        ],
    );
    let started = now_ms();
    wait_for(Duration::from_secs(30), "a first commit", || async {
        (!stored_times(&s, started - 5_000).await.is_empty()).then_some(())
    })
    .await;
    let filler = loop_mount::fill(&mnt.dir, 0);
    let scrape = |s: &Server| {
        let auth = format!("Bearer {}", s.token());
        let authority = s.authority().to_owned();
        async move {
            vramio_bin::http(
                &authority,
                "GET",
                "/metrics",
                &[("host", &authority), ("authorization", &auth)],
                "",
            )
            .await
            .text()
        }
    };
    let full_at = Instant::now();
    let text = wait_for(
        Duration::from_secs(120),
        "writing paused by the full disk",
        || {
            let f = scrape(&s);
            async move {
                let t = f.await;
                (metric(&t, "vramio_history_write_paused") == Some(1.0)).then_some(t)
            }
        },
    )
    .await;
    assert!(
        metric(&text, "vramio_history_disk_full_total").is_some_and(|n| n >= 1.0),
        "{text}"
    );
    eprintln!("paused {:.1?} after the disk filled", full_at.elapsed());
    // Serving goes on.
    assert_eq!(admin(&s, "GET", "/api/health", "").await.status, 200);
    assert!(s.stderr().contains("writing paused"), "{}", s.stderr());
    let before = stored_times(&s, started - 5_000).await;

    std::fs::remove_file(&filler).expect("free the space");
    wait_for(Duration::from_secs(60), "writing resumed", || {
        let f = scrape(&s);
        async move { (metric(&f.await, "vramio_history_write_paused") == Some(0.0)).then_some(()) }
    })
    .await;
    let after = wait_for(Duration::from_secs(30), "new points", || {
        let s = &s;
        let before = before.clone();
        async move {
            let a = stored_times(s, started - 5_000).await;
            (a.len() > before.len() && a.is_superset(&before)).then_some(a)
        }
    })
    .await;
    // What waited while the disk was full was written too: seconds from the pause are there.
    let paused_span: Vec<_> = after.iter().filter(|t| !before.contains(t)).collect();
    assert!(paused_span.len() >= 10, "{paused_span:?}");
    drop(s);
}
