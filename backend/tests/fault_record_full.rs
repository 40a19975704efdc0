//! `vramio record` whose `--out` filesystem fills up stops with an error that names the file and
//! says "No space left", exits non-zero, and keeps the frames written so far: whole JSON lines
//! in order, at most one cut-off last line, which `vramio check --from` reads past with a note.
//! `record --append` after such a cut-off line (or a killed recorder's) keeps every new frame.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/loop_mount.rs"]
mod loop_mount;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

/// Room left on the filesystem: a handful of frames (one is a few KiB).
const ROOM: u64 = 24 * 1024;

fn vramio(args: &[&str], script: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(args)
        .env(fake_nvml::SCRIPT_ENV, script)
        .env("NO_COLOR", "1")
        .output()
        .expect("run vramio")
}

/// One GPU held by this test process.
fn gpu_script() -> fake_nvml::ScriptFile {
    fake_nvml::write_script(&format!(
        r#"{{"driver_version": "580.00", "devices": [
        {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-f0110000-0000-0000-0000-000000000000",
          "memory_total_mib": 81559, "repeat": false, "lost_at_s": null, "slow_ms": 0,
          "timeline": [{{"at_s": 0, "memory_used_mib": 40000, "util_gpu": 90, "util_mem": 10,
                         "temperature_c": 60, "power_w": 300,
                         "processes": [{{"pid": {}, "used_mib": 39000}}]}}]}}]}}"#,
        std::process::id()
    ))
}

/// `vramio record --out OUT --interval 100ms --duration DURATION EXTRA` with the fake NVML.
fn record(out: &str, duration: &str, extra: &[&str], script: &Path) -> Output {
    let nvml = fake_nvml::fake_nvml_path();
    let mut args = vec![
        "record",
        "--out",
        out,
        "--interval",
        "100ms",
        "--duration",
        duration,
    ];
    args.extend_from_slice(extra);
    args.extend(["--nvml-lib", nvml.to_str().expect("UTF-8")]);
    vramio(&args, script)
}

/// `vramio check --json --from FILE`'s report.
fn check_from(file: &str, script: &Path) -> serde_json::Value {
    let check = vramio(&["check", "--json", "--from", file], script);
    serde_json::from_slice(&check.stdout).unwrap_or_else(|e| {
        panic!(
            "check --from gave no JSON ({e}): {}",
            String::from_utf8_lossy(&check.stderr)
        )
    })
}

#[test]
fn record_on_a_full_filesystem_fails_naming_the_file_and_keeps_the_frames() {
    let test = "record-full";
    let Some(mnt) = loop_mount::loop_mount_or_skip(test, "record-full", 2 << 20) else {
        return;
    };
    let started = Instant::now();
    let filler = loop_mount::fill(&mnt.dir, ROOM);
    let out = mnt.dir.join("run.ndjson");
    let out_s = out.to_str().expect("a UTF-8 temp path");
    let script = gpu_script();
    let rec = record(out_s, "5s", &[], script.path());
    let stderr = String::from_utf8_lossy(&rec.stderr);
    assert_eq!(
        rec.status.code(),
        Some(1),
        "exit 1 on a full disk: {stderr}"
    );
    assert!(
        stderr.contains(out_s) && stderr.contains("No space left"),
        "the error names the file and the cause: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    let bytes = std::fs::read(&out).expect("the recording is kept");
    let text = String::from_utf8_lossy(&bytes);
    let (whole, cut) = match text.rfind('\n') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => ("", &text[..]),
    };
    let seqs: Vec<u64> = whole
        .split('\n')
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, l)| {
            let v: serde_json::Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("line {} is not a whole frame ({e}): {l}", i + 1));
            v["seq"].as_u64().expect("a seq")
        })
        .collect();
    let n = seqs.len() as u64;
    assert!(n >= 1, "frames written before the disk filled are kept");
    assert_eq!(
        seqs,
        (1..=n).collect::<Vec<_>>(),
        "no frame lost in between"
    );
    assert!(
        cut.is_empty() || serde_json::from_str::<serde_json::Value>(cut).is_err(),
        "only a cut-off line may follow the last newline"
    );

    let report = check_from(out_s, script.path());
    assert_eq!(report["frames"].as_u64(), Some(n), "{report}");
    if !cut.is_empty() {
        let notes = report["notes"].to_string();
        assert!(
            notes.contains("1 skipped line"),
            "a note on the cut-off line: {report}"
        );
    }
    eprintln!(
        "{test}: {}\n{n} frames kept, a cut-off line of {} bytes; check: {}; in {:?}",
        stderr.trim(),
        cut.len(),
        report["notes"],
        started.elapsed()
    );
    let _ = std::fs::remove_file(filler);
}

/// Regression: `--append` glued its first frame onto a cut-off last line (a recorder killed
/// mid-line, or a disk that filled up), so that frame was lost as one bad line.
#[test]
fn append_after_a_cut_off_last_line_keeps_every_new_frame() {
    let tmp = vramio_bin::TempDir::new("record-append");
    let out = tmp.join("run.ndjson");
    let out_s = out.to_str().expect("a UTF-8 temp path");
    let script = gpu_script();
    let first = record(out_s, "200ms", &[], script.path());
    assert!(first.status.success(), "{first:?}");
    // Cut the last line short, as a kill or a full disk does.
    let bytes = std::fs::read(&out).expect("the recording");
    std::fs::write(&out, &bytes[..bytes.len() - 100]).expect("cut");
    let whole_before = bytes.iter().filter(|&&b| b == b'\n').count() - 1;
    let again = record(out_s, "200ms", &["--append"], script.path());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    let appended: usize = stderr
        .split("wrote ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no frame count: {stderr}"));
    let report = check_from(out_s, script.path());
    assert_eq!(
        report["frames"].as_u64(),
        Some((whole_before + appended) as u64),
        "every whole frame, old and new: {report}"
    );
    let notes = report["notes"].to_string();
    let skipped = format!("1 skipped line(s) in {out_s}: line {}:", whole_before + 1);
    assert!(
        notes.contains(&skipped),
        "only the cut-off line is skipped: {notes}"
    );
}
