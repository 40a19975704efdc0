//! Tells cargo when to rebuild for the frontend bundle, and stamps the build for `--version`
//! (commit, target, glibc baseline); writes nothing.
//!
//! A release build embeds what `frontend/dist` holds when it compiles, so it must rerun when
//! `cargo xtask bundle` writes the bundle: watch the folder when it exists, else its parent (to
//! see it appear). Debug builds read the files from disk and need no rebuild for a new bundle.
//! rust-embed's `allow_missing` compiles without `frontend/dist`; the server then explains how to
//! build it.
//!
//! The stamp: `VRAMIO_GIT_COMMIT` when set (`cargo xtask dist` sets it), else `git rev-parse`,
//! watched through the repository's HEAD and the branch it names; `VRAMIO_GLIBC_BASELINE` is set
//! by `cargo xtask dist` for the glibc it links against (docs/architecture.md#release-builds).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if manifest.join("../frontend/dist").is_dir() {
        println!("cargo::rerun-if-changed=../frontend/dist");
    } else {
        println!("cargo::rerun-if-changed=../frontend");
    }
    println!("cargo::rerun-if-changed=build.rs");

    println!("cargo::rerun-if-env-changed=VRAMIO_GIT_COMMIT");
    println!("cargo::rerun-if-env-changed=VRAMIO_GLIBC_BASELINE");
    let commit = match std::env::var("VRAMIO_GIT_COMMIT") {
        Ok(c) if is_commit(c.trim()) => Some(c.trim().to_owned()),
        Ok(c) if !c.trim().is_empty() => panic!("VRAMIO_GIT_COMMIT={c:?} is not a commit hash"),
        _ => git_commit(manifest),
    };
    println!(
        "cargo::rustc-env=VRAMIO_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo::rustc-env=VRAMIO_TARGET={target}");
    let glibc = match std::env::var("VRAMIO_GLIBC_BASELINE") {
        Ok(v)
            if v.trim()
                .split('.')
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            format!("glibc {}+", v.trim())
        }
        Ok(v) if !v.trim().is_empty() => panic!("VRAMIO_GLIBC_BASELINE={v:?} is not a version"),
        _ => "glibc of the build host".into(),
    };
    println!("cargo::rustc-env=VRAMIO_GLIBC={glibc}");
}

/// The checked-out commit (12 hex digits), and the files whose change means a new one.
fn git_commit(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).filter(|c| is_commit(c))?;
    let git_dir = PathBuf::from(git(&["rev-parse", "--absolute-git-dir"])?);
    let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map(PathBuf::from)
        .unwrap_or_else(|| git_dir.clone());
    // HEAD names the branch; a new commit rewrites the branch's ref (a loose file under
    // refs/heads, created anew after `git pack-refs`) or packed-refs. Folders are watched whole.
    let watch = [
        git_dir.join("HEAD"),
        common.join("refs/heads"),
        common.join("packed-refs"),
    ];
    for file in watch.iter().filter(|f| f.exists()) {
        println!("cargo::rerun-if-changed={}", file.display());
    }
    Some(commit)
}

/// 7 to 40 hex digits: what `git rev-parse --short` prints, and nothing that could carry another
/// line into cargo's instructions.
fn is_commit(c: &str) -> bool {
    (7..=40).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_hexdigit())
}
