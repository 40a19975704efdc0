//! Test helpers for the scripted fake `libnvidia-ml` (`tests/fake-nvml`): where its `.so` is,
//! scripts in temp files, and one child process per scenario.
//!
//! `FAKE_NVML_SCRIPT` is process-global and the fake's clock and script are per process, so a test
//! that drives the fake runs its body in a child copy of the test binary ([`in_child_process`]):
//! the parent picks a script path and passes it in the child's environment, the child writes the
//! script there and runs the scenario. Include with `#[path = "common/fake_nvml.rs"] mod fake_nvml;`.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Names the script file for the fake library (docs/testing.md#the-fake-nvml-library).
pub const SCRIPT_ENV: &str = "FAKE_NVML_SCRIPT";
/// Set in a child started by [`in_child_process`].
const CHILD_ENV: &str = "VRAMIO_FAKE_NVML_CHILD";

/// `libfake_nvml.so`, built by cargo next to the test binaries because fake-nvml is a
/// dev-dependency of the backend. Panics with a clear message when it is not there.
pub fn fake_nvml_path() -> PathBuf {
    built_library("libfake_nvml.so", "fake-nvml")
}

/// `libfake_nvml_legacy.so`: the same fake as a driver before R510 (no memory v2, no `_v3`
/// process lists), from the `fake-nvml-legacy` dev-dependency.
pub fn legacy_fake_nvml_path() -> PathBuf {
    built_library("libfake_nvml_legacy.so", "fake-nvml-legacy")
}

fn built_library(file: &str, package: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let deps = exe.parent().expect("the test binary lives in a directory");
    let candidates = [
        deps.join(file),
        deps.parent().map_or_else(PathBuf::new, |p| p.join(file)),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "{file} not found (looked at {candidates:?}); build it with \
                 `cargo build -p {package}` or keep {package} a dev-dependency of the backend"
            )
        })
}

/// A script file that is removed when dropped.
pub struct ScriptFile {
    path: PathBuf,
}

impl ScriptFile {
    /// A fresh path in the temp dir; nothing is written yet.
    pub fn new() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("vramio-fake-nvml-{}-{n}-{nanos}.json", std::process::id());
        ScriptFile {
            path: std::env::temp_dir().join(name),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes (or rewrites) the script.
    pub fn write(&self, json: &str) {
        std::fs::write(&self.path, json)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", self.path.display()));
    }
}

impl Drop for ScriptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes `json` to a fresh temp file.
pub fn write_script(json: &str) -> ScriptFile {
    let file = ScriptFile::new();
    file.write(json);
    file
}

/// The script path a child was given, for it to write its script to (the parent removes it).
pub struct ChildScript {
    path: PathBuf,
}

impl ChildScript {
    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn write(&self, json: &str) {
        std::fs::write(&self.path, json)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", self.path.display()));
    }
}

/// Runs the calling test, named `test_name` (its path inside the test binary), in a child process
/// whose `FAKE_NVML_SCRIPT` names a fresh file.
///
/// In the parent: starts the child, waits, and panics with its output unless exactly that test
/// passed there; returns `None`, and the test returns. In the child: returns the script to write.
pub fn in_child_process(test_name: &str) -> Option<ChildScript> {
    if std::env::var_os(CHILD_ENV).is_some() {
        let path = std::env::var_os(SCRIPT_ENV).expect("the parent sets FAKE_NVML_SCRIPT");
        return Some(ChildScript {
            path: PathBuf::from(path),
        });
    }
    let script = ScriptFile::new();
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let output = Command::new(exe)
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env(SCRIPT_ENV, script.path())
        .output()
        .expect("the test binary starts again as a child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "scenario {test_name} failed in its child process ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    None
}
