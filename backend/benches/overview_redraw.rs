//! The hub's overview in headless Chromium with 64 hosts of 8 GPUs, each sending a frame a second
//! (docs/performance.md#targets / issue 8: redraw <= 16 ms a frame): once every card is up, the page's frame
//! intervals are recorded with `requestAnimationFrame` for a steady window; a redraw that takes
//! longer than a frame shows as an interval over 16.7 ms. Prints the percentiles.
//!
//! `cargo bench -p vramio --bench overview_redraw` (needs `chromium` and `chromedriver`, as the
//! browser tests do); `VRAMIO_OVERVIEW_HOSTS` (default 64), `VRAMIO_OVERVIEW_SECS` (default 10).

#[path = "../tests/common/browser_kit.rs"]
mod browser_kit;
#[path = "common/sim_peers.rs"]
mod sim_peers;

use browser_kit::{browser_profile, start_chromedriver, wait_for};
use fantoccini::Locator;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

const RECORD: &str = r#"
window.__frames = [];
let last = performance.now();
const tick = (t) => { window.__frames.push(t - last); last = t; requestAnimationFrame(tick); };
requestAnimationFrame(tick);
"#;

fn main() {
    let n: usize = std::env::var("VRAMIO_OVERVIEW_HOSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let secs: u64 = std::env::var("VRAMIO_OVERVIEW_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = std::env::temp_dir().join(format!("vramio-overview-{}", std::process::id()));
    let (_hub, url) = sim_peers::start_fleet(&runtime, n, &dir, Arc::new(AtomicU64::new(0)));
    let (_driver, driver_port) = start_chromedriver();
    let frames: Vec<f64> = runtime.block_on(async {
        let c = browser_profile(driver_port, "overview-bench").await;
        c.goto(&url).await.expect("open the hub");
        wait_for(Duration::from_secs(60), "every card up", || async {
            let up = c
                .find_all(Locator::Css(
                    r#"[data-testid="host-card"][data-state="up"]"#,
                ))
                .await
                .ok()?;
            (up.len() == n).then_some(())
        })
        .await;
        c.execute(RECORD, vec![]).await.expect("record frames");
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let v = c
            .execute("return window.__frames.slice(1);", vec![])
            .await
            .expect("read frames");
        c.close().await.expect("close");
        serde_json::from_value(v).expect("numbers")
    });
    let mut sorted = frames.clone();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        sorted
            .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let over = frames.iter().filter(|f| **f > 17.5).count();
    println!(
        "overview_redraw: {n} hosts x 8 GPUs, {} frames in {secs} s: frame interval p50 {:.1} ms, \
         p99 {:.1} ms, max {:.1} ms; {over} frames over 17.5 ms",
        frames.len(),
        pct(0.5),
        pct(0.99),
        sorted.last().copied().unwrap_or(f64::NAN)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
