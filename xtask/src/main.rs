//! Build orchestration, no trunk: `cargo xtask run|test|dist|bundle|fuzz|cli-docs`. `run` and
//! `bundle` download nothing beyond crates; `dist` (and so `test`) installs its tools when
//! missing: rustup targets, cargo-zigbuild from crates.io, zig from PyPI (`dist.rs`).
//!
//! `bundle` compiles the Leptos frontend to wasm32, runs wasm-bindgen (as a library, pinned to the
//! same version as the frontend's `wasm-bindgen`) and copies `static/` beside it into
//! `frontend/dist`, which the backend embeds. `run` and `dist` build that bundle first; `dist`
//! (`dist.rs`) makes the portable release tarballs; `test` runs everything CI runs, the tarballs'
//! tests included, ending with a short run of every fuzz target (`fuzz.rs`).

mod cli_docs;
mod dist;
mod fuzz;
mod page;

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const WASM_TARGET: &str = "wasm32-unknown-unknown";
const WASM_PROFILE: &str = "wasm-release";

fn main() {
    if let Err(e) = real_main() {
        eprintln!("xtask: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let task = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    match task.as_str() {
        "bundle" => bundle().map(|_| ()),
        "run" => run(&rest),
        "dist" => dist::build(),
        "test" => test(&rest),
        "fuzz" => fuzz::fuzz(&rest),
        "cli-docs" => cli_docs::run(),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n  run [-- FLAGS]  build the page, then `vramio serve FLAGS` on this host\n  test            everything CI runs: fmt, clippy (native and wasm32), all tests, a short fuzz run\n  dist            release tarballs for x86_64 and aarch64 Linux (glibc 2.17+) and SHA256SUMS in target/dist\n  bundle          only build the page into frontend/dist\n  fuzz [TARGET] [SECS]  build the fuzz targets (cargo-fuzz, stable) and run each, or TARGET, for SECS s (default 60)\n  cli-docs        regenerate docs/cli.md from the command line's clap definitions"
            );
            bail!("unknown task `{task}`");
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

fn status(mut cmd: Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let st = cmd
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !st.success() {
        bail!("{shown} failed ({st})");
    }
    Ok(())
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn ensure_wasm_target() -> Result<()> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match out {
        Ok(o)
            if String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == WASM_TARGET) =>
        {
            Ok(())
        }
        Ok(_) => {
            eprintln!("xtask: adding the {WASM_TARGET} target (once)");
            let mut c = Command::new("rustup");
            c.args(["target", "add", WASM_TARGET]);
            status(c)
        }
        Err(e) => {
            eprintln!("xtask: rustup not found ({e}); assuming {WASM_TARGET} is installed");
            Ok(())
        }
    }
}

/// Builds the page into `frontend/dist` and returns that folder.
fn bundle() -> Result<PathBuf> {
    ensure_wasm_target()?;
    let start = Instant::now();
    let mut c = cargo();
    c.args([
        "build",
        "--package",
        "frontend",
        "--lib",
        "--target",
        WASM_TARGET,
        "--profile",
        WASM_PROFILE,
    ]);
    status(c)?;
    let wasm = target_dir()
        .join(WASM_TARGET)
        .join(WASM_PROFILE)
        .join("frontend.wasm");
    let dist = root().join("frontend/dist");
    let staging = root().join("target/dist-staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).context("cannot clear the staging folder")?;
    }
    std::fs::create_dir_all(&staging)?;
    wasm_bindgen_cli_support::Bindgen::new()
        .input_path(&wasm)
        .web(true)
        .context("wasm-bindgen --target web")?
        .out_name("vramio")
        .typescript(false)
        // Nothing the browser uses: function names (for its own shims) and the build's tools.
        .remove_name_section(true)
        .remove_producers_section(true)
        .generate(&staging)
        .with_context(|| format!("wasm-bindgen on {}", wasm.display()))?;
    for entry in std::fs::read_dir(root().join("static")).context("reading static/")? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), staging.join(entry.file_name()))?;
        }
    }
    let sizes = page::finish(&staging)?;
    // Swap in whole so a running debug server never serves half a bundle.
    if dist.exists() {
        std::fs::remove_dir_all(&dist).context("cannot clear frontend/dist")?;
    }
    std::fs::rename(&staging, &dist).context("cannot move the bundle into frontend/dist")?;
    eprintln!(
        "xtask: bundle in {} in {:.0} s",
        dist.display(),
        start.elapsed().as_secs_f64()
    );
    for s in &sizes {
        eprintln!(
            "xtask:   {:<36} {:>9} B raw {:>9} B brotli {:>9} B gzip",
            s.name, s.raw, s.br, s.gz
        );
    }
    let total = |f: fn(&page::Sizes) -> u64| sizes.iter().map(f).sum::<u64>();
    eprintln!(
        "xtask:   {:<36} {:>9} B raw {:>9} B brotli {:>9} B gzip",
        "the whole page",
        total(|s| s.raw),
        total(|s| s.br),
        total(|s| s.gz)
    );
    Ok(dist)
}

