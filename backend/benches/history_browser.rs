//! From click to drawn in Chromium on a long stored history (docs/performance.md#history):
//! `serve` on the 30-day store of the target host (8 GPUs, 16 disks, 20 mounts, 4 jobs) that the
//! history_cost bench filled and kept, the page in headless Chromium, and the 24 h, 7 d and 30 d
//! range buttons clicked five times each (live in between, so each click asks the server again).
//! The figure is the page's own: from the click to the animation frame after the charts were
//! drawn with the answer.
//!
//! `VRAMIO_HISTORY_KEEP=/tmp/h30 cargo bench -p vramio --bench history_cost`, then
//! `VRAMIO_HISTORY_DIR=/tmp/h30 cargo bench -p vramio --bench history_browser`.

#[path = "../tests/common/browser_kit.rs"]
mod browser_kit;
#[path = "../tests/common/fake_nvml.rs"]
mod fake_nvml;
#[path = "../tests/common/vramio_bin.rs"]
mod vramio_bin;

use browser_kit::{browser_profile, start_chromedriver, wait_for};
use fantoccini::{Client, Locator};
use std::time::Duration;
use vramio_bin::{Server, TempDir};

/// Clicks the range button `which` and waits until its answer is drawn (the tests' measure);
/// past 25 s, says what the page shows. Also returns how long the answer's request took, from
/// the browser's Resource Timing: `[sent to last byte, sent to first byte, bytes on the wire,
/// bytes of JSON]`.
async fn show(c: &Client, which: &str) -> (f64, [f64; 4]) {
    if let Some(ms) = browser_kit::click_range_to_drawn(c, which).await {
        let fetch = c
            .execute(
                "const e = performance.getEntriesByType('resource').filter(e => e.name.includes('/api/history?')).pop(); \
                 performance.clearResourceTimings(); \
                 return e ? [e.responseEnd - e.startTime, e.responseStart - e.startTime, e.encodedBodySize, e.decodedBodySize] : [];",
                vec![],
            )
            .await
            .ok()
            .and_then(|v| serde_json::from_value::<[f64; 4]>(v).ok())
            .unwrap_or([-1.0; 4]);
        return (ms, fetch);
    }
    let said = c
        .find(Locator::Css("body"))
        .await
        .expect("the page")
        .text()
        .await
        .unwrap_or_default();
    panic!("the {which} range was not drawn within 25 s; the page says: {said}");
}

async fn live(c: &Client) {
    wait_for(Duration::from_secs(20), "live", || async {
        c.execute(
            "const b = document.querySelector('[data-testid=\"range-live\"]'); if (b) { b.click(); }",
            vec![],
        )
        .await
        .ok()?;
        c.find(Locator::Css("#charts-h"))
            .await
            .ok()?
            .text()
            .await
            .ok()
            // Rendered text (the heading is upper-cased by the style sheet).
            .filter(|t| t.to_lowercase().starts_with("last 15"))
    })
    .await;
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Ok(hist) = std::env::var("VRAMIO_HISTORY_DIR") else {
        eprintln!(
            "history_browser: set VRAMIO_HISTORY_DIR to a store the history_cost bench kept (VRAMIO_HISTORY_KEEP)"
        );
        return;
    };
    let dir = TempDir::new("history-browser");
    let script = dir.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let s = Server::start(
        &dir.join("state"),
        &script,
        &["--port", "0", "--history-dir", &hist],
    );
    let (_driver, driver_port) = start_chromedriver();
    let c = browser_profile(driver_port, "bench").await;
    c.goto(&s.url).await.expect("open the page");
    live(&c).await;
    println!("history_browser: click to drawn in headless Chromium, {hist}");
    for which in ["24h", "7d", "30d"] {
        let (mut ms, mut fetch) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let (m, f) = show(&c, which).await;
            ms.push(m);
            fetch.push(f);
            live(&c).await;
        }
        ms.sort_by(f64::total_cmp);
        let median = |i: usize| {
            let mut v: Vec<f64> = fetch.iter().map(|f: &[f64; 4]| f[i]).collect();
            v.sort_by(f64::total_cmp);
            v[2]
        };
        println!(
            "  {which}: median {:.0} ms (of 5: {}); the answer's request {:.0} ms of it \
             ({:.0} ms to its first byte; {:.0} KB on the wire for {:.0} KB of JSON)",
            ms[2],
            ms.iter()
                .map(|m| format!("{m:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            median(0),
            median(1),
            median(2) / 1e3,
            median(3) / 1e3,
        );
    }
    c.close().await.expect("close");
}
