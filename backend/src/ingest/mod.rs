//! The ingest stage, beside `collect`: frames from logs instead of from this host. Importers read
//! users' existing logs (`nvidia-smi` CSV, dmon, pmon and tables, `iostat -x` text and JSON,
//! `df`) line by line into [`model::Sample`]s, with bounded memory and every bad line named in
//! a [`model::Note`]; what a log lacks stays absent.

pub mod clock;
pub mod convert;
pub mod formats;
pub mod lines;
pub mod model;
pub mod player;
pub mod source;
pub mod timeline;

use shared::Frame;
use source::{FormatSpec, OpenError, SampleStream};
use std::path::PathBuf;

/// What to import and how.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    pub files: Vec<PathBuf>,
    /// `--format`: this format for every file instead of detecting each.
    pub format: Option<String>,
    /// `--interval`, in ms: the step of files without timestamps.
    pub step_ms: u64,
    /// The host name the frames carry.
    pub host: String,
    /// Flags some formats need.
    pub tuning: source::Tuning,
}

/// Why nothing could be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error("{0}")]
    Mixed(String),
    #[error("no file to import")]
    NoFiles,
}

/// The frames of vramio recordings as they are, in time order (a recording imported again
/// gives the same frames); bad lines are named.
fn recorded(paths: &[&PathBuf], mut emit: impl FnMut(Frame)) -> Vec<String> {
    let mut frames = Vec::new();
    let mut notes = Vec::new();
    for path in paths {
        notes.push(format!("{}: read as a vramio recording", path.display()));
        match std::fs::File::open(path)
            .and_then(|f| crate::ndjson::read(std::io::BufReader::new(f)))
        {
            Ok(parsed) => {
                notes.extend(parsed.bad_lines.iter().map(|b| match b.line {
                    Some(n) => format!("{}:{n}: {}", path.display(), b.reason),
                    None => format!("{}: {}", path.display(), b.reason),
                }));
                frames.extend(parsed.frames);
            }
            Err(e) => notes.push(format!("{}: {e}", path.display())),
        }
    }
    frames.sort_by_key(|f| (f.t_ms, f.seq));
    frames.into_iter().for_each(&mut emit);
    notes
}

/// Every format vramio imports, in the order detection tries them.
pub fn formats() -> Vec<FormatSpec> {
    formats::ALL.to_vec()
}

/// Imports `opts.files` into frames, merged by time, handed to `emit` in order (the caller may
/// write them out one by one: nothing is held but one moment per file). Returns the notes: each
/// file's format, its bad lines as `file:line: why`, and how the files were laid out in time.
pub fn import(opts: &ImportOptions, emit: impl FnMut(Frame)) -> Result<Vec<String>, ImportError> {
    if opts.files.is_empty() {
        return Err(ImportError::NoFiles);
    }
    let all = formats();
    let mut streams = Vec::new();
    let mut notes = Vec::new();
    let mut origin_ms = None;
    let mut recordings = Vec::new();
    for path in &opts.files {
        let spec = match &opts.format {
            Some(id) => source::by_id(id, &all)?,
            None => {
                let head = source::head(path)?;
                if source::is_recording(path, &head) {
                    recordings.push(path);
                    continue;
                }
                source::detect(path, &head, &all)?
            }
        };
        notes.push(format!("{}: read as {}", path.display(), spec.id));
        if origin_ms.is_none()
            && let Ok(modified) = std::fs::metadata(path).and_then(|m| m.modified())
        {
            origin_ms = modified
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        }
        streams.push(SampleStream::open(path, spec, &opts.tuning)?);
    }
    if !recordings.is_empty() {
        if !streams.is_empty() {
            return Err(ImportError::Mixed(format!(
                "{} is a vramio recording and the other files are logs: import the logs first, \
                 or give recordings on their own",
                recordings[0].display()
            )));
        }
        return Ok(recorded(&recordings, emit));
    }
    let layout = timeline::Layout {
        step_ms: opts.step_ms,
        origin_ms,
    };
    // The streams are read as the merge pulls; their notes are collected at the end.
    let cells: Vec<std::cell::RefCell<SampleStream>> =
        streams.into_iter().map(std::cell::RefCell::new).collect();
    let inputs = cells
        .iter()
        .map(|c| {
            let label = c.borrow().label.clone();
            (label, std::iter::from_fn(move || c.borrow_mut().next()))
        })
        .collect();
    let layout_notes = timeline::assemble(inputs, &opts.host, layout, emit);
    for c in cells {
        let s = c.into_inner();
        notes.extend(s.notes);
        notes.extend(s.error);
    }
    notes.extend(layout_notes);
    Ok(notes)
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod detect_tests;
