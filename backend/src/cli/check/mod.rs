//! `vramio check`: sample this host for a short window (or read a recording), diagnose, print
//! the verdict with its path, evidence, suggestions and projections, and exit like a monitoring
//! plugin: 0 ok, 1 warning, 2 critical, 3 unknown.

pub mod text;

use crate::collect::sampler::{Sampler, SamplerConfig};
use crate::collect::sources::Sources;
use crate::collect::ticker::{Stop, Ticker};
use crate::ndjson;
use serde::Serialize;
use shared::Frame;
use shared::diagnosis::{Diagnosis, Thresholds, diagnose};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
        print!("{}", text::render(&d, &host, frames.len(), &notes));
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
    let parsed = ndjson::parse(&text);
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
        ndjson::last_window(parsed.frames, opts.window)
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
    // Ticks at 0, 1, ... intervals up to and including the window's end.
    let mut ticker = Ticker::new(opts.interval, Stop::new());
    let mut frames = Vec::new();
    let mut seq = 1;
    while ticker.tick(Some(opts.window)).is_some() {
        let mut frame = sampler.tick();
        frame.seq = seq;
        seq += 1;
        frames.push(frame);
    }
    Ok((frames, Vec::new()))
}
