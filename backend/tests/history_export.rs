//! History in and out through the real binary (docs/history.md#import, #rewind-and-export):
//! `import --into-history` loads an nvidia-smi log whose GPU memory fills halfway through; the
//! stored verdict segments say so; `history export --format ndjson` gives frames that `check
//! --from` reads to the same last verdict and that diagnose, frame by frame, to the same verdicts
//! in the same order; a `serve` on that history answers the range, a moment and a CSV export.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/fault_kit.rs"]
mod fault_kit;
#[path = "common/nvsmi_log.rs"]
mod nvsmi_log;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use fault_kit::admin;
use shared::diagnosis::{Thresholds, Verdict};
use std::process::Command;
use vramio_bin::{Server, TempDir};

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn vramio(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("VRAMIO_STATE_DIR")
        .output()
        .expect("run vramio")
}

fn dedup(v: impl IntoIterator<Item = Verdict>) -> Vec<Verdict> {
    let mut out: Vec<Verdict> = Vec::new();
    for x in v {
        if out.last() != Some(&x) {
            out.push(x);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_log_exports_to_frames_that_diagnose_as_the_stored_segments() {
    let tmp = TempDir::new("history-export");
    let hist = tmp.join("history");
    let hist_s = hist.to_str().expect("UTF-8");
    let t0_s = now_ms() / 1000 - 2 * 3600;
    let log_path = tmp.join("gpu.csv");
    nvsmi_log::memory_fills_halfway(&log_path, t0_s);
    let out = vramio(&[
        "import",
        log_path.to_str().expect("UTF-8"),
        "--into-history",
        "--history-dir",
        hist_s,
        "--name",
        "gpu-node",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("600 frames loaded into the history"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (from, to) = ((t0_s - 60) * 1000, (t0_s + 700) * 1000);
    let nd = tmp.join("night.ndjson");
    let out = vramio(&[
        "history",
        "export",
        "--history-dir",
        hist_s,
        "--from",
        &from.to_string(),
        "--to",
        &to.to_string(),
        "--format",
        "ndjson",
        "--out",
        nd.to_str().expect("UTF-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&nd).expect("the export");
    let frames: Vec<shared::Frame> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a frame a line"))
        .collect();
    assert_eq!(frames.len(), 600, "one frame a second");
    assert!(frames.iter().all(|f| f.host == "gpu-node"));

    // `check --from` reads the export to the verdict the store ends on.
    let check = vramio(&["check", "--json", "--from", nd.to_str().expect("UTF-8")]);
    let report: serde_json::Value = serde_json::from_slice(&check.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&check.stderr)));
    assert_eq!(report["verdict"], "gpu_memory_pressure", "{report}");

    // A serve on that history: the segments, and the same verdicts frame by frame.
    let script = tmp.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let s = Server::start(
        &tmp.join("state"),
        &script,
        &["--port", "0", "--history-dir", hist_s],
    );
    let r = admin(
        &s,
        "GET",
        &format!("/api/history?from_ms={from}&to_ms={to}&points=800"),
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let answer: shared::stored::Answer = serde_json::from_slice(&r.body).expect("an answer");
    let stored = dedup(answer.segments.iter().map(|s| s.verdict));
    let replayed = dedup(
        shared::replay::verdict_timeline(&frames, &Thresholds::default(), 60_000)
            .iter()
            .map(|s| s.verdict),
    );
    assert_eq!(stored, replayed, "{:?}", answer.segments);
    assert_eq!(stored.last(), Some(&Verdict::GpuMemoryPressure));
    // The findings only when asked for (a chart's timeline needs none of them).
    assert!(answer.segments.iter().all(|s| s.findings.is_empty()));
    let r = admin(
        &s,
        "GET",
        &format!("/api/history?from_ms={from}&to_ms={to}&points=10&findings=true"),
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let full: shared::stored::Answer = serde_json::from_slice(&r.body).expect("an answer");
    let pressure = full
        .segments
        .iter()
        .find(|s| s.verdict == Verdict::GpuMemoryPressure)
        .expect("the pressure segment");
    assert!(
        pressure
            .findings
            .iter()
            .any(|f| f.evidence.iter().any(|e| e.value.is_some())),
        "its findings with their evidence at entry: {pressure:?}"
    );
    let used = answer
        .series
        .iter()
        .find(|x| x.scope == shared::series::Scope::Gpu && x.metric == "mem_used_bytes")
        .expect("GPU memory");
    assert_eq!(used.points.len(), 600);
    assert_eq!(used.points[599].2, (nvsmi_log::FULL_MIB << 20) as f64);

    // A moment in the full half, rebuilt and diagnosed.
    let r = admin(
        &s,
        "GET",
        &format!("/api/history/moment?t_ms={}", (t0_s + 550) * 1000),
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let m: shared::stored::Moment = serde_json::from_slice(&r.body).expect("a moment");
    assert_eq!(m.step_ms, 1000);
    assert_eq!(m.diagnosis.verdict, Verdict::GpuMemoryPressure);
    assert_eq!(
        m.frame.gpus[0].memory.map(|mem| mem.used_bytes.0),
        Some(nvsmi_log::FULL_MIB << 20)
    );

    // CSV of the same range.
    let r = admin(
        &s,
        "GET",
        &format!("/api/history/export?from_ms={from}&to_ms={to}&format=csv"),
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let csv = r.text();
    let header = csv.lines().next().expect("a header");
    assert!(header.starts_with("t_ms,time,"), "{header}");
    assert!(header.contains("gpu:0:mem_used_bytes [bytes]"), "{header}");
    assert_eq!(csv.lines().count(), 601);
}

/// An export from a store that does not open (damaged here) fails with the directory named, and
/// leaves the file as it was: only a `serve` sets such a store aside.
#[test]
fn an_export_from_a_damaged_store_fails_and_leaves_it_as_it_was() {
    let tmp = TempDir::new("history-export-damaged");
    let hist = tmp.join("history");
    std::fs::create_dir_all(&hist).expect("dir");
    let file = hist.join("history.redb");
    let garbage = b"not a redb file, garbage".repeat(200);
    std::fs::write(&file, &garbage).expect("garbage");
    let out = vramio(&[
        "history",
        "export",
        "--history-dir",
        hist.to_str().expect("UTF-8"),
        "--from",
        "1h",
        "--to",
        "now",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot open the history in") && stderr.contains(&*hist.to_string_lossy()),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&file).expect("kept"), garbage, "untouched");
    assert_eq!(
        std::fs::read_dir(&hist).expect("ls").count(),
        1,
        "nothing set aside"
    );
}
