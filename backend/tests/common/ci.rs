//! The one rule for tests that need a tool or privilege a developer's machine may lack (sshd,
//! loop devices, root): outside CI such a test skips and says why; in CI (`CI` set to anything
//! but empty, `0` or `false`, as `.ci/run` runs with `CI=true`) it fails, since CI installs
//! everything and must run it. Included by the helpers that need it (`loop_mount.rs`, `sshd.rs`).
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

/// Whether this run is CI's.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Skips `test` outside CI (prints why, returns `false`); in CI, fails with `why`.
pub fn skip(test: &str, why: &str) -> bool {
    assert!(!in_ci(), "{test}: {why}, and CI must run this test");
    eprintln!("{test}: SKIPPED, {why} (with CI set this fails instead)");
    false
}
