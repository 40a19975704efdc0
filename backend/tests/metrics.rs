//! `/metrics` of a real `vramio serve` and `vramio hub` (fake NVML): who may scrape it, that
//! `promtool check metrics` finds the live output clean (2 GPUs with processes, after a GPU is
//! lost, a hub with one host down), and that its values are the script's.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/prom_kit.rs"]
mod prom_kit;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use prom_kit::{Got, check_metrics, find, get, samples};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use vramio_bin::{Server, TempDir};

const MIB: f64 = 1024.0 * 1024.0;
const SCRAPE_TOKEN: &str = "fedcba9876543210fedcba9876543210fedcba98";

/// Two GPUs, each with a process of this test's pid; GPU 1 is lost at `lost_at_s` if given.
fn two_gpus(lost_at_s: Option<f64>) -> String {
    let pid = std::process::id();
    let lost = lost_at_s.map_or("null".into(), |s| s.to_string());
    format!(
        r#"{{"driver_version": "550.54.15", "devices": [
      {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-1111-2222-3333-444444444444",
        "memory_total_mib": 81559, "memory_reserved_mib": 512,
        "timeline": [{{"at_s": 0, "memory_used_mib": 40000, "util_gpu": 90, "util_mem": 40,
                       "temperature_c": 61, "power_w": 450,
                       "processes": [{{"pid": {pid}, "used_mib": 39000}}]}}]}},
      {{"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-55555555-6666-7777-8888-999999999999",
        "memory_total_mib": 40960, "lost_at_s": {lost},
        "timeline": [{{"at_s": 0, "memory_used_mib": 2000, "util_gpu": 10, "util_mem": 2,
                       "temperature_c": 40, "power_w": 90,
                       "processes": [{{"pid": {pid}, "used_mib": 1500}}]}}]}}]}}"#
    )
}

fn private_file(path: &Path, text: &str) -> String {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path.to_string_lossy().into_owned()
}

