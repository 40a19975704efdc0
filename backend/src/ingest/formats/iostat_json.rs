//! `iostat -o JSON` (sysstat 11.5 and later): `{"sysstat": {"hosts": [{..., "date": ...,
//! "statistics": [{"timestamp": ..., "avg-cpu": {...}, "disk": [{"disk_device": ...}]}]}]}}`,
//! with `-x` (new keys `r/s`, `rkB/s`, `aqu-sz`, `util`; 11.x keys `r`, `rkB`, `avgqu-sz`,
//! `await`) or without (`tps`, `kB_read/s`), pretty-printed or on one line.
//!
//! Read incrementally: a small lexer tracks nesting over the lines and hands each element of
//! `statistics` to serde_json when it closes (at most [`MAX_ENTRY_BYTES`]), so memory stays
//! bounded by one report whatever the file's size. The since-boot rule is the text importer's.

use super::sysstat::{self, Reports, Stamps};
use crate::ingest::model::{CpuRow, DiskRow, Emit, Importer, Note, Sample};
use serde_json::Value;

/// The largest `statistics` element kept (a report of thousands of devices fits).
pub const MAX_ENTRY_BYTES: usize = 4 << 20;
/// Nesting deeper than any iostat document; past it the input is not iostat's.
const MAX_DEPTH: usize = 64;
/// Longest key or `date` value read outside an entry.
const MAX_STRING: usize = 256;

/// Whether `head` (the first non-empty lines) looks like iostat's JSON.
pub fn sniff(head: &[&str]) -> Result<(), String> {
    let Some(first) = head.first().map(|l| l.trim()) else {
        return Err("the file is empty".to_owned());
    };
    if !first.starts_with('{') {
        return Err(format!(
            "the first line `{}` does not open a JSON object",
            sysstat::short(first)
        ));
    }
    if head.iter().any(|l| l.contains("\"sysstat\"")) {
        Ok(())
    } else {
        Err(format!(
            "no `\"sysstat\"` key in the first {} lines (not iostat's JSON)",
            head.len()
        ))
    }
}

/// A fresh importer that skips the since-boot report.
pub fn importer() -> IostatJson {
    importer_with(true)
}

/// `skip_first = false` keeps the first report (for a log taken with `iostat -y`).
pub fn importer_with(skip_first: bool) -> IostatJson {
    IostatJson {
        reports: Reports::new(skip_first),
        stamps: Stamps::default(),
        stack: Vec::new(),
        in_string: false,
        escape: false,
        text: String::new(),
        entry: None,
        seen_lines: false,
        seen_statistics: false,
        broken: false,
    }
}

#[derive(Debug)]
struct Frame {
    object: bool,
    /// The key this container has in its parent object.
    key: Option<String>,
    expecting_key: bool,
    /// The key whose value comes next (objects).
    cur_key: Option<String>,
}

#[derive(Debug)]
struct Entry {
    line: usize,
    /// Stack depth of the entry's own frame.
    depth: usize,
    text: String,
    too_big: bool,
}

/// The importer; see the module docs.
#[derive(Debug)]
pub struct IostatJson {
    reports: Reports,
    stamps: Stamps,
    stack: Vec<Frame>,
    in_string: bool,
    escape: bool,
    /// The string being read outside an entry (a key, the host's `date`).
    text: String,
    entry: Option<Entry>,
    seen_lines: bool,
    seen_statistics: bool,
    /// The nesting went past [`MAX_DEPTH`]: the rest is ignored.
    broken: bool,
}

impl IostatJson {
    fn string_done(&mut self) {
        let Some(top) = self.stack.last_mut() else {
            return;
        };
        if !top.object {
            return;
        }
        if top.expecting_key {
            top.cur_key = Some(std::mem::take(&mut self.text));
        } else if self.entry.is_none() && top.cur_key.as_deref() == Some("date") {
            self.stamps.date_ms = sysstat::date_ms(&self.text);
        }
    }

    fn open(&mut self, no: usize, object: bool, out: &mut Emit) {
        if self.stack.len() >= MAX_DEPTH {
            self.broken = true;
            out.notes.push(Note::at(
                no,
                format!("nesting deeper than {MAX_DEPTH}: not iostat's JSON, the rest is ignored"),
            ));
            return;
        }
        let (key, in_statistics) = match self.stack.last_mut() {
            Some(top) if top.object => (top.cur_key.take(), false),
            Some(top) => (None, top.key.as_deref() == Some("statistics")),
            None => (None, false),
        };
        if key.as_deref() == Some("statistics") {
            self.seen_statistics = true;
        }
        self.stack.push(Frame {
            object,
            key,
            expecting_key: object,
            cur_key: None,
        });
        if object && in_statistics && self.entry.is_none() {
            self.entry = Some(Entry {
                line: no,
                depth: self.stack.len(),
                text: String::from("{"),
                too_big: false,
            });
        }
    }

    fn close(&mut self, out: &mut Emit) {
        let depth = self.stack.len();
        if self.stack.pop().is_none() {
            return;
        }
        if self.entry.as_ref().is_some_and(|e| e.depth == depth)
            && let Some(entry) = self.entry.take()
        {
            self.entry_done(entry, out);
        }
    }

