//! The page's first load over a slow tunnel, in headless Chromium (docs/performance.md#first-load):
//! the bytes it moves (Resource Timing: every file as sent, headers included), the time from
//! navigation to the first live chart over an emulated 1 Mbit/s link with 100 ms of latency
//! (chromedriver's network conditions, Chromium's throttling), and then the page's steady CPU at
//! one frame a second (every Chromium process of the session, from /proc, over a window).
//!
//! `cargo bench -p vramio --bench first_load` (needs `chromium` and `chromedriver`, as the
//! browser tests do, and `cargo xtask bundle` first); `VRAMIO_FIRST_LOAD_RUNS` (default 3),
//! `VRAMIO_STEADY_SECS` (default 30).

#[path = "../tests/common/browser_kit.rs"]
mod browser_kit;

use browser_kit::{browser_profile, fake_nvml, free_port, start_chromedriver, start_vramio_every};
use fantoccini::Client;
use fantoccini::wd::WebDriverCompatibleCommand;
use std::time::{Duration, Instant};

/// 1 Mbit/s each way, in bytes per second, and the added latency in ms.
const THROUGHPUT: u64 = 125_000;
const LATENCY_MS: u64 = 100;

/// chromedriver's `POST /session/{id}/chromium/network_conditions`.
#[derive(Debug)]
struct NetworkConditions(serde_json::Value);

impl WebDriverCompatibleCommand for NetworkConditions {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/chromium/network_conditions",
            session_id.unwrap_or_default()
        ))
    }
    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        (axum::http::Method::POST, Some(self.0.to_string()))
    }
}

/// Resolves with `performance.now()` when a chart first draws a line (a `path` with data), so
/// the time is the page's own, from navigation start, not the poll's.
const FIRST_CHART: &str = r#"
const done = arguments[arguments.length - 1];
const drawn = () => [...document.querySelectorAll('[data-testid="chart"] svg path')]
  .some(p => (p.getAttribute('d') || '').length > 2);
if (drawn()) { done(performance.now()); }
else {
  const o = new MutationObserver(() => { if (drawn()) { o.disconnect(); done(performance.now()); } });
  o.observe(document.documentElement, {subtree: true, childList: true, attributes: true});
}
"#;

const BYTES: &str = "const nav = performance.getEntriesByType('navigation');\
    const res = performance.getEntriesByType('resource');\
    return nav.concat(res).map(e => [e.name.split('?')[0], e.transferSize]);";

const ONE_GPU: &str = r#"{"driver_version": "580.00", "devices": [
  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-11111111-2222-3333-4444-555555555555",
   "memory_total_mib": 81559, "repeat": true, "lost_at_s": null, "slow_ms": 0,
   "timeline": [{"at_s": 0, "memory_used_mib": 30000, "util_gpu": 60, "util_mem": 20,
                 "temperature_c": 55, "power_w": 400, "processes": []},
                {"at_s": 30, "memory_used_mib": 40000, "util_gpu": 90, "util_mem": 40,
                 "temperature_c": 60, "power_w": 500, "processes": []}]}]}"#;

fn main() {
    let runs: usize = env_or("VRAMIO_FIRST_LOAD_RUNS", 3);
    let steady_secs: u64 = env_or("VRAMIO_STEADY_SECS", 30);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let script = browser_kit::write_script("first-load.json", ONE_GPU);
    let port = free_port();
    let (_server, url) = start_vramio_every(port, &fake_nvml(), Some(&script), "1s");
    let (driver, driver_port) = start_chromedriver();
    runtime.block_on(async {
        let mut times = Vec::new();
        for run in 0..runs {
            // A fresh profile each time: nothing cached, as on a teammate's first visit.
            let c = browser_profile(driver_port, &format!("first-load-{run}")).await;
            throttle(&c).await;
            let start = Instant::now();
            c.goto(&url).await.expect("open the page");
            let at = c
                .execute_async(FIRST_CHART, vec![])
                .await
                .expect("the first chart")
                .as_f64()
                .expect("a time");
            let wall = start.elapsed();
            let files: Vec<(String, u64)> =
                serde_json::from_value(c.execute(BYTES, vec![]).await.expect("bytes"))
                    .expect("[[url, bytes]]");
            let total: u64 = files.iter().map(|(_, b)| b).sum();
            println!(
                "first_load run {run}: {total} bytes on the wire; first live chart at {at:.0} ms \
                 (page clock; {:.0} ms by the bench's) over 1 Mbit/s, {LATENCY_MS} ms",
                wall.as_secs_f64() * 1000.0
            );
            if run == 0 {
                for (u, b) in &files {
                    println!("  {b:>8} B  {u}");
                }
            }
            times.push(at);
            if run + 1 < runs {
                c.close().await.expect("close");
            } else {
                steady_cpu(&c, driver.0.id(), steady_secs).await;
                c.close().await.expect("close");
            }
        }
        times.sort_by(f64::total_cmp);
        println!(
            "first_load: time to the first live chart, median {:.0} ms, min {:.0}, max {:.0} ({runs} runs)",
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    });
}

async fn throttle(c: &Client) {
    let conditions = serde_json::json!({"network_conditions": {
        "offline": false,
        "latency": LATENCY_MS,
        "download_throughput": THROUGHPUT,
        "upload_throughput": THROUGHPUT,
    }});
    c.issue_cmd(NetworkConditions(conditions))
        .await
        .expect("chromedriver's network conditions");
}

/// The CPU every Chromium process under chromedriver spends while the page shows a frame a
/// second, as a share of one core, in all and per kind of process (`--type=renderer`, `gpu-process`,
/// ...; the browser process has none).
async fn steady_cpu(c: &Client, driver_pid: u32, secs: u64) {
    // Let the page settle after the first load.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = tree_ticks(driver_pid);
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let after = tree_ticks(driver_pid);
    let wall = t0.elapsed().as_secs_f64();
    let tick = 100.0; // USER_HZ on Linux
    let share = |kind: Option<&str>| {
        let sum = |m: &[(u32, String, u64)]| -> u64 {
            m.iter()
                .filter(|(_, k, _)| kind.is_none_or(|want| k == want))
                .map(|(_, _, t)| t)
                .sum()
        };
        sum(&after).saturating_sub(sum(&before)) as f64 / tick / wall * 100.0
    };
    let mut kinds: Vec<String> = after.iter().map(|(_, k, _)| k.clone()).collect();
    kinds.sort();
    kinds.dedup();
    let per: Vec<String> = kinds
        .iter()
        .map(|k| format!("{k} {:.2}%", share(Some(k))))
        .collect();
    println!(
        "first_load: steady page cost {:.2}% of a core at 1 Hz over {wall:.0} s, every Chromium \
         process of the session ({})",
        share(None),
        per.join(", ")
    );
    let _ = c;
}

/// (pid, kind, utime + stime) of every process descended from `root` (chromedriver itself
/// excluded); the kind is Chromium's `--type=` or `browser`.
fn tree_ticks(root: u32) -> Vec<(u32, String, u64)> {
    let mut stats = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command's closing parenthesis: state ppid ... utime(12) stime(13).
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let kind = String::from_utf8_lossy(&cmdline)
            .split(['\0', ' '])
            .find_map(|a| a.strip_prefix("--type=").map(str::to_owned))
            .unwrap_or_else(|| "browser".to_owned());
        stats.push((pid, num(1) as u32, kind, num(11) + num(12)));
    }
    let mut tree = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, ppid, kind, ticks) in &stats {
            if *ppid == parent {
                tree.push((*pid, kind.clone(), *ticks));
                frontier.push(*pid);
            }
        }
    }
    tree
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
