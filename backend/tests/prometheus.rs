//! A real Prometheus (Debian's package) scraping a real `vramio serve` every second with the
//! scrape token, the repo's alert rules loaded. Through Prometheus' HTTP API: GPU memory is the
//! fake script's, `rate()` of the read counter matches the frames' read rate under a paced
//! direct-I/O read load, the pressure verdict is 1, the OOM alert fires for the growing GPU, and
//! every query of the Grafana dashboard resolves to series.

#[path = "common/direct_io.rs"]
mod direct_io;
#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/prom_kit.rs"]
mod prom_kit;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use direct_io::AlignedBuf;
use prom_kit::{Prometheus, get};
use std::collections::BTreeMap;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use vramio_bin::{Server, TempDir};

const MIB: f64 = 1024.0 * 1024.0;
const SCRAPE_TOKEN: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d";
/// The read load: paced, so the rate is steady whatever the window alignment.
const READ_MIB_PER_S: f64 = 24.0;
const FILE_BYTES: usize = 128 << 20;

/// GPU 0 sits at 96% (pressure); GPU 1 grows 80 MiB/s towards its 40 GiB (OOM in minutes).
fn script() -> String {
    let pid = std::process::id();
    format!(
        r#"{{"driver_version": "550.54.15", "devices": [
      {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000",
        "memory_total_mib": 81559, "power_limit_w": 700,
        "timeline": [{{"at_s": 0, "memory_used_mib": 78297, "util_gpu": 95, "util_mem": 60,
                       "temperature_c": 70, "power_w": 600,
                       "processes": [{{"pid": {pid}, "used_mib": 78000}}]}}]}},
      {{"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-bbbbbbbb-0000-0000-0000-000000000000",
        "memory_total_mib": 40960, "power_limit_w": 400,
        "timeline": [{{"at_s": 0, "memory_used_mib": 6000, "util_gpu": 80, "util_mem": 30,
                       "temperature_c": 55, "power_w": 300,
                       "processes": [{{"pid": {pid}, "used_mib": 5900}}]}},
                     {{"at_s": 400, "memory_used_mib": 38000}}]}}]}}"#
    )
}

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Reads `path` over and over at [`READ_MIB_PER_S`] until `stop`, with O_DIRECT so every read
/// reaches the disk (where the filesystem refuses O_DIRECT: buffered reads after dropping the
/// file's pages).
fn paced_reads(path: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let direct = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(direct_io::o_direct())
            .open(&path);
        let (mut file, is_direct) = match direct {
            Ok(f) => (f, true),
            Err(_) => (
                std::fs::File::open(&path).expect("open the load file"),
                false,
            ),
        };
        let mut buf = AlignedBuf::new(1 << 20);
        let start = Instant::now();
        let mut read = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let due = start + Duration::from_secs_f64(read as f64 / (READ_MIB_PER_S * MIB));
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let n = file.read(buf.as_mut_slice()).expect("read the load file");
            if n == 0 {
                file.rewind().expect("rewind");
                if !is_direct {
                    let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed);
                }
                continue;
            }
            read += n as u64;
        }
        read
    })
}

fn write_load_file(path: &Path) {
    let mut f = std::fs::File::create(path).expect("create the load file");
    let chunk = vec![0x5au8; 1 << 20];
    for _ in 0..(FILE_BYTES >> 20) {
        f.write_all(&chunk).expect("write the load file");
    }
    f.sync_all().expect("fsync");
    let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed);
}

/// Every frame's `(t_ms, device -> read bytes/s)`, polled from `/api/snapshot`.
fn poll_frames(
    authority: String,
    token: String,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(u64, BTreeMap<String, f64>)>> {
    std::thread::spawn(move || {
        let mut frames: Vec<(u64, BTreeMap<String, f64>)> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let got = get(&authority, "/api/snapshot", Some(&token));
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&got.body) {
                let f = &v["frame"];
                let t = f["t_ms"].as_u64().unwrap_or(0);
                if frames.last().is_none_or(|(last, _)| t > *last) {
                    let rates = f["block_devices"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|d| {
                            Some((
                                d["name"].as_str()?.to_owned(),
                                d["read_bytes_per_sec"].as_f64()?,
                            ))
                        })
                        .collect();
                    frames.push((t, rates));
                }
            }
            std::thread::sleep(Duration::from_millis(60));
        }
        frames
    })
}

