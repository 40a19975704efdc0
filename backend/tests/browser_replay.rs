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

/// `vramio replay` of `log` (written to a temp dir) at `speed`, and a browser on its page.
async fn replay_in_browser(
    what: &str,
    log: &str,
    speed: &str,
) -> (TempDir, Server, browser_kit::Killed, fantoccini::Client) {
    let dir = TempDir::new(what);
    let csv = dir.join("run.csv");
    std::fs::write(&csv, log).expect("log");
    let script = dir.join("unused.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let s = Server::start_command(
        "replay",
        &dir.join("state"),
        &script,
        &[&csv.to_string_lossy(), "--port", "0", "--speed", speed],
    );
    let (driver, driver_port) = start_chromedriver();
    let c = browser(driver_port).await;
    c.goto(&s.url).await.expect("open the page");
    (dir, s, driver, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_bar_shows_the_verdict_timeline_and_the_page_follows_the_play() {
    let (_dir, _s, _driver, c) =
        replay_in_browser("browser-replay", &long_gpu_csv(10, 1), "10").await;

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

/// `minutes` of `gpus` GPUs at 1 Hz from 10:00, 80-96% busy: 40% memory in the first half, 97%
/// in the second.
fn long_gpu_csv(minutes: u32, gpus: u32) -> String {
    let mut out = String::from(
        "timestamp, index, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%]\n",
    );
    let secs = minutes * 60;
    for s in 0..secs {
        let used = if s < secs / 2 { 32_000 } else { 79_100 };
        for g in 0..gpus {
            let t = 10 * 3600 + s;
            let _ = writeln!(
                out,
                "2024/05/{:02} {:02}:{:02}:{:02}.{g:03}, {g}, NVIDIA H100 80GB HBM3, 81559 MiB, {used} MiB, {} %",
                1 + t / 86_400,
                t / 3600 % 24,
                t / 60 % 60,
                t % 60,
                80 + s % 17
            );
        }
    }
    out
}

/// Drags the scrubber to `share` of the span the way a hand does (the value moves, `input`
/// fires), then waits until the page shows that moment: GPU 0's memory at `want_mib` and the
/// banner at `want_verdict`, painted. Answers the milliseconds it took in the page.
const DRAG: &str = r#"
const [share, wantBytes, wantVerdict, done] = arguments;
const s = document.getElementById('replay-scrub');
const shown = () => {
  const mem = document.querySelector('[data-testid="gpu-mem-used"]');
  const banner = document.querySelector('[data-testid="verdict-banner"]');
  return mem && banner && mem.dataset.bytes === wantBytes && banner.dataset.verdict === wantVerdict;
};
const t0 = performance.now();
s.value = String(Number(s.min) + (Number(s.max) - Number(s.min)) * share);
s.dispatchEvent(new Event('input', { bubbles: true }));
const check = () => {
  if (shown()) {
    requestAnimationFrame(() => {
      const painted = performance.now() - t0;
      const posts = performance.getEntriesByType('resource')
        .filter(e => e.name.endsWith('/api/replay') && e.initiatorType === 'fetch' && e.startTime >= t0);
      const answered = posts.length ? posts[posts.length - 1].responseEnd - t0 : -1;
      done([painted, answered]);
    });
  } else if (performance.now() - t0 > 20000) {
    done([-1, -1]);
  } else {
    requestAnimationFrame(check);
  }
};
check();
"#;

async fn lit_leaf(c: &fantoccini::Client) -> Option<String> {
    for leaf in c
        .find_all(Locator::Css(
            r#"[data-testid="tree-leaf"][data-lit="true"]"#,
        ))
        .await
        .ok()?
    {
        if let Some(v) = leaf.attr("data-verdict").await.ok()? {
            return Some(v);
        }
    }
    None
}

/// Scrubbing: clicking the timeline's pressure stretch jumps to where it began; dragging the
/// playhead to before and after the change turns the banner, the lit path and the GPU card with
/// it (the page's own time from drag to paint is printed); at 60x the charts move.
/// `VRAMIO_SCRUB_MINUTES` and `VRAMIO_SCRUB_GPUS` (default 20 and 1) size the log, so the same
/// test times a day of 8 GPUs: `VRAMIO_SCRUB_MINUTES=1440 VRAMIO_SCRUB_GPUS=8`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrubbing_moves_the_whole_page_to_that_moment() {
    let env = |name: &str, default: u32| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (minutes, gpus) = (env("VRAMIO_SCRUB_MINUTES", 20), env("VRAMIO_SCRUB_GPUS", 1));
    let (_dir, _s, _driver, c) =
        replay_in_browser("browser-scrub", &long_gpu_csv(minutes, gpus), "1").await;
    let banner = r#"[data-testid="verdict-banner"]"#;
    let within = Duration::from_secs(60);

    // Click the pressure stretch of the timeline: the page jumps to where it began.
    let from = wait_for(within, "the pressure stretch", || async {
        let seg = c
            .find(Locator::Css("#replay-timeline .replay-seg.sev-critical"))
            .await
            .ok()?;
        let from = seg.attr("data-from").await.ok()??;
        seg.click().await.ok()?;
        Some(from)
    })
    .await;
    wait_for(within, "the pressure at the change", || async {
        (attr(&c, banner, "data-verdict").await.as_deref() == Some("gpu_memory_pressure"))
            .then_some(())
    })
    .await;
    assert_eq!(lit_leaf(&c).await.as_deref(), Some("gpu_memory_pressure"));
    assert_eq!(
        text(&c, r#"[data-testid="conn-badge"]"#)
            .await
            .as_deref()
            .map(str::trim),
        Some("replay"),
        "the badge says what the page shows"
    );
    let from_ms: u64 = from.parse().expect("a time");
    let at = wait_for(within, "the replay's position", || async {
        let r = c
            .execute_async(
                "fetch('/api/replay').then(r => r.json()).then(arguments[0])",
                vec![],
            )
            .await
            .ok()?;
        r["position_ms"].as_u64()
    })
    .await;
    assert!(
        (from_ms..from_ms + 15_000).contains(&at),
        "jumped to {at}, the stretch begins at {from_ms}"
    );

    // Drag before the change, then after it: everything follows.
    let mib = |m: u64| (m << 20).to_string();
    for (share, bytes, verdict) in [
        (0.25, mib(32_000), "no_data"),
        (0.75, mib(79_100), "gpu_memory_pressure"),
        (0.10, mib(32_000), "no_data"),
    ] {
        let ms = c
            .execute_async(DRAG, vec![share.into(), bytes.into(), verdict.into()])
            .await
            .expect("the drag");
        let answered = ms[1].as_f64().unwrap_or(-1.0);
        let ms = ms[0].as_f64().unwrap_or(-1.0);
        assert!(
            ms >= 0.0,
            "the page did not show {share} of the span ({verdict})"
        );
        println!(
            "scrub in Chromium ({minutes} min of {gpus} GPU(s) at 1 Hz): drag to {:.0}% painted in {ms:.0} ms (its POST answered at {:.0} ms)",
            share * 100.0,
            answered
        );
        let pressure = verdict == "gpu_memory_pressure";
        let leaf = lit_leaf(&c).await;
        assert_eq!(
            leaf.as_deref() == Some("gpu_memory_pressure"),
            pressure,
            "lit leaf at {share}: {leaf:?}"
        );
        let gpu_node = attr(
            &c,
            r#"[data-testid="tree-node"][data-node="gpu_memory"]"#,
            "data-answer",
        )
        .await;
        let want = if pressure { "yes" } else { "no" };
        assert_eq!(
            gpu_node.as_deref(),
            Some(want),
            "GPU memory node at {share}"
        );
    }

    // 60x and play: the charts move.
    c.find(Locator::Css(r#".replay-speed-btn[data-speed="60"]"#))
        .await
        .expect("the 60x button")
        .click()
        .await
        .expect("click 60x");
    wait_for(within, "60x", || async {
        attr(&c, r#".replay-speed-btn[data-speed="60"]"#, "aria-pressed")
            .await
            .filter(|p| p == "true")
    })
    .await;
    let paths = || async {
        let mut all = String::new();
        for p in c
            .find_all(Locator::Css(r#"[data-testid="chart"] path"#))
            .await
            .ok()?
        {
            all.push_str(&p.attr("d").await.ok()??);
            all.push('|');
        }
        Some(all)
    };
    let first = paths().await;
    assert!(first.as_ref().is_some_and(|p| p.len() > 2), "charts drawn");
    wait_for(Duration::from_secs(20), "the charts to move", || async {
        paths()
            .await
            .filter(|d| Some(d) != first.as_ref())
            .map(|_| ())
    })
    .await;
    c.close().await.expect("close");
}