/// Scrapes until `ready` accepts the exposition (the first frames take a tick or two).
fn scrape_until(authority: &str, token: &str, what: &str, ready: impl Fn(&str) -> bool) -> Got {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = get(authority, "/metrics", Some(token));
        if got.status == 200 && ready(&got.body) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "no /metrics with {what}: {} {}",
            got.status,
            got.body
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn script(dir: &TempDir, text: &str) -> PathBuf {
    let path = dir.join("gpu.json");
    std::fs::write(&path, text).expect("script");
    path
}

#[test]
fn two_gpus_scrape_clean_with_the_scripts_values_and_only_with_a_token() {
    let dir = TempDir::new("metrics-two");
    let script = script(&dir, &two_gpus(None));
    let scrape_file = private_file(&dir.join("scrape.token"), SCRAPE_TOKEN);
    let s = Server::start(
        &dir.join("state"),
        &script,
        &["--port", "0", "--metrics-token-file", &scrape_file],
    );
    let got = scrape_until(s.authority(), s.token(), "both GPUs and disks", |t| {
        t.contains("vramio_gpu_memory_used_bytes{gpu=\"1\"")
            && t.contains("vramio_block_reads_completed_total{")
            && t.contains("vramio_verdict{")
    });
    assert_eq!(
        got.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    check_metrics(&got.body);
    let all = samples(&got.body);
    let one = |name: &str, with: &[(&str, &str)]| {
        let found = find(&all, name, with);
        assert_eq!(found.len(), 1, "{name} {with:?}: {found:?}");
        found[0].2
    };
    assert_eq!(
        one("vramio_gpu_memory_used_bytes", &[("gpu", "0")]),
        40000.0 * MIB
    );
    assert_eq!(
        one("vramio_gpu_memory_total_bytes", &[("gpu", "1")]),
        40960.0 * MIB
    );
    assert_eq!(one("vramio_gpu_utilization_ratio", &[("gpu", "0")]), 0.9);
    assert_eq!(
        one(
            "vramio_gpu_info",
            &[
                ("gpu", "0"),
                ("driver", "550.54.15"),
                ("name", "NVIDIA H100 80GB HBM3")
            ]
        ),
        1.0
    );
    let pid = std::process::id().to_string();
    assert_eq!(
        one(
            "vramio_gpu_process_memory_used_bytes",
            &[("gpu", "0"), ("pid", &pid)]
        ),
        39000.0 * MIB
    );
    assert!(
        !got.body.contains("user=\""),
        "users only with --metrics-users"
    );
    assert!(
        !got.body.contains("host=\""),
        "no host label on a plain serve"
    );
    // Counters are the kernel's: as large as /proc/diskstats says, never reset by vramio.
    assert!(
        find(&all, "vramio_block_read_bytes_total", &[])
            .iter()
            .all(|s| s.2 > 0.0)
    );

    // Who may scrape.
    let none = get(s.authority(), "/metrics", None);
    assert_eq!(none.status, 401, "{}", none.body);
    assert!(none.header("www-authenticate").is_some());
    assert_eq!(
        get(s.authority(), "/metrics", Some("0".repeat(40).as_str())).status,
        401
    );
    let by_scrape = get(s.authority(), "/metrics", Some(SCRAPE_TOKEN));
    assert_eq!(by_scrape.status, 200);
    check_metrics(&by_scrape.body);
    // The scrape token reads /metrics and nothing else.
    for path in ["/api/snapshot", "/api/shares", "/api/session"] {
        let got = get(s.authority(), path, Some(SCRAPE_TOKEN));
        assert_eq!(got.status, 403, "{path}: {}", got.body);
        assert!(got.body.contains("/metrics only"), "{path}: {}", got.body);
    }
}

#[test]
fn a_lost_gpu_keeps_its_identity_and_loses_its_readings() {
    let dir = TempDir::new("metrics-lost");
    let script = script(&dir, &two_gpus(Some(1.0)));
    let s = Server::start(&dir.join("state"), &script, &["--port", "0"]);
    let got = scrape_until(s.authority(), s.token(), "GPU 1 lost", |t| {
        t.contains("vramio_gpu_up{gpu=\"1\",uuid=\"GPU-55555555-6666-7777-8888-999999999999\"} 0")
    });
    check_metrics(&got.body);
    let all = samples(&got.body);
    assert_eq!(find(&all, "vramio_gpu_info", &[("gpu", "1")]).len(), 1);
    for family in [
        "vramio_gpu_memory_used_bytes",
        "vramio_gpu_utilization_ratio",
        "vramio_gpu_temperature_celsius",
    ] {
        assert!(
            find(&all, family, &[("gpu", "1")]).is_empty(),
            "a lost GPU has no {family} (never a 0)"
        );
        assert_eq!(find(&all, family, &[("gpu", "0")]).len(), 1, "{family}");
    }
    let errors = find(&all, "vramio_collector_errors", &[("source", "gpu")]);
    assert!(errors[0].2 >= 1.0, "{errors:?}");
}

#[test]
fn a_hub_labels_every_host_and_drops_the_one_that_is_down() {
    let dir = TempDir::new("metrics-hub");
    let script = script(&dir, &two_gpus(None));
    let token = private_file(
        &dir.join("peer.token"),
        "0123456789abcdef0123456789abcdef0123456789abcdef",
    );
    let peer = Server::start(
        &dir.join("peer"),
        &script,
        &["--port", "0", "--token-file", &token, "--name", "node-a"],
    );
    // A port nothing listens on: that peer stays down.
    let dead = format!("ws://127.0.0.1:{}", prom_kit::free_port());
    let live = format!("ws://{}", peer.authority());
    let hub = Server::start_command(
        "hub",
        &dir.join("hub"),
        &script,
        &[
            "--port",
            "0",
            "--peer-token-file",
            &token,
            "--metrics-users",
            &live,
            &dead,
        ],
    );
    let got = scrape_until(hub.authority(), hub.token(), "the live peer's GPUs", |t| {
        t.contains("vramio_gpu_memory_used_bytes{host=")
    });
    check_metrics(&got.body);
    let all = samples(&got.body);
    let up: Vec<(String, f64)> = find(&all, "vramio_host_up", &[])
        .iter()
        .map(|(_, l, v)| (l["host"].clone(), *v))
        .collect();
    let dead_name = dead.trim_start_matches("ws://").to_owned();
    let live_name = live.trim_start_matches("ws://").to_owned();
    assert!(up.contains(&(live_name.clone(), 1.0)), "{up:?}");
    assert_eq!(up.len(), 2, "{up:?}");
    assert!(
        up.iter().any(|(h, v)| h.contains(&dead_name) && *v == 0.0),
        "{up:?}"
    );
    for (name, labels, _) in &all {
        if name == "vramio_host_up" || name == "vramio_viewers" || name == "vramio_build_info" {
            continue;
        }
        let host = labels.get("host").map(String::as_str);
        assert_eq!(host, Some(live_name.as_str()), "{name} {labels:?}");
    }
    // --metrics-users: the process's owner is named.
    let procs = find(&all, "vramio_gpu_process_memory_used_bytes", &[]);
    assert!(!procs.is_empty());
    assert!(
        procs.iter().all(|(_, l, _)| l.contains_key("user")),
        "{procs:?}"
    );
}

#[test]
fn metrics_public_opens_it_on_loopback_only() {
    let dir = TempDir::new("metrics-public");
    let script = script(&dir, &two_gpus(None));
    let s = Server::start(
        &dir.join("state"),
        &script,
        &["--port", "0", "--metrics-public"],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = get(s.authority(), "/metrics", None);
        assert_eq!(got.status, 200, "{}", got.body);
        if got.body.contains("vramio_gpu_up{") {
            check_metrics(&got.body);
            break;
        }
        assert!(Instant::now() < deadline, "{}", got.body);
        std::thread::sleep(Duration::from_millis(200));
    }
    // The rest still needs the token.
    assert_eq!(get(s.authority(), "/api/snapshot", None).status, 401);

    let refused = vramio_bin::run(&[
        "serve",
        "--metrics-public",
        "--bind",
        "0.0.0.0",
        "--port",
        "0",
        "--state-dir",
        &dir.join("state2").to_string_lossy(),
    ]);
    assert_eq!(refused.status.code(), Some(64), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("--metrics-public") && refused.stderr.contains("loopback"),
        "{}",
        refused.stderr
    );
    // Behind a reverse proxy (loopback bind, --public-url) anyone who reaches the proxy would
    // read it: refused too.
    for flag in ["--metrics-public", "--no-auth"] {
        let refused = vramio_bin::run(&[
            "serve",
            flag,
            "--public-url",
            "https://gpu7.lab.example",
            "--port",
            "0",
            "--state-dir",
            &dir.join("state3").to_string_lossy(),
        ]);
        assert_eq!(
            refused.status.code(),
            Some(64),
            "{flag}: {}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains(flag) && refused.stderr.contains("gpu7.lab.example"),
            "{}",
            refused.stderr
        );
    }
}
