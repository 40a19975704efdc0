//! One input file: its format (forced, or detected from its first lines) and its samples as a
//! stream, read a line at a time; every note is kept with the file's name and line.

use super::lines::{Line, LineReader, too_long};
use super::model::{Emit, Importer, Note, Sample};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// A format vramio can import.
#[derive(Clone, Copy)]
pub struct FormatSpec {
    /// The `--format` name.
    pub id: &'static str,
    /// What it reads, for the error that lists the formats tried.
    pub what: &'static str,
    pub sniff: fn(&[&str]) -> Result<(), String>,
    pub importer: fn(&Tuning) -> Box<dyn Importer>,
}

/// What some formats need told: the flags `import`, `check --from` and `replay` pass on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    /// `--fields`: the `--query-gpu` (or `--query-compute-apps`) field list of a CSV without a
    /// header.
    pub fields: Option<Vec<String>>,
    /// `--keep-first-report`: an iostat log taken with `-y` has no since-boot first report.
    pub keep_first_report: bool,
    /// `--df-si`: `df -H` sizes (powers of 1000; `-h` and `-H` print the same header).
    pub df_si: bool,
}

impl std::fmt::Debug for FormatSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

/// Lines of a file's head that detection looks at.
pub const HEAD_LINES: usize = 30;

/// Why a file cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is empty")]
    Empty { path: PathBuf },
    #[error("{path} matches no format vramio imports; tried:\n{tried}")]
    NoFormat { path: PathBuf, tried: String },
    #[error("`{0}` is not a format vramio imports (formats: {1})")]
    UnknownFormat(String, String),
}

/// The first non-empty lines of `path` (at most [`HEAD_LINES`]).
pub fn head(path: &Path) -> Result<Vec<String>, OpenError> {
    let io = |source| OpenError::Io {
        path: path.to_owned(),
        source,
    };
    head_of(BufReader::new(File::open(path).map_err(io)?)).map_err(io)
}

/// The first non-empty lines of `input` (at most [`HEAD_LINES`]): [`head`] without the file, for
/// callers that hold the text (the fuzz target).
pub fn head_of(input: impl BufRead) -> std::io::Result<Vec<String>> {
    let mut lines = LineReader::new(input);
    let mut head = Vec::new();
    while head.len() < HEAD_LINES {
        match lines.next_line()? {
            None => break,
            Some(Line::Text(_, t)) if !t.trim().is_empty() => head.push(t.into_owned()),
            Some(_) => {}
        }
    }
    Ok(head)
}

/// The format of a file whose first lines are `head`: the first of `formats` whose sniff
/// accepts it, or an error listing each format and why it refused.
pub fn detect<'f>(
    path: &Path,
    head: &[String],
    formats: &'f [FormatSpec],
) -> Result<&'f FormatSpec, OpenError> {
    if head.is_empty() {
        return Err(OpenError::Empty {
            path: path.to_owned(),
        });
    }
    let lines: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut tried = String::new();
    for f in formats {
        match (f.sniff)(&lines) {
            Ok(()) => return Ok(f),
            Err(why) => tried.push_str(&format!("  {} ({}): {why}\n", f.id, f.what)),
        }
    }
    Err(OpenError::NoFormat {
        path: path.to_owned(),
        tried: tried.trim_end().to_owned(),
    })
}

/// The format named `id`.
pub fn by_id<'f>(id: &str, formats: &'f [FormatSpec]) -> Result<&'f FormatSpec, OpenError> {
    formats.iter().find(|f| f.id == id).ok_or_else(|| {
        let ids: Vec<&str> = formats.iter().map(|f| f.id).collect();
        OpenError::UnknownFormat(id.to_owned(), ids.join(", "))
    })
}

/// The samples of one file, pulled one at a time.
pub struct SampleStream {
    pub label: String,
    pub format: &'static str,
    lines: LineReader<BufReader<File>>,
    importer: Box<dyn Importer>,
    out: Emit,
    queue: VecDeque<Sample>,
    /// Notes so far, as `file:line: why` (or `file: why`).
    pub notes: Vec<String>,
    /// The first I/O error, which ends the stream.
    pub error: Option<String>,
    finished: bool,
}

impl SampleStream {
    pub fn open(
        path: &Path,
        format: &FormatSpec,
        tuning: &Tuning,
    ) -> Result<SampleStream, OpenError> {
        let file = File::open(path).map_err(|source| OpenError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(SampleStream {
            label: path.display().to_string(),
            format: format.id,
            lines: LineReader::new(BufReader::new(file)),
            importer: (format.importer)(tuning),
            out: Emit::default(),
            queue: VecDeque::new(),
            notes: Vec::new(),
            error: None,
            finished: false,
        })
    }

    fn drain(&mut self) {
        self.queue.extend(self.out.samples.drain(..));
        for n in self.out.notes.drain(..) {
            self.notes.push(note_text(&self.label, &n));
        }
    }
}

/// `file:line: why`, or `file: why` for a note about the whole file.
pub fn note_text(label: &str, n: &Note) -> String {
    match n.line {
        Some(line) => format!("{label}:{line}: {}", n.message),
        None => format!("{label}: {}", n.message),
    }
}

impl Iterator for SampleStream {
    type Item = Sample;

    fn next(&mut self) -> Option<Sample> {
        loop {
            if let Some(s) = self.queue.pop_front() {
                return Some(s);
            }
            if self.finished {
                return None;
            }
            match self.lines.next_line() {
                Ok(Some(Line::Text(no, text))) => self.importer.line(no, &text, &mut self.out),
                Ok(Some(Line::TooLong(no))) => self.out.notes.push(too_long(no)),
                Ok(None) => {
                    self.importer.finish(&mut self.out);
                    self.finished = true;
                }
                Err(e) => {
                    self.error = Some(format!("{}: {e}", self.label));
                    self.importer.finish(&mut self.out);
                    self.finished = true;
                }
            }
            self.drain();
        }
    }
}

/// Whether `path` (whose first lines are `head`) is a vramio recording: named `*.ndjson`, or one
/// of its first lines is a frame (a damaged recording may start with a bad line, which the
/// reader then names).
pub fn is_recording(path: &Path, head: &[String]) -> bool {
    path.extension().is_some_and(|e| e == "ndjson")
        || head
            .iter()
            .any(|l| l.starts_with('{') && serde_json::from_str::<shared::Frame>(l).is_ok())
}
