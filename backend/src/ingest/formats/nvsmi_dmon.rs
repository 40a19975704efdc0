//! `nvidia-smi dmon` logs: any `-s` selection (columns found by the `# gpu pwr gtemp ...`
//! header's names: `pwr`, `gtemp` or the old single `temp`, `sm`, `mem`, `fb`; others ignored),
//! the `-o T` / `-o D` / `-o DT` prefixes (`#Date Time`: `20230105 12:00:01`), `-` for
//! unsupported, the header repeated every so many lines. One sample per timestamp, or per
//! cycle through the GPU indexes when there is no timestamp.

use super::nvsmi_values::{self as v, keep, quote};
use crate::ingest::clock;
use crate::ingest::model::{Emit, GpuRow, Importer, Note, Sample};

/// The column names of a `# gpu pwr ...` / `#Date Time gpu ...` header, lowercased; `None`
/// for the units line under it (`# Idx W C`, `#YYYYMMDD HH:MM:SS Idx`) and for other lines.
pub(crate) fn hash_header(line: &str) -> Option<Vec<String>> {
    let rest = line.trim().strip_prefix('#')?;
    let names: Vec<String> = rest
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    names.iter().any(|n| n == "gpu").then_some(names)
}

/// The time of a row from its `date` and `time` columns, if the log has both.
pub(crate) fn row_time(date: Option<&str>, time: Option<&str>) -> Option<u64> {
    clock::parse(&format!("{} {}", date?, time?))
}

/// Whether the first `#` line of `head` is a header with `gpu` and, for pmon, `pid`.
pub(crate) fn sniff_hash(head: &[&str], want_pid: bool, what: &str) -> Result<(), String> {
    let first = head.first().ok_or("the file is empty")?;
    let names = hash_header(first)
        .ok_or_else(|| format!("`{}` is not a `# gpu ...` {what} header", quote(first)))?;
    if names.iter().any(|n| n == "pid") != want_pid {
        let is = if want_pid { "dmon" } else { "pmon" };
        return Err(format!("`{}` is a {is} header", quote(first)));
    }
    Ok(())
}

/// Whether `head` looks like `nvidia-smi dmon` output.
pub fn sniff(head: &[&str]) -> Result<(), String> {
    sniff_hash(head, false, "dmon")
}

/// A fresh importer for one file.
pub fn importer() -> DmonImporter {
    DmonImporter::default()
}

/// The `dmon` importer.
#[derive(Debug, Default)]
pub struct DmonImporter {
    cols: Option<Vec<String>>,
    /// The sample being gathered and the GPU indexes in it.
    open: Option<(Sample, Vec<u32>)>,
    last_gpus: Option<usize>,
    emitted: usize,
    any_time: bool,
    /// A `Time` column without a `Date` one: the time of day cannot be placed.
    time_only: bool,
    /// A row with too few fields, noted once the next line shows whether it was the last.
    short: Option<(usize, usize, usize)>,
}

impl DmonImporter {
    fn flush(&mut self, out: &mut Emit) {
        if let Some((s, _)) = self.open.take() {
            self.any_time |= s.t_ms.is_some();
            self.last_gpus = Some(s.gpus.len());
            self.emitted = self.emitted.saturating_add(1);
            out.samples.push(s);
        }
    }

    fn row(&mut self, no: usize, line: &str, out: &mut Emit) {
        let Some(cols) = self.cols.as_ref() else {
            out.notes
                .push(Note::at(no, "a dmon row before any `# gpu ...` header"));
            return;
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < cols.len() {
            self.short = Some((no, cols.len(), words.len()));
            return;
        }
        if words.len() > cols.len() {
            out.notes.push(Note::at(
                no,
                format!("expected {} fields, found {}", cols.len(), words.len()),
            ));
            return;
        }
        let mut why = Vec::new();
        let mut g = GpuRow::default();
        let (mut date, mut time) = (None, None);
        for (name, w) in cols.iter().zip(&words) {
            let name = name.as_str();
            match name {
                "date" => date = Some(*w),
                "time" => time = Some(*w),
                "gpu" => g.index = keep(v::whole(w, name), &mut why),
                "pwr" => g.power_w = keep(v::watts(w, name), &mut why),
                "gtemp" | "temp" => g.temperature_c = keep(v::celsius(w, name), &mut why),
                "sm" => g.util_gpu_pct = keep(v::percent(w, name), &mut why),
                "mem" => g.util_mem_pct = keep(v::percent(w, name), &mut why),
                "fb" => g.memory_used_bytes = keep(v::mib(w, name), &mut why),
                _ => {}
            }
        }
        self.time_only |= time.is_some() && date.is_none();
        let t = row_time(date, time);
        if (date.is_some() && time.is_some()) && t.is_none() {
            why.push(format!(
                "`{} {}` is not a date and time",
                quote(date.unwrap_or("")),
                quote(time.unwrap_or(""))
            ));
        }
        out.notes.extend(why.into_iter().map(|w| Note::at(no, w)));
        let starts_new = match (&self.open, g.index) {
            (None, _) | (Some(_), None) => true,
            (Some((s, seen)), Some(i)) => seen.contains(&i) || s.t_ms != t,
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
            ));
        }
        if let Some((s, seen)) = self.open.as_mut() {
            seen.extend(g.index);
            s.gpus.push(g);
        }
    }
}

impl Importer for DmonImporter {
    fn line(&mut self, no: usize, line: &str, out: &mut Emit) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        if let Some((at, want, found)) = self.short.take() {
            out.notes.push(Note::at(
                at,
                format!("expected {want} fields, found {found}"),
            ));
        }
        if t.starts_with('#') {
            if let Some(cols) = hash_header(t) {
                self.cols = Some(cols);
            }
            return;
        }
        self.row(no, t, out);
    }

    fn finish(&mut self, out: &mut Emit) {
        if let Some((at, want, found)) = self.short.take() {
            out.notes.push(Note::at(
                at,
                format!("the last line is cut off ({found} of {want} fields), dropped"),
            ));
        }
        if let (Some((s, seen)), Some(prev)) = (&self.open, self.last_gpus)
            && seen.len() == s.gpus.len()
            && s.gpus.len() < prev
        {
            out.notes.push(Note::at(
                s.line,
                format!(
                    "the last sample has {} of {prev} GPUs (cut off at the end of the file), dropped",
                    s.gpus.len()
                ),
            ));
            self.open = None;
        }
        self.flush(out);
        if self.emitted > 0 && !self.any_time {
            let why = if self.time_only {
                "no dates (`-o T` prints the time of day only): samples are aligned by order"
            } else {
                crate::ingest::model::UNTIMED
            };
            out.notes.push(Note::file(why));
        }
    }
}

#[cfg(test)]
#[path = "nvsmi_dmon_tests.rs"]
mod tests;
