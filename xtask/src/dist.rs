//! `cargo xtask dist`: the release tarballs, one per Linux target, linked against an old glibc
//! with cargo-zigbuild and zig (docs/architecture.md#release-builds), plus `SHA256SUMS`.
//!
//! Each `target/dist/vramio-VERSION-TARGET.tar.gz` unpacks to `vramio-VERSION-TARGET/` holding
//! the binary (page embedded), both licence texts and a short README, with sorted names, owner 0,
//! the commit's time as every mtime and gzip without a name or time (the binaries themselves are
//! not yet byte-for-byte reproducible: rust-embed stamps file times, rustc embeds build paths).
//! `check` runs the tests of `backend/tests/dist.rs` on what `build` left.
//!
//! zig comes from PyPI's `ziglang` in a virtual environment under `target/tools/zig` (Debian's
//! Python refuses system-wide pip installs); cargo-zigbuild runs `python3 -m ziglang` from it.

use crate::{WASM_TARGET, bundle, cargo, root, status, target_dir};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The targets a release covers: x86_64 servers and aarch64 ones (Grace Hopper).
pub const TARGETS: [&str; 2] = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];
/// The oldest glibc the binaries run on (CentOS 7, RHEL 7). zig links against it for free.
pub const GLIBC: &str = "2.17";
/// The tools dist needs, pinned: installed when missing.
const ZIGBUILD_VERSION: &str = "0.24.1";
const ZIGLANG_VERSION: &str = "0.17.1";

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where the tarballs and `SHA256SUMS` go.
pub fn dir() -> PathBuf {
    target_dir().join("dist")
}

/// Builds the page, then each target's binary, then the tarballs and their checksums.
pub fn build() -> Result<()> {
    ensure_tools()?;
    bundle()?;
    tarballs()
}

/// [`build`] with the page as `frontend/dist` holds it (`cargo xtask test` built it already).
pub fn tarballs() -> Result<()> {
    ensure_tools()?;
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mtime = git(&["log", "-1", "--format=%ct", "HEAD"])?;
    // Built beside target/dist and swapped in at the end: a failed build keeps the last one.
    let out = target_dir().join("dist-new");
    if out.exists() {
        std::fs::remove_dir_all(&out).context("cannot clear target/dist-new")?;
    }
    std::fs::create_dir_all(&out)?;
    let mut tarballs = Vec::new();
    for target in TARGETS {
        let start = Instant::now();
        let bin = build_target(target, &commit)?;
        let tarball = package(target, &bin, &out, &mtime)?;
        eprintln!(
            "xtask: {} ({} KiB) in {:.0} s",
            tarball.display(),
            std::fs::metadata(&tarball)?.len() / 1024,
            start.elapsed().as_secs_f64()
        );
        tarballs.push(tarball);
    }
    let mut sums = Command::new("sha256sum");
    sums.current_dir(&out);
    for t in &tarballs {
        sums.arg(t.file_name().context("a tarball name")?);
    }
    let listed = sums.output().context("cannot run sha256sum")?;
    if !listed.status.success() {
        bail!(
            "sha256sum failed: {}",
            String::from_utf8_lossy(&listed.stderr)
        );
    }
    std::fs::write(out.join("SHA256SUMS"), &listed.stdout)?;
    let done = dir();
    if done.exists() {
        std::fs::remove_dir_all(&done).context("cannot clear target/dist")?;
    }
    std::fs::rename(&out, &done).context("cannot move the tarballs into target/dist")?;
    println!("{}", done.join("SHA256SUMS").display());
    Ok(())
}

/// Runs the tarball tests (`backend/tests/dist.rs`, ignored in a plain `cargo test`).
pub fn check() -> Result<()> {
    let mut c = cargo();
    c.args([
        "test",
        "--locked",
        "--package",
        "vramio",
        "--test",
        "dist",
        "--",
        "--ignored",
    ]);
    c.env("VRAMIO_DIST_DIR", dir());
    status(c)
}

