//! `vramio replay` in a real browser: a log whose verdict changes halfway (GPU memory from 40% to
//! 97%) is played at 10x; the page shows the replay bar with the verdict timeline in two colours,
//! its position moves, Pause holds it, and at full speed the banner turns to
//! `gpu_memory_pressure` as the second half plays.

#[path = "common/browser_kit.rs"]
mod browser_kit;
#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use browser_kit::{attr, browser, start_chromedriver, text, wait_for};
use fantoccini::Locator;
use std::fmt::Write;
use std::time::Duration;
use vramio_bin::{Server, TempDir};

/// 120 s of one GPU at 1 Hz: 40% memory for the first minute, 97% for the second.
fn gpu_csv() -> String {
    let mut out = String::from(
        "timestamp, index, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%]\n",
    );
    for s in 0..120u32 {
        let used = if s < 60 { 32_000 } else { 79_100 };
        let _ = writeln!(
            out,
            "2024/05/01 10:{:02}:{:02}.000, 0, NVIDIA H100 80GB HBM3, 81559 MiB, {used} MiB, 92 %",
            s / 60,
            s % 60
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_bar_shows_the_verdict_timeline_and_the_page_follows_the_play() {
    let dir = TempDir::new("browser-replay");
    let csv = dir.join("run.csv");
    std::fs::write(&csv, gpu_csv()).expect("log");
    let script = dir.join("unused.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let s = Server::start_command(
        "replay",
        &dir.join("state"),
        &script,
        &[&csv.to_string_lossy(), "--port", "0", "--speed", "10"],
    );
    let (_driver, driver_port) = start_chromedriver();
    let c = browser(driver_port).await;
    c.goto(&s.url).await.expect("open the page");

    // The bar, with the timeline worked out: healthy (ok) then pressure (critical).
    let classes = wait_for(Duration::from_secs(20), "the verdict timeline", || async {
        let segs = c
            .find_all(Locator::Css("#replay-timeline .replay-seg"))
            .await
            .ok()?;
        let mut classes = Vec::new();
        for seg in segs {
            classes.push(seg.attr("class").await.ok()??);
        }
        (classes.len() >= 2).then_some(classes)
    })
    .await;
    assert!(
        classes.iter().any(|c| c.contains("sev-critical")),
        "{classes:?}"
    );
    assert!(
        classes.first().is_some_and(|c| !c.contains("sev-critical")),
        "the first half is not the pressure: {classes:?}"
    );

    // The position moves as the frames play.
    let first = text(&c, "#replay-pos").await.unwrap_or_default();
    wait_for(Duration::from_secs(20), "the position to move", || async {
        text(&c, "#replay-pos")
            .await
            .filter(|t| *t != first)
            .map(|_| ())
    })
    .await;

    // Pause: the position stops.
    c.find(Locator::Css("#replay-toggle"))
        .await
        .expect("the pause button")
        .click()
        .await
        .expect("click pause");
    wait_for(Duration::from_secs(10), "paused", || async {
        (attr(&c, "#replay-toggle", "data-playing").await.as_deref() == Some("false")).then_some(())
    })
    .await;
    let held = text(&c, "#replay-pos").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        text(&c, "#replay-pos").await,
        held,
        "paused, the position holds"
    );

    // As fast as it goes, then play: the banner follows the frames into the pressure.
    c.find(Locator::Css(r#".replay-speed-btn[data-speed="max"]"#))
        .await
        .expect("the max speed button")
        .click()
        .await
        .expect("click max");
    wait_for(Duration::from_secs(10), "full speed", || async {
        text(&c, "#replay-speed")
            .await
            .filter(|t| t == "full speed")
            .map(|_| ())
    })
    .await;
    c.find(Locator::Css("#replay-toggle"))
        .await
        .expect("the play button")
        .click()
        .await
        .expect("click play");
    let verdict = wait_for(Duration::from_secs(20), "the pressure verdict", || async {
        attr(&c, r#"[data-testid="verdict-banner"]"#, "data-verdict")
            .await
            .filter(|v| v == "gpu_memory_pressure")
    })
    .await;
    assert_eq!(verdict, "gpu_memory_pressure");
    c.close().await.expect("close");
}
