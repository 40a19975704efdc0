//! `cargo xtask fuzz [TARGET] [SECS]` and the fuzz step of `cargo xtask test`: builds the
//! cargo-fuzz targets of `fuzz/` on stable (`--sanitizer none`, installing cargo-fuzz when it is
//! missing) and runs each for a fixed time on a temporary copy of its seed corpus and
//! regressions, so nothing is written into the source tree. Reports per target: executions per
//! second, corpus size, and whether it crashed (with the artifact's path).

use super::{cargo, root, status};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Seconds per target in `cargo xtask test`: ten targets, about 3.5 minutes of fuzzing, which
/// with the fuzz build keeps the step within about 8 minutes on two cores.
const CI_SECS: u64 = 20;
/// The environment variable that overrides [`CI_SECS`].
const SECS_ENV: &str = "VRAMIO_FUZZ_SECS";
/// Seconds per target for `cargo xtask fuzz` without SECS.
const DEFAULT_SECS: u64 = 60;
/// One input running longer than this is a hang, reported like a crash (libFuzzer `-timeout`).
const HANG_SECS: u64 = 10;

/// What one target's run came to.
struct Outcome {
    target: String,
    execs_per_sec: Option<u64>,
    corpus_files: usize,
    /// Set when the run failed: libFuzzer's exit status and the inputs it saved.
    crash: Option<(String, Vec<PathBuf>)>,
}

/// `cargo xtask fuzz [TARGET] [SECS]`.
pub fn fuzz(args: &[String]) -> Result<()> {
    let mut target = None;
    let mut secs = DEFAULT_SECS;
    for a in args {
        match a.parse::<u64>() {
            Ok(n) => secs = n,
            Err(_) => target = Some(a.clone()),
        }
    }
    run(target.as_deref(), secs)
}

/// The step in `cargo xtask test`: every target for [`CI_SECS`] (or `$VRAMIO_FUZZ_SECS`).
/// `VRAMIO_FUZZ_SECS=0` skips it.
pub fn ci() -> Result<()> {
    let secs = match std::env::var(SECS_ENV) {
        Ok(v) => v
            .trim()
            .parse()
            .with_context(|| format!("{SECS_ENV}={v:?} is not a number of seconds"))?,
        Err(_) => CI_SECS,
    };
    if secs == 0 {
        eprintln!("xtask: {SECS_ENV}=0: fuzzing skipped");
        return Ok(());
    }
    run(None, secs)
}

fn run(only: Option<&str>, secs: u64) -> Result<()> {
    if secs == 0 {
        // libFuzzer reads `-max_total_time=0` as "no limit".
        bail!("fuzz for at least 1 second");
    }
    ensure_cargo_fuzz()?;
    let all = targets()?;
    let chosen: Vec<String> = match only {
        Some(t) if all.iter().any(|a| a == t) => vec![t.to_owned()],
        Some(t) => bail!("no fuzz target `{t}` (targets: {})", all.join(", ")),
        None => all,
    };
    let triple = host_triple()?;
    let t0 = Instant::now();
    let mut c = cargo();
    c.args(["fuzz", "build", "--sanitizer", "none", "--fuzz-dir", "fuzz"]);
    c.arg("--target").arg(&triple);
    c.arg("--target-dir").arg(fuzz_target_dir());
    c.args(only);
    status(c)?;
    eprintln!(
        "xtask: fuzz targets built in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    let bin_dir = fuzz_target_dir().join(&triple).join("release");
    let scratch = std::env::temp_dir().join(format!("vramio-fuzz-{}", std::process::id()));
    let mut outcomes = Vec::new();
    for t in &chosen {
        outcomes.push(run_one(&bin_dir.join(t), t, &scratch.join(t), secs)?);
    }
    println!("{:<14} {:>9} {:>8}  result", "target", "execs/s", "corpus");
    for o in &outcomes {
        let rate = o.execs_per_sec.map_or("?".to_owned(), |r| r.to_string());
        let result = match &o.crash {
            None => "no crash".to_owned(),
            Some((why, artifacts)) => format!(
                "CRASH ({why}): {}",
                artifacts
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        println!(
            "{:<14} {:>9} {:>8}  {result}",
            o.target, rate, o.corpus_files
        );
    }
    let crashed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.crash.is_some())
        .map(|o| o.target.as_str())
        .collect();
    if !crashed.is_empty() {
        bail!(
            "fuzz targets crashed: {} (inputs kept under {})",
            crashed.join(", "),
            scratch.display()
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// Runs `bin` for `secs` on a copy of its seeds and regressions under `dir`.
fn run_one(bin: &Path, target: &str, dir: &Path, secs: u64) -> Result<Outcome> {
    let corpus = dir.join("corpus");
    let artifacts = dir.join("artifacts");
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(&corpus)?;
    std::fs::create_dir_all(&artifacts)?;
    for seeds in ["corpus", "regressions"] {
        copy_files(&root().join("fuzz").join(seeds).join(target), &corpus)?;
    }
    eprintln!("xtask: == fuzz {target} for {secs} s");
    let out = Command::new(bin)
        .arg(&corpus)
        .arg(format!("-max_total_time={secs}"))
        .arg(format!("-timeout={HANG_SECS}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-print_final_stats=1")
        .output()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let log = String::from_utf8_lossy(&out.stderr);
    let execs_per_sec = log
        .lines()
        .find_map(|l| l.strip_prefix("stat::average_exec_per_sec:"))
        .and_then(|v| v.trim().parse().ok());
    let corpus_files = std::fs::read_dir(&corpus)?.count();
    let saved: Vec<PathBuf> = std::fs::read_dir(&artifacts)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    let crash = if out.status.success() && saved.is_empty() {
        None
    } else {
        // The end of libFuzzer's log holds the panic message and the input.
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        for line in tail.iter().rev() {
            eprintln!("  {line}");
        }
        Some((out.status.to_string(), saved))
    };
    Ok(Outcome {
        target: target.to_owned(),
        execs_per_sec,
        corpus_files,
        crash,
    })
}

/// Copies the files of `from` (if it exists) into `to`.
fn copy_files(from: &Path, to: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(());
    };
    for e in entries {
        let e = e?;
        if e.file_type()?.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))
                .with_context(|| format!("cannot copy {}", e.path().display()))?;
        }
    }
    Ok(())
}

/// `fuzz/target`, whatever `CARGO_TARGET_DIR` says: the fuzz build has its own flags.
fn fuzz_target_dir() -> PathBuf {
    root().join("fuzz").join("target")
}

/// The `[[bin]]` names of `fuzz/Cargo.toml`.
fn targets() -> Result<Vec<String>> {
    let manifest = root().join("fuzz/Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin && let Some(v) = line.strip_prefix("name") {
            let v = v
                .trim_start()
                .trim_start_matches('=')
                .trim()
                .trim_matches('"');
            names.push(v.to_owned());
        }
    }
    if names.is_empty() {
        bail!("{} names no [[bin]] target", manifest.display());
    }
    Ok(names)
}

fn host_triple() -> Result<String> {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .context("cannot run rustc -vV")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV names no host")
}

fn ensure_cargo_fuzz() -> Result<()> {
    let mut probe = cargo();
    probe.args(["fuzz", "--version"]);
    if probe.output().is_ok_and(|o| o.status.success()) {
        return Ok(());
    }
    eprintln!("xtask: installing cargo-fuzz (once)");
    let mut c = cargo();
    c.args(["install", "cargo-fuzz", "--locked"]);
    status(c)
}
