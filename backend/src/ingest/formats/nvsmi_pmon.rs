//! `nvidia-smi pmon` logs: `# gpu pid type sm mem enc dec command` and the newer sets (`jpg
//! ofa`, `fb` with `-s m`, `ccpm`), `-o DT` prefixes, `-` for none (an idle GPU's line has `-`
//! for its pid). A process row per line, with `fb` (MiB) as its memory when present; the
//! command is the rest of the line (nvidia-smi cuts it to 15 characters and pads it).
//!
//! A sample per timestamp, or per cycle when there is none: a cycle lists the GPUs in order,
//! so a new one starts when the GPU index goes back or a (GPU, pid) pair repeats.

use super::nvsmi_dmon::{hash_header, row_time, sniff_hash};
use super::nvsmi_values::{self as v, keep, quote};
use crate::ingest::model::{Emit, Importer, Note, ProcessRow, Sample};

/// Whether `head` looks like `nvidia-smi pmon` output.
pub fn sniff(head: &[&str]) -> Result<(), String> {
    sniff_hash(head, true, "pmon")
}

/// A fresh importer for one file.
pub fn importer() -> PmonImporter {
    PmonImporter::default()
}

/// The sample being gathered, its (GPU, pid) pairs (pid `None` for an idle GPU's line) and
/// the last GPU index seen.
type Open = (Sample, Vec<(u32, Option<u32>)>, u32);

/// The `pmon` importer.
#[derive(Debug, Default)]
pub struct PmonImporter {
    cols: Option<Vec<String>>,
    open: Option<Open>,
    emitted: usize,
    any_time: bool,
}

/// Byte offset in `s` just past its `n`th word (1-based), if it has that many.
fn after_words(s: &str, n: usize) -> Option<usize> {
    let mut count = 0;
    let mut in_word = false;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            if in_word {
                count += 1;
                if count == n {
                    return Some(i);
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    (in_word && count + 1 == n).then_some(s.len())
}

impl PmonImporter {
    fn flush(&mut self, out: &mut Emit) {
        if let Some((s, _, _)) = self.open.take() {
            self.any_time |= s.t_ms.is_some();
            self.emitted = self.emitted.saturating_add(1);
            out.samples.push(s);
        }
    }

    fn row(&mut self, no: usize, line: &str, out: &mut Emit) {
        let Some(cols) = self.cols.as_ref() else {
            out.notes
                .push(Note::at(no, "a pmon row before any `# gpu pid ...` header"));
            return;
        };
        // Every column but the last (`command`) is one word; the command is the rest.
        let fixed = cols.len().saturating_sub(1);
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < fixed {
            out.notes.push(Note::at(
                no,
                format!("expected at least {fixed} fields, found {}", words.len()),
            ));
            return;
        }
        let command = after_words(line, fixed)
            .and_then(|i| line.get(i..))
            .and_then(v::text);
        let mut why = Vec::new();
        let (mut date, mut time) = (None, None);
        let (mut gpu, mut pid, mut fb) = (None, None, None);
        for (name, w) in cols.iter().zip(&words).take(fixed) {
            let name = name.as_str();
            match name {
                "date" => date = Some(*w),
                "time" => time = Some(*w),
                "gpu" => gpu = keep(v::whole(w, name), &mut why),
                "pid" => pid = keep(v::whole(w, name), &mut why),
                "fb" => fb = keep(v::mib(w, name), &mut why),
                _ => {}
            }
        }
        let t = row_time(date, time);
        if date.is_some() && time.is_some() && t.is_none() {
            why.push(format!(
                "`{} {}` is not a date and time",
                quote(date.unwrap_or("")),
                quote(time.unwrap_or(""))
            ));
        }
        out.notes.extend(why.into_iter().map(|w| Note::at(no, w)));
        let Some(g) = gpu else {
            return;
        };
        let starts_new = match &self.open {
            None => true,
            Some((s, seen, last)) => g < *last || seen.contains(&(g, pid)) || s.t_ms != t,
        };
        if starts_new {
            self.flush(out);
            self.open = Some((
                Sample {
                    t_ms: t,
                    line: no,
                    ..Sample::default()
                },
                Vec::new(),
                g,
            ));
        }
        if let Some((s, seen, last)) = self.open.as_mut() {
            seen.push((g, pid));
            *last = g;
            if let Some(pid) = pid {
                s.processes.push(ProcessRow {
                    gpu_index: Some(g),
                    gpu_uuid: None,
                    pid,
                    name: command,
                    used_bytes: fb,
                    mig: None,
                });
            }
        }
    }
}

impl Importer for PmonImporter {
    fn line(&mut self, no: usize, line: &str, out: &mut Emit) {
        let t = line.trim_end();
        if t.trim_start().is_empty() {
            return;
        }
        if t.trim_start().starts_with('#') {
            if let Some(cols) = hash_header(t) {
                self.cols = Some(cols);
            }
            return;
        }
        self.row(no, t, out);
    }

    fn finish(&mut self, out: &mut Emit) {
        self.flush(out);
        if self.emitted > 0 && !self.any_time {
            out.notes.push(Note::untimed());
        }
    }
}

#[cfg(test)]
#[path = "nvsmi_pmon_tests.rs"]
mod tests;
