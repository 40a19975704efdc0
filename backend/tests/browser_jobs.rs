//! The Jobs table in a real browser (headless Chromium through chromedriver) against the real
//! `vramio` on the fake NVML: two jobs of this machine's real processes, biggest GPU memory
//! first until the diagnosis comes, then the starved one first; sorting by a header and back; a
//! job's detail with its verdict; the banner naming the job; and each GPU card's processes
//! labelled with their job; a job's whole run from the stored history, and a share viewer
//! without user names told that jobs' history is not theirs to see.

#[path = "common/browser_kit.rs"]
mod browser_kit;
#[path = "common/sleeper.rs"]
mod sleeper;

use browser_kit::*;
use fantoccini::Locator;
use sleeper::Sleeper;
use std::process::Command;
use std::time::Duration;

fn script(small: u32, big: u32) -> String {
    // The small job's GPU waits (15% busy), the big one's works (90%).
    let device = |i: u32, pid: u32, mib: u64| {
        let util = if i == 0 { 15 } else { 90 };
        format!(
            r#"{{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0000000{i}-2222-3333-4444-555555555555",
              "memory_total_mib": 81559, "repeat": false, "lost_at_s": null, "slow_ms": 0,
              "timeline": [{{"at_s": 0, "memory_used_mib": {mib}, "util_gpu": {util}, "util_mem": 10,
                             "temperature_c": 50, "power_w": 300,
                             "processes": [{{"pid": {pid}, "used_mib": {mib}}}]}}]}}"#
        )
    };
    format!(
        r#"{{"driver_version": "580.00", "devices": [{}, {}]}}"#,
        device(0, small, 2_000),
        device(1, big, 30_000)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_table_lists_jobs_biggest_first_and_opens_a_jobs_detail() {
    let small = Sleeper::start();
    let big = Sleeper::start();
    let nvml = fake_nvml();
    let script = write_script("jobs.json", &script(small.1, big.1));
    let port = free_port();
    let (server, url) = start_vramio(port, &nvml, Some(&script));
    let (_driver, driver_port) = start_chromedriver();
    let c = browser(driver_port).await;
    c.goto(&url).await.expect("open page");

    let (big_key, small_key) = (format!("process:{}", big.1), format!("process:{}", small.1));
    let rows = row_keys(&c, 2).await;
    // Before the first diagnosis the server's order stands (its first frames come at once; the
    // first diagnosis needs three).
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.contains(&big_key) && rows.contains(&small_key),
        "{rows:?}"
    );
    // Then the worst verdict first: the starved small job above the healthy big one.
    let starved = wait_for(Duration::from_secs(30), "the jobs' verdicts", || async {
        let keys = row_keys(&c, 2).await;
        let first = attr(
            &c,
            r#"[data-testid="job-row"] [data-testid="job-verdict"]"#,
            "data-verdict",
        )
        .await?;
        (keys == [small_key.clone(), big_key.clone()]).then_some(first)
    })
    .await;
    assert!(
        [
            "gpu_underutilized",
            "input_bound_cpu",
            "input_bound_disk",
            "checkpoint_stall"
        ]
        .contains(&starved.as_str()),
        "{starved}"
    );
    let big_verdict = attr(
        &c,
        &format!(r#"[data-job="{big_key}"] [data-testid="job-verdict"]"#),
        "data-verdict",
    )
    .await;
    assert_eq!(big_verdict.as_deref(), Some("healthy"));
    let banner = wait_for(
        Duration::from_secs(10),
        "the banner naming the job",
        || async {
            // `process PID (sleep) of USER on GPU 0: ` (the owner shows: auth is the admin's).
            text(&c, r#"[data-testid="verdict-banner"]"#)
                .await
                .filter(|t| {
                    t.contains(&format!("process {} (sleep) of ", small.1))
                        && t.contains(" on GPU 0: gpu 0 mean utilization 15%")
                })
        },
    )
    .await;
    assert!(!banner.contains(&format!("process {}", big.1)), "{banner}");

    // Sorted by VRAM: biggest first, then reversed on a second click.
    click(&c, r#"th button.sort[data-sort="VRAM"]"#).await;
    wait_for(Duration::from_secs(10), "sorted by VRAM", || async {
        (row_keys(&c, 2).await == [big_key.clone(), small_key.clone()]).then_some(())
    })
    .await;
    click(&c, r#"th button.sort[data-sort="VRAM"]"#).await;
    wait_for(Duration::from_secs(10), "VRAM ascending", || async {
        let order = attr(&c, r#"th[aria-sort]"#, "aria-sort").await;
        (row_keys(&c, 2).await == [small_key.clone(), big_key.clone()]
            && order.as_deref() == Some("ascending"))
        .then_some(())
    })
    .await;
    let vram = text(
        &c,
        &format!(r#"[data-job="{big_key}"] [data-testid="job-vram"]"#),
    )
    .await;
    assert!(
        vram.as_deref().is_some_and(|v| v.contains("29.3 GiB")),
        "{vram:?}"
    );
    assert!(
        c.find(Locator::Css(r#"[data-testid="job-detail"]"#))
            .await
            .is_err(),
        "details start closed"
    );

    click(&c, &format!(r#"[data-job="{small_key}"] button.job-name"#)).await;
    let io = wait_for(Duration::from_secs(10), "the job's detail", || async {
        text(&c, r#"[data-testid="job-detail"] [data-testid="job-io"]"#).await
    })
    .await;
    assert!(
        io.contains("/proc/<pid>/io"),
        "the I/O says what it counts: {io}"
    );
    let detail = text(&c, r#"[data-testid="job-detail"]"#)
        .await
        .unwrap_or_default();
    assert!(detail.contains("GPU 0: 2.0 GiB"), "{detail}");
    let why = text(&c, r#"[data-testid="job-detail"] [data-testid="job-why"]"#)
        .await
        .unwrap_or_default();
    assert!(
        why.contains("gpu 0 mean utilization 15%"),
        "the detail shows the evidence: {why}"
    );

    let label = text(
        &c,
        &format!(
            r#"[data-testid="gpu-card"][data-gpu-index="1"] [data-testid="gpu-proc"][data-pid="{}"] [data-testid="gpu-proc-job"]"#,
            big.1
        ),
    )
    .await;
    assert_eq!(label, Some(format!("process {}", big.1)));
    let owner = text(
        &c,
        &format!(r#"[data-job="{small_key}"] [data-testid="job-user"]"#),
    )
    .await
    .unwrap_or_default();
    assert!(
        !owner.is_empty() && owner != "—",
        "the owner sees the user: {owner:?}"
    );

    // The big job's whole run, from the stored history: the charts zoom to the stretch it was
    // seen and its own GPU memory is drawn (the first batch is committed after its 10 s window).
    let run = format!(r#"[data-job="{big_key}"] [data-testid="job-run-link"]"#);
    wait_for(
        Duration::from_secs(40),
        "the big job's whole run",
        || async {
            // Clicked in the page: the first click scrolls the charts up, and the row may be
            // off screen after.
            c.execute(
                "const b = document.querySelector(arguments[0]); if (b) { b.click(); }",
                vec![run.clone().into()],
            )
            .await
            .ok()?;
            tokio::time::sleep(Duration::from_millis(800)).await;
            let job = attr(&c, r#"[data-testid="job-run"]"#, "data-job").await?;
            let lines = c
                .find_all(Locator::Css(
                    r#"[data-testid="job-run"] .plot path:not(.band)"#,
                ))
                .await
                .ok()?;
            (job == big_key && !lines.is_empty()).then_some(())
        },
    )
    .await;
    let run_text = text(&c, r#"[data-testid="job-run"]"#)
        .await
        .unwrap_or_default();
    assert!(
        run_text.contains(&format!("The run of process {}", big.1))
            && run_text.contains("Its GPU memory")
            && run_text.contains("GPU 1"),
        "{run_text}"
    );
    assert!(
        !run_text.contains("GPU 0"),
        "only the job's own GPU: {run_text}"
    );
    // The run was looked for and shown with `job=`: no other job's series were read.
    let asked = c
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/api/history?'));",
            vec![],
        )
        .await
        .expect("resource timing");
    let asked: Vec<String> = serde_json::from_value(asked).expect("names");
    let want = format!("job={}", big_key.replace(':', "%3A"));
    assert!(
        !asked.is_empty() && asked.iter().all(|n| n.contains(&want)),
        "{want} in {asked:?}"
    );
    assert_eq!(
        attr(&c, r#"[data-testid="range-zoomed"]"#, "aria-pressed")
            .await
            .as_deref(),
        Some("true"),
        "the charts show the run's stretch"
    );
    click(&c, r#"[data-testid="range-live"]"#).await;
    wait_for(
        Duration::from_secs(10),
        "live again, the run hidden",
        || async {
            c.find(Locator::Css(r#"[data-testid="job-run"]"#))
                .await
                .is_err()
                .then_some(())
        },
    )
    .await;
    c.close().await.expect("close browser");

    // A share link without user names, opened in a fresh profile: the same jobs and verdicts,
    // no user anywhere on the page.
    let made = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(["share", "create", "--expires", "1h", "--state-dir"])
        .arg(state_dir(port))
        .output()
        .expect("vramio share create");
    assert!(made.status.success(), "{made:?}");
    let stdout = String::from_utf8_lossy(&made.stdout);
    let link = stdout.lines().last().expect("the link").trim().to_owned();
    assert!(link.contains("/s/"), "{link}");
    let v = browser_profile(driver_port, "viewer").await;
    v.goto(&link).await.expect("open the share link");
    let banner = wait_for(Duration::from_secs(30), "the viewer's banner", || async {
        let keys = row_keys(&v, 2).await;
        let banner = text(&v, r#"[data-testid="verdict-banner"]"#).await?;
        (keys == [small_key.clone(), big_key.clone()]
            && banner.contains(&format!("process {} (sleep) on GPU 0: ", small.1)))
        .then_some(banner)
    })
    .await;
    let users = text(
        &v,
        &format!(r#"[data-job="{small_key}"] [data-testid="job-user"]"#),
    )
    .await;
    assert_eq!(users.as_deref(), Some("—"), "no user for a share viewer");
    for part in [r#"[data-testid="jobs"]"#, r#"[data-testid="gpu-card"]"#] {
        let shown = text(&v, part).await.unwrap_or_default();
        assert!(
            !shown
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w == owner),
            "{owner} is not in {part}: {shown}"
        );
    }
    assert!(!banner.contains(" of "), "{banner}");
    // Its jobs' history is not offered either (a job's id can name its owner; the server
    // leaves job series out of such a link's answers): no row has a whole-run link.
    assert!(
        v.find_all(Locator::Css(r#"[data-testid="job-run-link"]"#))
            .await
            .expect("a query")
            .is_empty(),
        "no whole-run link for a link that hides user names"
    );
    v.close().await.expect("close browser");
    server.terminate();
}

/// The job rows' keys, once there are `n`.
async fn row_keys(c: &fantoccini::Client, n: usize) -> Vec<String> {
    wait_for(Duration::from_secs(20), "the job rows", || async {
        let rows = c
            .find_all(Locator::Css(r#"[data-testid="job-row"]"#))
            .await
            .ok()?;
        let mut keys = Vec::new();
        for r in rows {
            keys.push(r.attr("data-job").await.ok()??);
        }
        (keys.len() == n).then_some(keys)
    })
    .await
}

async fn attr(c: &fantoccini::Client, css: &str, name: &str) -> Option<String> {
    c.find(Locator::Css(css))
        .await
        .ok()?
        .attr(name)
        .await
        .ok()?
}

async fn click(c: &fantoccini::Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {css}: {e}"));
}
