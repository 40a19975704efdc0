//! The history on the page, in a real browser (docs/history.md#on-the-page): a `serve` whose
//! history holds an imported log from two hours ago (GPU memory from 40% to 97% halfway), as
//! after a restart. The admin switches the charts to 6 h (bands and the verdict timeline show,
//! in two colours), to 24 h and 7 d, zooms by dragging, rewinds to the pressure by a click on
//! the timeline (the banner turns to it and the bar says when), and goes back to live. A share
//! viewer sees the history too; one whose link is live only gets none of it.

#[path = "common/browser_kit.rs"]
mod browser_kit;
#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/nvsmi_log.rs"]
mod nvsmi_log;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use browser_kit::{attr, browser_profile, start_chromedriver, text, wait_for};
use fantoccini::{Client, Locator};
use std::process::Command;
use std::time::Duration;
use vramio_bin::{Server, TempDir};

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {css}: {e}"));
}

/// Clicks the range button `which` and waits until its answer is drawn; the milliseconds from
/// the click to a frame drawn with it.
async fn show(c: &Client, which: &str) -> f64 {
    browser_kit::click_range_to_drawn(c, which)
        .await
        .unwrap_or_else(|| panic!("the {which} range was not drawn within 25 s"))
}

async fn count(c: &Client, css: &str) -> usize {
    c.find_all(Locator::Css(css)).await.map_or(0, |v| v.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_zoom_rewind_and_back_to_live_and_a_share_viewer_sees_history() {
    let dir = TempDir::new("browser-history");
    let hist = dir.join("history");
    let t0_s = now_ms() / 1000 - 2 * 3600;
    let csv = dir.join("gpu.csv");
    nvsmi_log::memory_fills_halfway(&csv, t0_s);
    let out = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args([
            "import",
            &csv.to_string_lossy(),
            "--into-history",
            "--history-dir",
        ])
        .arg(&hist)
        .output()
        .expect("import");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = dir.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let state = dir.join("state");
    let s = Server::start(
        &state,
        &script,
        &["--port", "0", "--history-dir", &hist.to_string_lossy()],
    );
    let (_driver, driver_port) = start_chromedriver();
    let c = browser_profile(driver_port, "admin").await;
    c.goto(&s.url).await.expect("open the page");
    wait_for(Duration::from_secs(20), "the live charts", || async {
        (count(&c, r#"[data-testid="range-live"][aria-pressed="true"]"#).await == 1).then_some(())
    })
    .await;

    // 6 h: the imported stretch with its bands and a timeline of two severities.
    let ms6 = show(&c, "6h").await;
    assert!(
        count(&c, ".plot path.band").await > 0,
        "bands where points cover many samples"
    );
    assert_eq!(
        count(&c, r#"[data-testid="history-tiers"]"#).await,
        0,
        "every point of the last 6 h is from seconds: no word of minute data"
    );
    let classes = wait_for(Duration::from_secs(10), "the verdict timeline", || async {
        let segs = c
            .find_all(Locator::Css(
                r#"[data-testid="history-timeline"] .replay-seg"#,
            ))
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
        classes.iter().any(|k| k.contains("sev-critical")),
        "{classes:?}"
    );
    let ms24 = show(&c, "24h").await;
    let ms7 = show(&c, "7d").await;
    eprintln!("click to drawn: 6 h {ms6:.0} ms, 24 h {ms24:.0} ms, 7 d {ms7:.0} ms");

    // Drag across the first chart: zoomed to that stretch.
    c.execute(
        r#"
        const plot = document.querySelector('.plot');
        const r = plot.getBoundingClientRect();
        const at = (type, f) => plot.dispatchEvent(new MouseEvent(type, {
            bubbles: true, button: 0, clientX: r.left + r.width * f, clientY: r.top + r.height / 2 }));
        at('mousedown', 0.90); at('mousemove', 0.95); at('mouseup', 0.99);
        "#,
        vec![],
    )
    .await
    .expect("drag");
    wait_for(Duration::from_secs(10), "zoomed", || async {
        (count(&c, r#"[data-testid="range-zoomed"]"#).await == 1).then_some(())
    })
    .await;

    // Back to 6 h, and a click on the critical stretch rewinds the page there.
    show(&c, "6h").await;
    click(
        &c,
        r#"[data-testid="history-timeline"] .replay-seg.sev-critical"#,
    )
    .await;
    let t = wait_for(Duration::from_secs(10), "the rewind bar", || async {
        attr(&c, r#"[data-testid="rewind-bar"]"#, "data-t").await
    })
    .await;
    let t: u64 = t.parse().expect("a time");
    assert!(t >= t0_s * 1000 && t < (t0_s + 600) * 1000, "{t}");
    assert_eq!(
        text(&c, r#"[data-testid="rewind-resolution"]"#)
            .await
            .as_deref(),
        Some("1 s data")
    );
    wait_for(
        Duration::from_secs(10),
        "the banner at that moment",
        || async {
            (attr(&c, r#"[data-testid="verdict-banner"]"#, "data-verdict")
                .await
                .as_deref()
                == Some("gpu_memory_pressure"))
            .then_some(())
        },
    )
    .await;

    // Back to live: the bar goes, the banner is the live host's again.
    click(&c, r#"[data-testid="back-to-live"]"#).await;
    wait_for(Duration::from_secs(10), "live again", || async {
        let gone = count(&c, r#"[data-testid="rewind-bar"]"#).await == 0;
        let verdict = attr(&c, r#"[data-testid="verdict-banner"]"#, "data-verdict").await;
        (gone && verdict.as_deref() != Some("gpu_memory_pressure")).then_some(())
    })
    .await;
    click(&c, r#"[data-testid="range-live"]"#).await;
    let heading = wait_for(Duration::from_secs(10), "the live range", || async {
        (attr(&c, r#"[data-testid="range-live"]"#, "aria-pressed")
            .await
            .as_deref()
            == Some("true"))
        .then_some(())?;
        text(&c, "#charts-h").await
    })
    .await;
    assert!(
        heading.to_lowercase().starts_with("last 15 minutes"),
        "{heading}"
    );

    // A share viewer (user names hidden) sees the history too.
    let made = vramio_bin::run(&["share", "create", "--state-dir", &state.to_string_lossy()]);
    assert!(made.ok(), "share create: {made:?}");
    let link = made.last_line().to_owned();
    let viewer = browser_profile(driver_port, "viewer").await;
    viewer.goto(&link).await.expect("open the share link");
    wait_for(Duration::from_secs(20), "the viewer's page", || async {
        (count(&viewer, r#"[data-testid="range-6h"]"#).await == 1).then_some(())
    })
    .await;
    show(&viewer, "6h").await;
    assert!(count(&viewer, ".plot path.band").await > 0);
    assert!(
        count(&viewer, r#"[data-testid="history-timeline"] .replay-seg"#).await >= 2,
        "the viewer's timeline"
    );

    // A link made live only: the live charts and no way into the stored history, which the
    // server refuses it too.
    let made = vramio_bin::run(&[
        "share",
        "create",
        "--live-only",
        "--state-dir",
        &state.to_string_lossy(),
    ]);
    assert!(made.ok(), "share create --live-only: {made:?}");
    let link = made.last_line().to_owned();
    let live = browser_profile(driver_port, "live-only").await;
    live.goto(&link).await.expect("open the live-only link");
    let note = wait_for(Duration::from_secs(20), "the live-only note", || async {
        text(&live, r#"[data-testid="live-only"]"#).await
    })
    .await;
    assert!(note.contains("live data only"), "{note}");
    let badge = text(&live, "#viewer-badge").await.unwrap_or_default();
    assert!(badge.contains("live only"), "{badge}");
    assert_eq!(count(&live, r#"[data-testid="range-6h"]"#).await, 0);
    assert!(count(&live, ".plot").await > 0, "the live charts");
    let status = live
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             fetch('/api/history?from_ms=1&to_ms=2').then(r => done(r.status), () => done(0));",
            vec![],
        )
        .await
        .expect("a fetch");
    assert_eq!(status.as_u64(), Some(403), "the server refuses it");
    live.close().await.expect("close");
}
