//! `vramio check`: sample this host for a short window (or read a recording), diagnose, print
//! the verdict with its path, evidence, suggestions and projections, and exit like a monitoring
//! plugin: 0 ok, 1 warning, 2 critical, 3 unknown.

use crate::recording;
use crate::report;
use crate::sampler::{Sampler, SamplerConfig, Stop};
use crate::sources::Sources;
use serde::Serialize;
use shared::Frame;
use shared::diagnosis::{Diagnosis, Thresholds, diagnose};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The exit code for "could not decide".
pub const EXIT_UNKNOWN: i32 = 3;

/// What `check` needs.
pub struct CheckOptions {
    pub json: bool,
    pub window: Duration,
    /// Whether `--window` was given (with `--from`, it then limits the recording).
    pub window_given: bool,
    pub from: Option<PathBuf>,
    pub interval: Duration,
    pub nvml_lib: Option<PathBuf>,
    pub thresholds: Thresholds,
    pub host: String,
}

/// `--json` output: the diagnosis plus where it came from.
#[derive(Serialize)]
struct JsonReport<'a> {
    host: &'a str,
    frames: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    #[serde(flatten)]
    diagnosis: &'a Diagnosis,
}

/// Runs the check and returns the process exit code.
pub fn run(opts: CheckOptions) -> i32 {
    let collected = match &opts.from {
        Some(path) => from_file(path, &opts),
        None => live(&opts),
    };
    let (frames, notes) = match collected {
        Ok(c) => c,
        Err(message) => return fail(opts.json, &message),
    };
    if frames.is_empty() {
        return fail(opts.json, "no frames to diagnose");
    }
    let host = frames
        .last()
        .map(|f| f.host.clone())
        .unwrap_or_else(|| opts.host.clone());
    let d = diagnose(&frames, &opts.thresholds, None);
    if opts.json {
        let report = JsonReport {
            host: &host,
            frames: frames.len(),
            notes,
            diagnosis: &d,
        };
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => return fail(true, &format!("cannot encode the report: {e}")),
        }
    } else {
        print!("{}", report::render(&d, &host, frames.len(), &notes));
    }
    d.severity.exit_code()
}

fn fail(json: bool, message: &str) -> i32 {
    if json {
        let v = serde_json::json!({
            "severity": "unknown",
            "verdict": "no_data",
            "error": message,
            "path": [],
            "findings": [],
            "projections": [],
        });
        println!("{v:#}");
    } else {
        println!("vramio check: UNKNOWN - {message}");
    }
    eprintln!("vramio check: {message}");
    EXIT_UNKNOWN
}

fn from_file(path: &Path, opts: &CheckOptions) -> Result<(Vec<Frame>, Vec<String>), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read recording {}: {e}", path.display()))?;
    let parsed = recording::parse(&text);
    let mut notes: Vec<String> = Vec::new();
    if !parsed.bad_lines.is_empty() {
        let shown: Vec<String> = parsed
            .bad_lines
            .iter()
            .take(3)
            .map(|b| b.to_string())
            .collect();
        notes.push(format!(
            "{} skipped line(s) in {}: {}",
            parsed.bad_lines.len(),
            path.display(),
            shown.join("; ")
        ));
    }
    if parsed.frames.is_empty() {
        let why = notes
            .first()
            .cloned()
            .unwrap_or_else(|| "the file is empty".into());
        return Err(format!("no frames in {}: {why}", path.display()));
    }
    let frames = if opts.window_given {
        recording::last_window(parsed.frames, opts.window)
    } else {
        parsed.frames
    };
    Ok((frames, notes))
}

fn live(opts: &CheckOptions) -> Result<(Vec<Frame>, Vec<String>), String> {
    let mut sampler = Sampler::new(
        Sources::system_default(opts.nvml_lib.clone()),
        SamplerConfig {
            host: opts.host.clone(),
            interval: opts.interval,
        },
    )
    .map_err(|e| format!("cannot start the sampler: {e}"))?;
    let stop = Stop::new();
    let start = Instant::now();
    let mut frames = Vec::new();
    let mut seq = 1;
    loop {
        let mut frame = sampler.tick();
        frame.seq = seq;
        seq += 1;
        frames.push(frame);
        let next = start + opts.interval * u32::try_from(frames.len()).unwrap_or(u32::MAX);
        if next.duration_since(start) > opts.window {
            break;
        }
        stop.sleep_until(next);
    }
    Ok((frames, Vec::new()))
}