fn build_target(target: &str, commit: &str) -> Result<PathBuf> {
    let mut c = cargo();
    c.args([
        "zigbuild",
        "--release",
        "--locked",
        "--package",
        "vramio",
        "--bin",
        "vramio",
        "--target",
    ]);
    c.arg(format!("{target}.{GLIBC}"));
    c.env("VRAMIO_GIT_COMMIT", commit);
    c.env("VRAMIO_GLIBC_BASELINE", GLIBC);
    c.env("PATH", zig_path()?);
    status(c)?;
    let bin = target_dir().join(target).join("release/vramio");
    if !bin.is_file() {
        bail!("cargo zigbuild left no {}", bin.display());
    }
    Ok(bin)
}

/// `vramio-VERSION-TARGET.tar.gz` in `out`: the binary, the licences, the short README.
fn package(target: &str, bin: &Path, out: &Path, mtime: &str) -> Result<PathBuf> {
    let name = format!("vramio-{VERSION}-{target}");
    let stage = target_dir().join("dist-stage");
    if stage.exists() {
        std::fs::remove_dir_all(&stage)?;
    }
    let folder = stage.join(&name);
    std::fs::create_dir_all(&folder)?;
    std::fs::copy(bin, folder.join("vramio"))?;
    for licence in ["LICENSE-MIT", "LICENSE-APACHE"] {
        std::fs::copy(root().join(licence), folder.join(licence))
            .with_context(|| format!("copying {licence}"))?;
    }
    std::fs::copy(
        root().join("deploy/tarball/README.md"),
        folder.join("README.md"),
    )
    .context("copying deploy/tarball/README.md")?;
    let tarball = out.join(format!("{name}.tar.gz"));
    // The names go in as arguments, never into the script's text.
    let script = "tar --sort=name --owner=0 --group=0 --numeric-owner --mode=u+rw,go-w,a+rX \
                  --mtime=@\"$1\" -cf - \"$2\" | gzip -9n > \"$3\"";
    let mut tar = Command::new("bash");
    tar.args(["-o", "pipefail", "-c", script, "tar", mtime, &name])
        .arg(&tarball)
        .current_dir(&stage);
    status(tar)?;
    std::fs::remove_dir_all(&stage)?;
    Ok(tarball)
}

fn git(args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root())
        .output()
        .context("cannot run git (dist stamps the commit)")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The rustup targets, zig (PyPI's `ziglang`) and cargo-zigbuild (crates.io), each installed
/// when missing; and, for `check`, qemu-user and arm64 glibc (Debian packages).
fn ensure_tools() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("dist needs rustup to add its targets")?;
    let have = String::from_utf8_lossy(&installed.stdout).into_owned();
    for target in TARGETS.iter().chain([&WASM_TARGET]) {
        if !have.lines().any(|l| l.trim() == *target) {
            let mut c = Command::new("rustup");
            c.args(["target", "add", target]);
            status(c)?;
        }
    }
    let venv = zig_venv();
    let python = venv.join("bin/python3");
    let zig_runs = Command::new(&python)
        .args(["-m", "ziglang", "version"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == ZIGLANG_VERSION);
    if !zig_runs {
        eprintln!(
            "xtask: installing zig from PyPI (ziglang=={ZIGLANG_VERSION}) into {}",
            venv.display()
        );
        let mut mk = Command::new("python3");
        mk.args(["-m", "venv"]).arg(&venv);
        status(mk).context("python3 -m venv (Debian: apt-get install python3-venv)")?;
        let mut pip = Command::new(&python);
        pip.args(["-m", "pip", "install", "--quiet"])
            .arg(format!("ziglang=={ZIGLANG_VERSION}"));
        status(pip)?;
    }
    let zigbuild = Command::new("cargo-zigbuild")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout).trim()
                == format!("cargo-zigbuild {ZIGBUILD_VERSION}")
        });
    if !zigbuild {
        eprintln!("xtask: installing cargo-zigbuild {ZIGBUILD_VERSION} (once)");
        let mut c = cargo();
        c.args(["install", "--locked", "cargo-zigbuild", "--version"])
            .arg(ZIGBUILD_VERSION);
        status(c)?;
    }
    Ok(())
}

fn zig_venv() -> PathBuf {
    target_dir().join("tools/zig")
}

/// PATH with the zig environment first, so cargo-zigbuild's `python3 -m ziglang` finds zig.
fn zig_path() -> Result<std::ffi::OsString> {
    let mut dirs = vec![zig_venv().join("bin")];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).context("a PATH with the zig environment")
}