fn run(flags: &[String]) -> Result<()> {
    bundle()?;
    let mut c = cargo();
    c.args([
        "run",
        "--release",
        "--package",
        "vramio",
        "--bin",
        "vramio",
        "--",
        "serve",
    ]);
    c.args(flags.iter().filter(|f| f.as_str() != "--"));
    status(c)
}

fn test(extra: &[String]) -> Result<()> {
    let t0 = Instant::now();
    let dist = root().join("frontend/dist");
    let had_bundle_dir = dist.exists();
    step("cargo fmt --check", || {
        let mut c = cargo();
        c.args(["fmt", "--all", "--", "--check"]);
        status(c)
    })?;
    step("clippy (native)", || {
        let mut c = cargo();
        c.args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]);
        status(c)
    })?;
    // Clippy ran the backend's build script: it must not have made `frontend/dist` (only
    // `bundle` writes there; rust-embed compiles without it).
    step("the build leaves the source tree alone", || {
        if !had_bundle_dir && dist.exists() {
            bail!(
                "{} appeared during the native build: a build script writes into the source tree",
                dist.display()
            );
        }
        Ok(())
    })?;
    ensure_wasm_target()?;
    step("clippy (wasm32 frontend)", || {
        let mut c = cargo();
        c.args([
            "clippy",
            "--package",
            "frontend",
            "--target",
            WASM_TARGET,
            "--locked",
            "--",
            "-D",
            "warnings",
        ]);
        status(c)
    })?;
    step("frontend bundle", || bundle().map(|_| ()))?;
    step(
        "test tools (chromium, chromedriver, mkfs.ext4, sshd, ssh, promtool, systemd-analyze, qemu-aarch64)",
        test_tools,
    )?;
    step("tests", || {
        let mut c = cargo();
        c.args(["test", "--workspace", "--locked", "--no-fail-fast"]);
        c.args(extra);
        status(c)
    })?;
    step(
        "release tarballs (x86_64 and aarch64, glibc 2.17)",
        dist::tarballs,
    )?;
    step(
        "tarball tests (glibc symbols, checksums, x86_64 smoke, aarch64 under qemu)",
        dist::check,
    )?;
    step("fuzz (every target briefly)", fuzz::ci)?;
    eprintln!(
        "xtask: all checks passed in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn step(name: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
    eprintln!("xtask: == {name}");
    let t = Instant::now();
    f().with_context(|| format!("step `{name}`"))?;
    eprintln!("xtask: == {name}: ok in {:.0} s", t.elapsed().as_secs_f64());
    Ok(())
}

/// The browser tests drive Debian's chromium through chromedriver, the check tests loop-mount
/// an ext4, the SSH peer tests run OpenSSH, the /metrics tests promtool and Prometheus, the deploy
/// test systemd-analyze, the tarball tests qemu-aarch64: install what is missing with apt-get
/// when running as root on Debian, else say how.
fn test_tools() -> Result<()> {
    let has = |tool: &str, arg: &str| {
        Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mut missing = Vec::new();
    if !has("chromium", "--version") {
        missing.push("chromium");
    }
    if !has("chromedriver", "--version") {
        missing.push("chromium-driver");
    }
    if !has("mkfs.ext4", "-V") {
        missing.push("e2fsprogs");
    }
    // The SSH peer tests start their own sshd on loopback (by its path, as sshd requires) and
    // reach it with the system ssh.
    if !std::path::Path::new("/usr/sbin/sshd").is_file() {
        missing.push("openssh-server");
    }
    if !has("ssh", "-V") || !std::path::Path::new("/usr/bin/ssh-keygen").is_file() {
        missing.push("openssh-client");
    }
    // The /metrics tests run promtool and a real Prometheus server on loopback.
    if !has("promtool", "--version") || !has("prometheus", "--version") {
        missing.push("prometheus");
    }
    // The systemd user unit in deploy/systemd is checked with `systemd-analyze verify`.
    if !has("systemd-analyze", "--version") {
        missing.push("systemd");
    }
    // The aarch64 tarball's binary runs under qemu-user with Debian's arm64 glibc.
    if !has("qemu-aarch64", "--version") {
        missing.push("qemu-user");
    }
    if !std::path::Path::new("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1").is_file() {
        missing.push("libc6-arm64-cross");
    }
    if missing.is_empty() {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root || !has("apt-get", "--version") {
        bail!(
            "the tests need {}: `apt-get install -y {}` (or run .ci/run, which installs them)",
            missing.join(", "),
            missing.join(" ")
        );
    }
    eprintln!(
        "xtask: installing {} with apt-get (once)",
        missing.join(", ")
    );
    let mut update = Command::new("apt-get");
    update.args(["update", "-q"]);
    status(update)?;
    let mut install = Command::new("apt-get");
    install
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive");
    status(install)
}
