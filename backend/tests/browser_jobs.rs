//! The Jobs table in a real browser (headless Chromium through chromedriver) against the real
//! `vramio` on the fake NVML: two jobs of this machine's real processes, biggest GPU memory
//! first, a job's detail opened from its row, and each GPU card's processes labelled with their
//! job.

#[path = "common/browser_kit.rs"]
mod browser_kit;

use browser_kit::*;
use fantoccini::Locator;
use std::process::{Child, Command};
use std::time::Duration;

/// A process that holds "GPU memory" in the script: `sleep` under `sh` (a launcher), so each is
/// a process-tree job of its own.
struct Sleeper(Child, u32);

impl Sleeper {
    fn start() -> Self {
        let child = Command::new("sh")
            .args(["-c", "sleep 600; true"])
            .spawn()
            .expect("sh");
        let sh = child.id();
        // Owned (and so killed) from here on, whatever happens next.
        let mut me = Sleeper(child, 0);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let children = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children"))
                .unwrap_or_default();
            if let Some(pid) = children.split_whitespace().find_map(|p| p.parse().ok()) {
                me.1 = pid;
                return me;
            }
            assert!(std::time::Instant::now() < deadline, "sleep did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        if self.1 != 0 {
            let _ = Command::new("kill").arg(self.1.to_string()).status();
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn script(small: u32, big: u32) -> String {
    let device = |i: u32, pid: u32, mib: u64| {
        format!(
            r#"{{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0000000{i}-2222-3333-4444-555555555555",
              "memory_total_mib": 81559, "repeat": false, "lost_at_s": null, "slow_ms": 0,
              "timeline": [{{"at_s": 0, "memory_used_mib": {mib}, "util_gpu": 40, "util_mem": 10,
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

    let rows = wait_for(Duration::from_secs(20), "two job rows", || async {
        let rows = c
            .find_all(Locator::Css(r#"[data-testid="job-row"]"#))
            .await
            .ok()?;
        let mut keys = Vec::new();
        for r in rows {
            keys.push(r.attr("data-job").await.ok()??);
        }
        (keys.len() == 2).then_some(keys)
    })
    .await;
    assert_eq!(
        rows,
        [format!("process:{}", big.1), format!("process:{}", small.1)],
        "biggest GPU memory first"
    );
    let vram = text(&c, r#"[data-testid="job-row"] [data-testid="job-vram"]"#).await;
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

    c.find(Locator::Css(&format!(
        r#"[data-job="process:{}"] button.job-name"#,
        small.1
    )))
    .await
    .expect("the small job's button")
    .click()
    .await
    .expect("click");
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

    let label = text(
        &c,
        &format!(
            r#"[data-testid="gpu-card"][data-gpu-index="1"] [data-testid="gpu-proc"][data-pid="{}"] [data-testid="gpu-proc-job"]"#,
            big.1
        ),
    )
    .await;
    assert_eq!(label, Some(format!("process {}", big.1)));
    c.close().await.expect("close browser");
    server.terminate();
}
