//! A server killed with SIGKILL while it writes the share store leaves the old `shares.json` or
//! the new one, never a damaged one: every link it acknowledged is kept, the one it was writing
//! is kept or not (whole), and the next server on that state directory starts with sharing on,
//! whatever temp files the kills left behind.
//!
//! Each round starts a server on the same state directory (the kernel frees the dead one's
//! `server.lock`), creates links one after another over HTTP, and kills the server at a seeded
//! random moment; most of a create is the store's write and fsyncs, so most kills land in one.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/fault_kit.rs"]
mod fault_kit;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use fault_kit::{Rng, admin, try_admin};
use std::path::Path;
use std::time::{Duration, Instant};
use vramio_bin::{Server, TempDir};

/// At most this many kills, and no new round past [`BUDGET`].
const ROUNDS: usize = 40;
const BUDGET: Duration = Duration::from_secs(12);
/// Links made in all, below the server's limit of 1000 active links.
const MAX_LINKS: usize = 900;
const SHARING_OFF: &str = "sharing is off";

/// Labels sort in creation order: `r<round>-<n>`, both zero-padded.
fn label(round: usize, n: usize) -> String {
    format!("r{round:02}-{n:04}")
}

/// The labels in the store file as it is on disk, sorted; a damaged file fails the test.
fn labels_on_disk(state: &Path) -> Vec<String> {
    let path = state.join("shares.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Vec::new();
    };
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "{} is damaged ({e}): {:?}",
            path.display(),
            String::from_utf8_lossy(&bytes)
        )
    });
    let mut labels: Vec<String> = v["shares"]
        .as_array()
        .unwrap_or_else(|| panic!("{} has no shares list: {v}", path.display()))
        .iter()
        .map(|r| {
            r["label"]
                .as_str()
                .expect("every link has a label")
                .to_owned()
        })
        .collect();
    labels.sort();
    labels
}

fn temp_files(state: &Path) -> usize {
    std::fs::read_dir(state)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(".shares.json.tmp-")
                })
                .count()
        })
        .unwrap_or(0)
}

/// The labels a server lists, sorted; sharing must be on.
async fn labels_listed(s: &Server) -> Vec<String> {
    let r = admin(s, "GET", "/api/shares", "").await;
    assert_eq!(r.status, 200, "sharing is on: {}\n{}", r.text(), s.stderr());
    let mut labels: Vec<String> = r.json()["shares"]
        .as_array()
        .expect("shares")
        .iter()
        .map(|l| l["label"].as_str().expect("a label").to_owned())
        .collect();
    labels.sort();
    labels
}

fn sigkill(pid: u32) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .expect("a child pid");
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("SIGKILL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_while_writing_the_share_store_keeps_the_old_or_the_new_store() {
    let tmp = TempDir::new("share-kill");
    let state = tmp.join("state");
    let script = tmp.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let mut rng = Rng::seeded("share-kill", 0x5eed_0001);
    let started = Instant::now();
    // The labels the store holds, in creation order.
    let mut kept: Vec<String> = Vec::new();
    let (mut made, mut unacked_kept, mut leftovers) = (0, 0, 0);
    let mut round = 0;
    while round < ROUNDS && started.elapsed() < BUDGET && made < MAX_LINKS {
        let s = Server::start(&state, &script, &["--port", "0"]);
        assert_eq!(
            labels_listed(&s).await,
            kept,
            "the store as the last kill left it"
        );
        assert!(!s.stderr().contains(SHARING_OFF), "{}", s.stderr());

        let delay = rng.millis(5, 150);
        let pid = s.pid();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            sigkill(pid);
        });
        let (mut attempted, mut acked) = (Vec::new(), 0);
        while made + attempted.len() < MAX_LINKS {
            let l = label(round, attempted.len());
            attempted.push(l.clone());
            let body = serde_json::json!({ "label": l }).to_string();
            match try_admin(&s, "POST", "/api/shares", &body).await {
                Ok(r) if r.status == 201 => acked += 1,
                Ok(r) => panic!("create {l}: {} {}", r.status, r.text()),
                Err(_) => break,
            }
        }
        killer.join().expect("the killer thread");
        drop(s);

        let disk = labels_on_disk(&state);
        let new = disk.strip_prefix(kept.as_slice()).unwrap_or_else(|| {
            panic!("round {round}: links were lost: had {kept:?}, now {disk:?}")
        });
        assert!(
            attempted.starts_with(new) && new.len() >= acked,
            "round {round} (killed after {delay:?}): the store holds {new:?} of this round; \
             {acked} of {attempted:?} were acknowledged"
        );
        unacked_kept += new.len() - acked;
        made += new.len();
        leftovers = temp_files(&state);
        kept = disk;
        round += 1;
    }

    let s = Server::start(&state, &script, &["--port", "0"]);
    assert_eq!(
        labels_listed(&s).await,
        kept,
        "the store after the last kill"
    );
    let r = admin(&s, "POST", "/api/shares", r#"{"label":"after"}"#).await;
    assert_eq!(r.status, 201, "a link after the kills: {}", r.text());
    assert!(!s.stderr().contains(SHARING_OFF), "{}", s.stderr());
    assert_eq!(
        temp_files(&state),
        0,
        "the server that took the lock removed the temp files the kills left"
    );
    s.terminate();
    eprintln!(
        "share-kill: {round} kills in {:?}, {made} links kept ({unacked_kept} written but \
         not acknowledged), {leftovers} temp files left in the state directory",
        started.elapsed()
    );
    assert!(round >= 3, "only {round} rounds ran within {BUDGET:?}");
}