    fn entry_done(&mut self, entry: Entry, out: &mut Emit) {
        if entry.too_big {
            out.notes.push(Note::at(
                entry.line,
                format!("a statistics entry larger than {MAX_ENTRY_BYTES} bytes, skipped"),
            ));
            return;
        }
        let value: Value = match serde_json::from_str(&entry.text) {
            Ok(v) => v,
            Err(e) => {
                out.notes.push(Note::at(
                    entry.line,
                    format!("a statistics entry that is not valid JSON ({e}), skipped"),
                ));
                return;
            }
        };
        let mut sample = Sample {
            line: entry.line,
            ..Sample::default()
        };
        let mut errors = Vec::new();
        if let Some(ts) = value.get("timestamp").and_then(Value::as_str) {
            match self.stamps.read(entry.line, ts, out) {
                Some(t) => sample.t_ms = t,
                None => errors.push(format!("`{}` is not a timestamp", sysstat::short(ts))),
            }
        }
        if let Some(cpu) = value.get("avg-cpu").and_then(Value::as_object) {
            let mut row = CpuRow::default();
            for (k, v) in cpu {
                if let Some(slot) = sysstat::cpu_slot(&mut row, k) {
                    *slot = figure(v, 1.0, k, &mut errors);
                }
            }
            sample.cpu = Some(row);
        }
        for disk in value
            .get("disk")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(fields) = disk.as_object() else {
                errors.push("a disk that is not an object".to_owned());
                continue;
            };
            let Some(device) = fields.get("disk_device").and_then(Value::as_str) else {
                errors.push("a disk without `disk_device`".to_owned());
                continue;
            };
            let mut row = DiskRow {
                device: device.to_owned(),
                ..DiskRow::default()
            };
            for (k, v) in fields {
                if let Some((field, factor)) = sysstat::disk_field(k)
                    && let Some(x) = figure(v, factor, k, &mut errors)
                {
                    sysstat::set_disk(&mut row, field, x);
                }
            }
            sample.disks.push(row);
        }
        if let Some(first) = errors.first() {
            let more = errors.len() - 1;
            out.notes.push(Note::at(
                entry.line,
                if more > 0 {
                    format!("{first} (and {more} more in this entry)")
                } else {
                    first.clone()
                },
            ));
        }
        if sample.disks.is_empty() && sample.cpu.is_none() {
            out.notes.push(Note::at(
                entry.line,
                "a statistics entry with neither `avg-cpu` nor `disk`, skipped",
            ));
            return;
        }
        self.reports.push(sample, out);
    }
}

/// A JSON figure in a unit of `factor`; `None` (with the reason kept) when it is not a
/// non-negative number.
fn figure(v: &Value, factor: f64, key: &str, errors: &mut Vec<String>) -> Option<f64> {
    match v.as_f64().map(|x| x * factor) {
        Some(x) if x.is_finite() && x >= 0.0 => Some(x),
        Some(_) => {
            errors.push(format!("`{v}` is out of range in {key}"));
            None
        }
        None => {
            errors.push(format!(
                "`{}` is not a number in {key}",
                sysstat::short(&v.to_string())
            ));
            None
        }
    }
}

impl Importer for IostatJson {
    fn line(&mut self, no: usize, line: &str, out: &mut Emit) {
        self.seen_lines = true;
        for c in line.chars().chain(std::iter::once('\n')) {
            if self.broken {
                return;
            }
            if let Some(e) = self.entry.as_mut()
                && !e.too_big
            {
                if e.text.len() < MAX_ENTRY_BYTES {
                    e.text.push(c);
                } else {
                    e.too_big = true;
                    e.text = String::new();
                }
            }
            if self.in_string {
                if self.escape {
                    self.escape = false;
                } else if c == '\\' {
                    self.escape = true;
                } else if c == '"' {
                    self.in_string = false;
                    self.string_done();
                } else if self.entry.is_none() && self.text.len() < MAX_STRING {
                    self.text.push(c);
                }
                continue;
            }
            match c {
                '"' => {
                    self.in_string = true;
                    self.text.clear();
                }
                '{' | '[' => self.open(no, c == '{', out),
                '}' | ']' => self.close(out),
                ':' => {
                    if let Some(top) = self.stack.last_mut() {
                        top.expecting_key = false;
                    }
                }
                ',' => {
                    if let Some(top) = self.stack.last_mut()
                        && top.object
                    {
                        top.expecting_key = true;
                        top.cur_key = None;
                    }
                }
                _ => {}
            }
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        if let Some(e) = self.entry.take() {
            out.notes.push(Note::at(
                e.line,
                "the last statistics entry is cut off: dropped",
            ));
        }
        if self.seen_lines && !self.seen_statistics && !self.broken {
            out.notes.push(Note::file(
                "no `statistics` array: nothing imported (not iostat's JSON?)",
            ));
        }
        self.reports.finish(out);
    }
}

#[cfg(test)]
#[path = "iostat_json_tests.rs"]
mod tests;
