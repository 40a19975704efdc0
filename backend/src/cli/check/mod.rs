//! `vramio check`: sample this host for a short window (or read a recording), diagnose, print
//! the verdict with its path, evidence, suggestions and projections, and exit like a monitoring
//! plugin: 0 ok, 1 warning, 2 critical, 3 unknown.

pub mod jobs;
pub mod text;

use crate::collect::sampler::{Sampler, SamplerConfig};
use crate::collect::sources::Sources;
use crate::collect::sources::jobs::{JOB_PERIOD, ProcJobs};
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
    /// Recordings or logs to diagnose instead of sampling (none: sample).
    pub from: Vec<PathBuf>,
    /// `--format` for the logs.
    pub format: Option<String>,
    /// What some log formats need told.
    pub tuning: crate::ingest::source::Tuning,
    pub interval: Duration,
    pub nvml_lib: Option<PathBuf>,
    pub job_map_dir: Option<PathBuf>,
    pub thresholds: Thresholds,
    pub host: String,
}

/// `--json` output: the diagnosis plus where it came from (and, when there was nothing to
/// diagnose, why: the diagnosis is then the `no_data` one of an empty window).
#[derive(Serialize)]
struct JsonReport<'a> {
    host: &'a str,
    frames: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    /// The jobs of the newest frame, biggest GPU memory first, each with its verdict (the
    /// diagnosis' own `jobs` are written here, not twice).
    jobs: Vec<jobs::JobReport<'a>>,
    #[serde(flatten)]
    diagnosis: &'a Diagnosis,
}

/// Runs the check and returns the process exit code.
pub fn run(opts: CheckOptions) -> i32 {
    let collected = if opts.from.is_empty() {
        live(&opts)
    } else {
        from_files(&opts)
    };
    let (frames, notes) = match collected {
        Ok(c) => c,
        Err(message) => return fail(&opts, &message),
    };
    if frames.is_empty() {
        return fail(&opts, "no frames to diagnose");
    }
    let host = frames
        .last()
        .map(|f| f.host.clone())
        .unwrap_or_else(|| opts.host.clone());
    let d = diagnose(&frames, &opts.thresholds, None);
    if opts.json {
        let host_only = Diagnosis {
            jobs: Vec::new(),
            ..d.clone()
        };
        let report = JsonReport {
            host: &host,
            frames: frames.len(),
            notes,
            error: None,
            jobs: jobs::latest(&frames)
                .iter()
                .map(|j| jobs::JobReport::of(j, &d, text::REPORT_TZ))
                .collect(),
            diagnosis: &host_only,
        };
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("vramio check: cannot encode the report: {e}");
                return EXIT_UNKNOWN;
            }
        }
    } else {
        print!(
            "{}",
            text::render(&d, &host, frames.len(), &notes, jobs::latest(&frames))
        );
    }
    d.severity.exit_code()
}

/// Nothing to diagnose: says why, and with `--json` prints the diagnosis of an empty window
/// (`no_data`, `unknown`) like any other report, so scripts read one shape.
fn fail(opts: &CheckOptions, message: &str) -> i32 {
    if opts.json {
        match no_data_report(&opts.host, &opts.thresholds, message) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("vramio check: cannot encode the report: {e}"),
        }
    } else {
        println!("vramio check: UNKNOWN - {message}");
    }
    eprintln!("vramio check: {message}");
    EXIT_UNKNOWN
}

/// The `--json` report when there is nothing to diagnose.
fn no_data_report(
    host: &str,
    thresholds: &Thresholds,
    message: &str,
) -> Result<String, serde_json::Error> {
    let d = diagnose(&[], thresholds, None);
    serde_json::to_string_pretty(&JsonReport {
        host,
        frames: 0,
        notes: Vec::new(),
        error: Some(message),
        jobs: Vec::new(),
        diagnosis: &d,
    })
}

/// Frames from `--from`: recordings as they are (several in time order), logs imported and
/// merged by time; the `--window` end of them when it is given.
fn from_files(opts: &CheckOptions) -> Result<(Vec<Frame>, Vec<String>), String> {
    let recordings = opts.format.is_none()
        && opts.from.iter().all(|p| {
            crate::ingest::source::head(p).is_ok_and(|h| crate::ingest::source::is_recording(p, &h))
        });
    let (mut frames, notes) = if recordings {
        let mut frames = Vec::new();
        let mut notes = Vec::new();
        for path in &opts.from {
            let (f, n) = from_file(path)?;
            frames.extend(f);
            notes.extend(n);
        }
        frames.sort_by_key(|f| f.t_ms);
        (frames, notes)
    } else {
        let import = crate::ingest::ImportOptions {
            files: opts.from.clone(),
            format: opts.format.clone(),
            tuning: opts.tuning.clone(),
            step_ms: u64::try_from(opts.interval.as_millis()).unwrap_or(u64::MAX),
            host: crate::cli::import::host_of(&opts.from),
        };
        let mut frames = Vec::new();
        let notes =
            crate::ingest::import(&import, |f| frames.push(f)).map_err(|e| e.to_string())?;
        if frames.is_empty() {
            return Err(format!("no samples in the logs: {}", notes.join("; ")));
        }
        (frames, notes)
    };
    if opts.window_given {
        frames = ndjson::last_window(frames, opts.window);
    }
    Ok((frames, notes))
}

fn from_file(path: &Path) -> Result<(Vec<Frame>, Vec<String>), String> {
    let parsed = std::fs::File::open(path)
        .and_then(|f| ndjson::read(std::io::BufReader::new(f)))
        .map_err(|e| format!("cannot read recording {}: {e}", path.display()))?;
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
    Ok((parsed.frames, notes))
}

fn live(opts: &CheckOptions) -> Result<(Vec<Frame>, Vec<String>), String> {
    let mut sources = Sources::system_default(opts.nvml_lib.clone());
    // A one-shot window: the jobs' processes are measured twice within it (at least), so their
    // rates are known by its end, where `serve` measures them every JOB_PERIOD for its cost.
    sources.jobs = Box::new(
        ProcJobs::system()
            .with_period((opts.window / 2).min(JOB_PERIOD))
            .with_job_map(opts.job_map_dir.clone()),
    );
    let mut sampler = Sampler::new(
        sources,
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

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::{Severity, Verdict};

    #[test]
    fn nothing_to_diagnose_is_a_diagnosis_like_any_other() {
        let text =
            no_data_report("h", &Thresholds::default(), "no frames in x.ndjson").expect("encodes");
        let d: Diagnosis = serde_json::from_str(&text).expect("reads back as a Diagnosis");
        assert_eq!(d.verdict, Verdict::NoData);
        assert_eq!(d.severity, Severity::Unknown);
        assert_eq!(d.severity.exit_code(), EXIT_UNKNOWN);
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["error"], "no frames in x.ndjson");
        assert_eq!(v["host"], "h");
        assert_eq!(v["frames"], 0);
    }
}
