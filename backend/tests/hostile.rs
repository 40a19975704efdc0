//! `vramio check --from` on a hostile recording (`tests/fixtures/recordings/hostile.ndjson`:
//! every number at `u64::MAX`, zero or the f64 extremes, time going backwards, `interval_ms` 0
//! and `u64::MAX`; `shared/tests/hostile.rs` makes it): the binary, built with overflow checks as
//! tests build it, answers with a verdict and a monitoring exit code instead of a panic.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn recording() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/recordings/hostile.ndjson")
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn check(extra: &[&str]) -> Run {
    let file = recording();
    let out = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .arg("check")
        .arg("--from")
        .arg(&file)
        .args(extra)
        .env_remove("VRAMIO_WINDOW")
        .output()
        .expect("run vramio");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn assert_sane(r: &Run, what: &str) {
    assert!(
        !r.stderr.contains("panicked"),
        "{what}: vramio panicked:\n{}",
        r.stderr
    );
    assert!(
        matches!(r.code, Some(0..=3)),
        "{what}: exit {:?}, not a monitoring code\nstdout: {}\nstderr: {}",
        r.code,
        r.stdout,
        r.stderr
    );
}

#[test]
fn a_hostile_recording_gets_a_verdict_not_a_panic() {
    assert!(recording().exists(), "{} missing", recording().display());
    for window in [None, Some("5s"), Some("1ms")] {
        let mut args = vec!["--json"];
        if let Some(w) = window {
            args.extend(["--window", w]);
        }
        let r = check(&args);
        assert_sane(&r, &format!("--json {args:?}"));
        let json: Value = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("--json {args:?} printed no JSON ({e}): {}", r.stdout));
        let severity = json["severity"].as_str().unwrap_or("(none)");
        let code = match severity {
            "ok" => 0,
            "warning" => 1,
            "critical" => 2,
            _ => 3,
        };
        assert_eq!(r.code, Some(code), "exit code follows severity {severity}");
        assert!(json["verdict"].is_string(), "{json}");

        args.retain(|a| *a != "--json");
        let r = check(&args);
        assert_sane(&r, &format!("text {args:?}"));
        assert!(r.stdout.contains("vramio check"), "{}", r.stdout);
    }
}

#[test]
fn a_recording_with_no_frames_reports_no_data_in_the_usual_shape() {
    let dir = std::env::temp_dir().join(format!("vramio-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let empty = dir.join("empty.ndjson");
    std::fs::write(&empty, "not a frame\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(["check", "--json", "--from"])
        .arg(&empty)
        .output()
        .expect("run vramio");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(3), "unknown");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let d: Result<shared::diagnosis::Diagnosis, _> = serde_json::from_str(&stdout);
    let d = d.unwrap_or_else(|e| panic!("not a diagnosis ({e}): {stdout}"));
    assert_eq!(d.verdict, shared::diagnosis::Verdict::NoData);
    let v: Value = serde_json::from_str(&stdout).expect("json");
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("no frames")),
        "{v}"
    );
}
