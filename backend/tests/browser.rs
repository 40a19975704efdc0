//! The page in a real browser: headless Debian Chromium, driven through chromedriver (fantoccini),
//! against the real `vramio` binary sampling this host with the fake NVML library.
//!
//! Needs `chromium` and `chromedriver` on PATH and the frontend bundle in `frontend/dist`
//! (`cargo xtask test` builds it and checks for both).

#[path = "common/browser_kit.rs"]
mod browser_kit;

use browser_kit::*;
use fantoccini::{Client, Locator};
use shared::diagnosis::Diagnosis;
use shared::diagnosis::words::{Tz, evidence_text, order_findings, reason_with_jobs};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const MIB: u64 = 1024 * 1024;

fn two_gpu_script(my_pid: u32) -> String {
    format!(
        r#"{{"driver_version": "580.00", "devices": [
      {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-11111111-2222-3333-4444-555555555555",
        "memory_total_mib": 81559, "repeat": false, "lost_at_s": null, "slow_ms": 0,
        "timeline": [{{"at_s": 0, "memory_used_mib": 1200, "util_gpu": 5, "util_mem": 1,
                       "temperature_c": 35, "power_w": 70,
                       "processes": [{{"pid": {my_pid}, "used_mib": 1100}}]}},
                     {{"at_s": 120, "memory_used_mib": 78000, "util_gpu": 97}}]}},
      {{"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "memory_total_mib": 40960, "repeat": false, "lost_at_s": null, "slow_ms": 0,
        "timeline": [{{"at_s": 0, "memory_used_mib": 20480, "util_gpu": 50, "util_mem": 20,
                       "temperature_c": 51, "power_w": 250, "processes": []}}]}}]}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_page_shows_scripted_gpus_changes_and_survives_a_restart() {
    let nvml = fake_nvml();
    let script = write_script("two-gpus.json", &two_gpu_script(std::process::id()));
    let port = free_port();
    let (server, url) = start_vramio(port, &nvml, Some(&script));
    let (_driver, driver_port) = start_chromedriver();
    let c = browser(driver_port).await;
    c.goto(&url).await.expect("open page");

    wait_for(
        Duration::from_secs(20),
        "connection badge to be open",
        || async {
            (attr(&c, r#"[data-testid="conn-badge"]"#, "data-state")
                .await
                .as_deref()
                == Some("open"))
            .then_some(())
        },
    )
    .await;
    let names = wait_for(Duration::from_secs(10), "two GPU cards", || async {
        let cards = c
            .find_all(Locator::Css(r#"[data-testid="gpu-card"]"#))
            .await
            .ok()?;
        if cards.len() != 2 {
            return None;
        }
        let mut names = Vec::new();
        for card in cards {
            names.push(
                card.find(Locator::Css(r#"[data-testid="gpu-name"]"#))
                    .await
                    .ok()?
                    .text()
                    .await
                    .ok()?,
            );
        }
        Some(names)
    })
    .await;
    assert!(names[0].contains("NVIDIA H100 80GB HBM3"), "{names:?}");
    assert!(names[1].contains("NVIDIA A100-SXM4-40GB"), "{names:?}");

    let gpu0 = r#"[data-testid="gpu-card"][data-gpu-index="0"]"#;
    let gpu1 = r#"[data-testid="gpu-card"][data-gpu-index="1"]"#;
    let total0 = num_attr(
        &c,
        &format!(r#"{gpu0} [data-testid="gpu-mem-total"]"#),
        "data-bytes",
    )
    .await;
    assert_eq!(total0, Some(81559 * MIB));
    let total1 = num_attr(
        &c,
        &format!(r#"{gpu1} [data-testid="gpu-mem-total"]"#),
        "data-bytes",
    )
    .await;
    assert_eq!(total1, Some(40960 * MIB));
    let used1 = num_attr(
        &c,
        &format!(r#"{gpu1} [data-testid="gpu-mem-used"]"#),
        "data-bytes",
    )
    .await;
    assert_eq!(
        used1,
        Some(20480 * MIB),
        "a constant scripted value reaches the page exactly"
    );
    let util1 = attr(
        &c,
        &format!(r#"{gpu1} [data-testid="gpu-util"]"#),
        "data-pct",
    )
    .await;
    assert_eq!(util1.and_then(|p| p.parse::<f64>().ok()), Some(50.0));
    let me = std::process::id();
    assert!(
        c.find(Locator::Css(&format!(
            r#"{gpu0} [data-testid="gpu-proc"][data-pid="{me}"]"#
        )))
        .await
        .is_ok(),
        "the scripted process (this test's pid) is listed"
    );

    // Values change over time: GPU 0's memory grows along its timeline, seq advances.
    let used_sel = format!(r#"{gpu0} [data-testid="gpu-mem-used"]"#);
    let used_a = num_attr(&c, &used_sel, "data-bytes")
        .await
        .expect("gpu 0 used");
    let seq_a = num_attr(&c, r#"[data-testid="last-seq"]"#, "data-seq")
        .await
        .expect("seq");
    assert!((1200 * MIB..=78000 * MIB).contains(&used_a), "{used_a}");
    let used_b = wait_for(Duration::from_secs(10), "GPU 0 memory to grow", || async {
        num_attr(&c, &used_sel, "data-bytes")
            .await
            .filter(|b| *b > used_a)
    })
    .await;
    assert!(used_b <= 78000 * MIB);
    // The page may have taken a frame between the two reads above: wait for seq to move on too.
    let seq_b = wait_for(Duration::from_secs(10), "seq to advance", || async {
        num_attr(&c, r#"[data-testid="last-seq"]"#, "data-seq")
            .await
            .filter(|s| *s > seq_a)
    })
    .await;
    assert!(seq_b > seq_a, "seq {seq_b} after {seq_a}");
    assert!(
        c.find(Locator::Css(r#"[data-testid="block-row"]"#))
            .await
            .is_ok(),
        "block devices shown"
    );
    assert!(
        c.find(Locator::Css(r#"[data-testid="host-panel"]"#))
            .await
            .is_ok(),
        "host panel shown"
    );
    let charts = c
        .find_all(Locator::Css(r#"[data-testid="chart"]"#))
        .await
        .expect("charts");
    assert!(!charts.is_empty(), "charts drawn");

    // Stop the server: the page notices; start it again: the page reconnects and resumes.
    server.terminate();
    wait_for(
        Duration::from_secs(10),
        "the badge to leave `open`",
        || async {
            (attr(&c, r#"[data-testid="conn-badge"]"#, "data-state")
                .await
                .as_deref()
                != Some("open"))
            .then_some(())
        },
    )
    .await;
    let seq_before = num_attr(&c, r#"[data-testid="last-seq"]"#, "data-seq")
        .await
        .expect("seq");
    let (_server, _) = start_vramio(port, &nvml, Some(&script));
    wait_for(
        Duration::from_secs(20),
        "reconnect and new frames",
        || async {
            let open = attr(&c, r#"[data-testid="conn-badge"]"#, "data-state")
                .await
                .as_deref()
                == Some("open");
            let seq = num_attr(&c, r#"[data-testid="last-seq"]"#, "data-seq").await?;
            (open && seq > seq_before).then_some(())
        },
    )
    .await;
    c.close().await.expect("close browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_driver_is_a_notice_not_a_crash() {
    let missing = PathBuf::from("/nonexistent/libnvidia-ml.so.1");
    let port = free_port();
    let (_server, url) = start_vramio(port, &missing, None);
    let (_driver, driver_port) = start_chromedriver();
    let c = browser(driver_port).await;
    c.goto(&url).await.expect("open page");
    let notice = wait_for(Duration::from_secs(20), "the no-driver notice", || async {
        text(&c, r#"[data-testid="nvml-notice"]"#)
            .await
            .filter(|t| !t.is_empty())
    })
    .await;
    assert!(
        notice.to_lowercase().contains("no nvidia driver"),
        "{notice}"
    );
    assert!(
        c.find(Locator::Css(r#"[data-testid="gpu-card"]"#))
            .await
            .is_err(),
        "no GPU cards"
    );
    // Disks still report.
    wait_for(Duration::from_secs(10), "block devices", || async {
        c.find(Locator::Css(r#"[data-testid="block-row"]"#))
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    c.close().await.expect("close browser");
}

/// `vramio check --json` with the same script, for comparison with the page.
fn check_json(nvml_lib: &PathBuf, script: &PathBuf) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(["check", "--json", "--window", "3s", "--interval", "250ms"])
        .arg("--nvml-lib")
        .arg(nvml_lib)
        .env("FAKE_NVML_SCRIPT", script)
        .output()
        .expect("run vramio check");
    serde_json::from_slice(&out.stdout).expect("check --json prints JSON")
}

async fn attrs_of_all(c: &Client, css: &str, names: &[&str]) -> Vec<Vec<Option<String>>> {
    let mut rows = Vec::new();
    for el in c.find_all(Locator::Css(css)).await.unwrap_or_default() {
        let mut row = Vec::new();
        for n in names {
            row.push(el.attr(n).await.ok().flatten());
        }
        rows.push(row);
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_same_verdict_path_and_suggestions_as_check() {
    let nvml = fake_nvml();
    // One GPU at 96.9% memory, busy: GPU memory pressure, critical.
    let script = write_script(
        "pressure.json",
        &format!(
            r#"{{"driver_version": "580.00", "devices": [
          {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-77777777-0000-0000-0000-000000000000",
            "memory_total_mib": 81559, "repeat": false, "lost_at_s": null, "slow_ms": 0,
            "timeline": [{{"at_s": 0, "memory_used_mib": 79000, "util_gpu": 97, "util_mem": 60,
                           "temperature_c": 70, "power_w": 600,
                           "processes": [{{"pid": {pid}, "used_mib": 78500}}]}}]}}]}}"#,
            pid = std::process::id()
        ),
    );
    let expected = check_json(&nvml, &script);
    let verdict = expected["verdict"].as_str().expect("verdict").to_owned();
    assert_eq!(verdict, "gpu_memory_pressure", "{expected}");
    let mut want_path: Vec<(String, String)> = expected["path"]
        .as_array()
        .expect("path")
        .iter()
        .map(|n| {
            (
                n["node"].as_str().unwrap_or_default().to_owned(),
                n["answer"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    want_path.sort();
    let mut want_suggestions: Vec<String> = expected["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .flat_map(|f| f["suggestions"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .collect();
    want_suggestions.sort();
    want_suggestions.dedup();
    assert!(!want_suggestions.is_empty());

    let port = free_port();
    let (_server, url) = start_vramio(port, &nvml, Some(&script));
    let (_driver, driver_port) = start_chromedriver();
    let c = browser(driver_port).await;
    c.goto(&url).await.expect("open page");
    let banner = r#"[data-testid="verdict-banner"]"#;
    wait_for(Duration::from_secs(20), "the verdict banner", || async {
        (attr(&c, banner, "data-verdict").await.as_deref() == Some(verdict.as_str())).then_some(())
    })
    .await;
    assert_eq!(
        attr(&c, banner, "data-severity").await.as_deref(),
        expected["severity"].as_str()
    );

    // The lit path: the nodes with an answer on the page are check's path, answer for answer.
    let mut lit: Vec<(String, String)> = attrs_of_all(
        &c,
        r#"[data-testid="tree-node"]"#,
        &["data-node", "data-answer"],
    )
    .await
    .into_iter()
    .filter_map(|r| Some((r[0].clone()?, r[1].clone()?)))
    .collect();
    lit.sort();
    assert_eq!(lit, want_path, "lit path on the page vs check --json");
    let leaves = attrs_of_all(
        &c,
        r#"[data-testid="tree-leaf"]"#,
        &["data-verdict", "data-lit"],
    )
    .await;
    let lit_leaves: Vec<_> = leaves
        .iter()
        .filter(|r| r[1].as_deref() == Some("true"))
        .collect();
    assert_eq!(lit_leaves.len(), 1, "one leaf lit: {leaves:?}");
    assert_eq!(lit_leaves[0][0].as_deref(), Some("gpu_memory_pressure"));

    let mut shown: Vec<String> =
        attrs_of_all(&c, r#"[data-testid="suggestion"]"#, &["data-suggestion-id"])
            .await
            .into_iter()
            .filter_map(|r| r[0].clone())
            .collect();
    shown.sort();
    shown.dedup();
    assert_eq!(
        shown, want_suggestions,
        "suggestions on the page vs check --json"
    );

    // The words: the page's sentences are `shared::diagnosis::words` of the very diagnosis the
    // server holds, compared when the page shows the same one (same `t_ms`) and it is held by
    // hysteresis (so "held since" is exercised too).
    let (page, d, jobs, tz) = wait_for(
        Duration::from_secs(30),
        "the page and /api/snapshot to show the same held diagnosis",
        || async { page_and_snapshot(&c).await },
    )
    .await;
    assert_eq!(
        page.reason,
        reason_with_jobs(&d, &jobs, tz),
        "banner reason"
    );
    assert!(page.reason.contains("held since"), "{}", page.reason);
    let shown_node = d
        .path
        .iter()
        .find(|n| Some(words_id(&n.node)) == page.shown)
        .expect("the details panel shows a node of the path");
    let want: Vec<String> = shown_node
        .evidence
        .iter()
        .map(|e| evidence_text(e, tz))
        .collect();
    assert_eq!(page.details, want, "evidence in the tree's details panel");
    let want: Vec<(String, Vec<String>)> = order_findings(&d.findings, d.verdict)
        .into_iter()
        .map(|f| {
            (
                words_id(&f.rule),
                f.evidence.iter().map(|e| evidence_text(e, tz)).collect(),
            )
        })
        .collect();
    assert_eq!(page.findings, want, "findings and their evidence, in order");
    c.close().await.expect("close browser");
}

/// What the page shows of one diagnosis.
#[derive(Debug, PartialEq, serde::Deserialize)]
struct PageWords {
    t_ms: Option<String>,
    reason: String,
    shown: Option<String>,
    details: Vec<String>,
    findings: Vec<(String, Vec<String>)>,
}

/// Reads the page's words, then `/api/snapshot` from the page itself, then the words again; the
/// three agree on one diagnosis when the page did not change in between and shows the snapshot's.
const READ_WORDS: &str = r#"
const done = arguments[arguments.length - 1];
const texts = (root) => Array.from(root.querySelectorAll('.ev-sentence')).map(e => e.textContent);
const page = () => {
  const banner = document.querySelector('[data-testid="verdict-banner"]');
  const reason = document.querySelector('[data-testid="verdict-reason"]');
  const details = document.querySelector('[data-testid="tree-details"]');
  return {
    t_ms: banner ? banner.getAttribute('data-t-ms') : null,
    reason: reason ? reason.textContent : '',
    shown: details ? details.getAttribute('data-shown') : null,
    details: details ? texts(details) : [],
    findings: Array.from(document.querySelectorAll('[data-testid="finding"]'))
      .map(f => [f.getAttribute('data-rule'), texts(f)]),
  };
};
const before = page();
fetch('/api/snapshot').then(r => r.text())
  .then(snapshot => done({before, after: page(), snapshot, offset: new Date().getTimezoneOffset()}))
  .catch(e => done({error: String(e)}));
"#;

async fn page_and_snapshot(c: &Client) -> Option<(PageWords, Diagnosis, Vec<shared::Job>, Tz)> {
    let v = c.execute_async(READ_WORDS, vec![]).await.ok()?;
    let before: PageWords = serde_json::from_value(v["before"].clone()).ok()?;
    let after: PageWords = serde_json::from_value(v["after"].clone()).ok()?;
    let snapshot: serde_json::Value = serde_json::from_str(v["snapshot"].as_str()?).ok()?;
    let d: Diagnosis = serde_json::from_value(snapshot["diagnosis"].clone()).ok()?;
    // The banner names the jobs its verdict is about, with the users this viewer may see.
    let jobs: Vec<shared::Job> =
        serde_json::from_value(snapshot["frame"]["jobs"].clone()).unwrap_or_default();
    let behind = v["offset"].as_f64()?;
    let tz = Tz::east_of_utc(-(behind.round() as i32));
    let same = before == after && before.t_ms == d.t_ms.map(|t| t.to_string());
    let held = d
        .path
        .iter()
        .any(|n| n.evidence.iter().any(|e| e.held.is_some()));
    (same && held).then_some((before, d, jobs, tz))
}

/// The snake_case wire id of an enum value (what the page's `data-*` hooks carry).
fn words_id<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// What the current document moved over the network, from Chromium's own accounting (Resource
/// Timing: the page, its files and API calls; `transferSize` is headers plus body as received, 0
/// from the memory cache; `encodedBodySize` the body as sent), as `(url, transferred, body)`.
async fn transferred(c: &Client) -> Vec<(String, u64, u64)> {
    let got = c
        .execute(
            "const nav = performance.getEntriesByType('navigation');\
             const res = performance.getEntriesByType('resource');\
             return nav.concat(res).map(e => [e.name, e.transferSize, e.encodedBodySize]);",
            vec![],
        )
        .await
        .expect("resource timing");
    serde_json::from_value(got).expect("[[url, bytes, body]]")
}

/// The bundle's file on disk whose served name ends `url` (`frontend/dist`, as the debug server
/// reads it).
fn dist_file(url: &str) -> Option<PathBuf> {
    let name = url.rsplit('/').next()?.split('?').next()?;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../frontend/dist")
        .join(if name.is_empty() { "index.html" } else { name });
    path.is_file().then_some(path)
}

/// The first load's ceiling on the wire: what this build moves (357,983 B, of which about 30 KB
/// came with the history's range control, timeline, rewind and chart saving) and a margin, so a
/// change that grows the page fails here (docs/performance.md#first-load, where the 150 KB target
/// is not met yet).
const FIRST_LOAD_CEILING: u64 = 370_000;

/// The first load gets the page's files as xtask compressed them (brotli 11: each body is the
/// `.br` file's size, byte for byte), and a reload moves under 5 KB in all: index.html is
/// revalidated (304) and the files named by their content come from the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_load_is_brotli_from_the_build_and_a_reload_moves_under_5_kb() {
    let missing = PathBuf::from("/nonexistent/libnvidia-ml.so.1");
    let port = free_port();
    let (_server, url) = start_vramio(port, &missing, None);
    let (_driver, driver_port) = start_chromedriver();
    let c = browser_profile(driver_port, "reload").await;
    let live = || async {
        c.find(Locator::Css(r#"[data-testid="block-row"]"#))
            .await
            .ok()
            .map(|_| ())
    };
    c.goto(&url).await.expect("open page");
    wait_for(Duration::from_secs(20), "the first load to go live", live).await;
    let first_load = transferred(&c).await;
    let first: u64 = first_load.iter().map(|(_, b, _)| b).sum();
    let mut files = 0;
    for (u, _, body) in &first_load {
        let Some(file) = dist_file(u) else { continue };
        files += 1;
        // The brotli copy when xtask stored one (it does when it is smaller), else the file.
        let br = PathBuf::from(format!("{}.br", file.display()));
        let sent = if br.is_file() { br } else { file };
        let want = std::fs::metadata(&sent).map_or(0, |m| m.len());
        assert_eq!(
            *body,
            want,
            "{u} came as {body} bytes, not as {}",
            sent.display()
        );
    }
    assert!(
        files >= 5,
        "the page, its two scripts, its wasm and its css: {first_load:?}"
    );
    println!("first load {first} bytes: {first_load:?}");
    c.refresh().await.expect("reload");
    wait_for(Duration::from_secs(20), "the reload to go live", live).await;
    let again = transferred(&c).await;
    let total: u64 = again.iter().map(|(_, b, _)| b).sum();
    println!("reload {total} bytes: {again:?}");
    assert!(
        again
            .iter()
            .any(|(u, _, _)| u.contains("/vramio_bg.") && u.ends_with(".wasm")),
        "the reload loaded the wasm (from the cache): {again:?}"
    );
    assert!(
        first > 20 * 1024,
        "the first load moved the bundle: {first} bytes"
    );
    assert!(
        first <= FIRST_LOAD_CEILING,
        "the first load grew to {first} bytes (ceiling {FIRST_LOAD_CEILING}): {first_load:?}"
    );
    assert!(total < 5 * 1024, "a reload moved {total} bytes: {again:?}");
    c.close().await.expect("close browser");
}