#[test]
fn a_real_prometheus_scrapes_vramio_and_fires_the_oom_alert() {
    let dir = TempDir::new("prometheus");
    let gpu = dir.join("gpu.json");
    std::fs::write(&gpu, script()).expect("script");
    let token = dir.join("scrape.token");
    std::fs::write(&token, SCRAPE_TOKEN).expect("token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let s = Server::start(
        &dir.join("state"),
        &gpu,
        &[
            "--port",
            "0",
            "--metrics-token-file",
            &token.to_string_lossy(),
        ],
    );
    let rules = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/vramio-alerts.yml");
    let prom = Prometheus::start(&dir.join("prom"), s.authority(), &token, &[rules]);

    // The scrape works with the scrape token, and the values are the script's.
    let used = prom.wait(
        Duration::from_secs(30),
        "GPU 0's memory in Prometheus",
        || {
            let r = prom.query(r#"vramio_gpu_memory_used_bytes{gpu="0"}"#);
            r.first().map(|(_, v)| *v)
        },
    );
    assert_eq!(used, 78297.0 * MIB);
    let up = prom.query(r#"up{job="vramio"}"#);
    assert_eq!(up.len(), 1, "{up:?}");
    assert_eq!(up[0].1, 1.0, "the scrape with the token works");

    // GPU 0 at 96%: the verdict is gpu_memory_pressure.
    prom.wait(Duration::from_secs(40), "the pressure verdict", || {
        let r = prom.query(r#"vramio_verdict{verdict="gpu_memory_pressure"} == 1"#);
        (r.len() == 1).then_some(())
    });

    // A paced read load: Prometheus' rate() of the counter against the frames' own rates.
    let load_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let load = load_dir.join(format!("prometheus-load-{}", std::process::id()));
    write_load_file(&load);
    let stop = Arc::new(AtomicBool::new(false));
    let frames = poll_frames(s.authority().to_owned(), s.token().to_owned(), stop.clone());
    let reader = paced_reads(load.clone(), stop.clone());
    std::thread::sleep(Duration::from_secs(16));
    let at = now_s() - 2.0;
    let rates = prom.query_at("rate(vramio_block_read_bytes_total[10s])", at);
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let read = reader.join().expect("the reader");
    let frames = frames.join().expect("the poller");
    let _ = std::fs::remove_file(&load);
    assert!(read > 0);
    // The disk the load landed on: the busiest one in Prometheus' view.
    let (labels, prom_rate) = rates
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .cloned()
        .unwrap_or_else(|| panic!("no read rates in Prometheus: {rates:?}"));
    let device = labels["device"].clone();
    let window: Vec<f64> = frames
        .iter()
        .filter(|(t, _)| (*t as f64) / 1000.0 > at - 10.0 && (*t as f64) / 1000.0 <= at)
        .filter_map(|(_, r)| r.get(&device).copied())
        .collect();
    assert!(window.len() >= 20, "frames in the window: {window:?}");
    let frames_rate = window.iter().sum::<f64>() / window.len() as f64;
    assert!(
        frames_rate > 0.5 * READ_MIB_PER_S * MIB,
        "the load did not reach {device}: {frames_rate} B/s"
    );
    let off = (prom_rate - frames_rate).abs() / frames_rate;
    eprintln!(
        "{device}: Prometheus rate {:.2} MiB/s, frames {:.2} MiB/s ({:.2}% apart)",
        prom_rate / MIB,
        frames_rate / MIB,
        off * 100.0
    );
    assert!(
        off <= 0.05,
        "{prom_rate} vs {frames_rate}: {:.1}% apart",
        off * 100.0
    );

    // Every metric of docs/architecture.md#10-prometheus-metrics-contract reached Prometheus (the two that need a hub or a filling
    // disk aside; `vramio_mount_inodes` stands for `_inodes_total`, which promtool refuses on a
    // gauge).
    let contract = [
        "vramio_gpu_info",
        "vramio_gpu_memory_total_bytes",
        "vramio_gpu_memory_used_bytes",
        "vramio_gpu_memory_reserved_bytes",
        "vramio_gpu_utilization_ratio",
        "vramio_gpu_memory_utilization_ratio",
        "vramio_gpu_temperature_celsius",
        "vramio_gpu_power_watts",
        "vramio_gpu_power_limit_watts",
        "vramio_gpu_process_memory_used_bytes",
        "vramio_mount_size_bytes",
        "vramio_mount_avail_bytes",
        "vramio_mount_inodes",
        "vramio_mount_inodes_free",
        "vramio_block_read_bytes_total",
        "vramio_block_written_bytes_total",
        "vramio_block_reads_completed_total",
        "vramio_block_writes_completed_total",
        "vramio_block_io_time_seconds_total",
        "vramio_block_io_time_weighted_seconds_total",
        "vramio_memory_available_bytes",
        "vramio_memory_page_cache_bytes",
        "vramio_pressure_io_waiting_seconds_total",
        "vramio_pressure_memory_waiting_seconds_total",
        "vramio_verdict",
        "vramio_severity",
        "vramio_finding",
        "vramio_gpu_time_to_oom_seconds",
        "vramio_sampler_seconds",
        "vramio_viewers",
    ];
    let missing: Vec<&str> = contract
        .iter()
        .copied()
        .filter(|name| {
            prom.query(&format!("count({{__name__=\"{name}\"}})"))
                .is_empty()
        })
        .collect();
    assert!(missing.is_empty(), "not in Prometheus: {missing:?}");

    // Every query of the Grafana dashboard resolves to series (the two that need a hub or a
    // filling disk aside).
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/grafana/vramio.json"),
        )
        .expect("the dashboard"),
    )
    .expect("dashboard JSON");
    let mut queries = 0;
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let Some(expr) = target["expr"].as_str() else {
                continue;
            };
            let expr = expr
                .replace("$__rate_interval", "10s")
                .replace("$instance", ".*")
                .replace("$host", ".*")
                .replace("$gpu", ".*");
            let result = prom.query(&expr);
            let may_be_empty = expr.contains("vramio_host_up")
                || expr.contains("vramio_mount_time_to_full_seconds");
            assert!(
                may_be_empty || !result.is_empty(),
                "dashboard query resolves to nothing: {expr}"
            );
            queries += 1;
        }
    }
    assert!(queries >= 20, "only {queries} dashboard queries");

    // GPU 1 grows towards full: its time-to-OOM is under 15 min and the alert fires (for: 1m).
    let oom = prom.query(r#"vramio_gpu_time_to_oom_seconds{gpu="1"}"#);
    assert!(
        oom.first().is_some_and(|(_, v)| *v > 0.0 && *v < 900.0),
        "{oom:?}"
    );
    let alert = prom.wait(Duration::from_secs(120), "VramioGpuOomSoon firing", || {
        prom.alerts()
            .into_iter()
            .find(|(name, state, _)| name == "VramioGpuOomSoon" && state == "firing")
    });
    assert_eq!(alert.2["labels"]["gpu"], "1", "{}", alert.2);
    assert_eq!(alert.2["labels"]["severity"], "critical", "{}", alert.2);
    let alerts = prom.alerts();
    assert!(
        !alerts
            .iter()
            .any(|(name, _, a)| name == "VramioGpuOomSoon" && a["labels"]["gpu"] == "0"),
        "GPU 0 is full but not growing: {alerts:?}"
    );
}
