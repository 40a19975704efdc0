//! `iostat` text reports, sysstat 10 to 12: `-x` in the old `Device:` layout (with or without
//! `r_await`/`w_await`) and the new one (with or without the d- and f-groups), plain `iostat`
//! (the tps layout: read and write rates only), kB (`-k`, the `-x` default), MB (`-m`) or
//! sectors (`rsec/s`, `Blk_read/s`), with or without `-t` timestamps, the `avg-cpu` block,
//! and `-h`'s device name alone on a line. Columns are found by header name.
//!
//! The first report averages since boot: it is skipped (noted) unless it is the only one;
//! [`importer_with`]`(false)` keeps it, for a log taken with `iostat -y`.

use super::sysstat::{self, DiskField, Reports, Stamps};
use crate::ingest::model::{CpuRow, DiskRow, Emit, Importer, Note, Sample};

/// Rows kept in one report; a longer block is noted and cut (memory stays bounded by a sample).
const MAX_DEVICES: usize = 4096;

fn is_banner(t: &str) -> bool {
    t.starts_with("Linux ") && t.contains('(') && t.contains(')')
}

/// `Device:` / `Device` first (or last, sysstat 12's `-h`) among known column names.
fn is_device_header(t: &str) -> bool {
    let words: Vec<&str> = t.split_whitespace().collect();
    let named = |w: &&str| *w == "Device" || *w == "Device:";
    (words.first().is_some_and(named) || words.last().is_some_and(named))
        && words
            .iter()
            .any(|w| *w == "tps" || sysstat::disk_field(w).is_some())
}

fn is_stamp(t: &str) -> bool {
    Stamps::default().read(0, t, &mut Emit::default()).is_some()
}

/// Whether `head` (the first non-empty lines) looks like iostat's text output.
pub fn sniff(head: &[&str]) -> Result<(), String> {
    let Some(first) = head.first().map(|l| l.trim()) else {
        return Err("the file is empty".to_owned());
    };
    if !(is_banner(first)
        || is_stamp(first)
        || first.starts_with("avg-cpu:")
        || is_device_header(first))
    {
        return Err(format!(
            "the first line `{}` is not iostat's `Linux ... (host)` banner, a `-t` timestamp, \
             `avg-cpu:` or a `Device` header",
            sysstat::short(first)
        ));
    }
    let header = |l: &&str| {
        let t = l.trim();
        t.starts_with("avg-cpu:") || is_device_header(t)
    };
    if head.iter().any(header) {
        Ok(())
    } else {
        Err(format!(
            "no `avg-cpu:` or `Device` header in the first {} lines",
            head.len()
        ))
    }
}

/// A fresh importer that skips the since-boot report.
pub fn importer() -> Iostat {
    importer_with(true)
}

/// `skip_first = false` keeps the first report (for a log taken with `iostat -y`).
pub fn importer_with(skip_first: bool) -> Iostat {
    Iostat {
        reports: Reports::new(skip_first),
        stamps: Stamps::default(),
        cur: None,
        phase: Phase::Idle,
        pending_name: None,
        last_bad: None,
        seen_devices: false,
        capped: false,
    }
}

/// A device block's header: names, the fields they fill, where the device name is.
#[derive(Debug)]
struct Columns {
    names: Vec<String>,
    fields: Vec<Option<(DiskField, f64)>>,
    device: usize,
}

impl Columns {
    fn new(t: &str) -> Columns {
        let names: Vec<String> = t
            .split_whitespace()
            .map(|w| w.trim_end_matches(':').to_owned())
            .collect();
        let fields = names.iter().map(|n| sysstat::disk_field(n)).collect();
        let device = names.iter().position(|n| n == "Device").unwrap_or(0);
        Columns {
            names,
            fields,
            device,
        }
    }
}

#[derive(Debug)]
enum Phase {
    Idle,
    /// After `avg-cpu:`, its column names.
    Cpu(Vec<String>),
    Devices(Columns),
}

/// The importer; see the module docs.
#[derive(Debug)]
pub struct Iostat {
    reports: Reports,
    stamps: Stamps,
    cur: Option<Sample>,
    phase: Phase,
    /// `-h`: a device name alone on its line, its figures on the next.
    pending_name: Option<String>,
    /// The last non-empty line was a row that did not parse (a cut-off line at the end).
    last_bad: Option<usize>,
    seen_devices: bool,
    capped: bool,
}

impl Iostat {
    fn start(&mut self, no: usize, t_ms: Option<u64>) -> &mut Sample {
        self.capped = false;
        self.cur.insert(Sample {
            t_ms,
            line: no,
            ..Sample::default()
        })
    }

    /// The report in progress is over (a new one begins, or a blank line ended its devices).
    fn close(&mut self, out: &mut Emit) {
        self.phase = Phase::Idle;
        self.pending_name = None;
        if let Some(s) = self.cur.take() {
            if s.disks.is_empty() && s.cpu.is_none() {
                out.notes.push(Note::at(
                    s.line,
                    "a report with no figures (a timestamp alone), skipped",
                ));
            } else {
                self.reports.push(s, out);
            }
        }
    }

    fn cpu_values(&mut self, no: usize, t: &str, names: &[String], out: &mut Emit) {
        let values: Vec<&str> = t.split_whitespace().collect();
        if values.len() != names.len() {
            self.last_bad = Some(no);
            out.notes.push(Note::at(
                no,
                format!(
                    "avg-cpu: expected {} fields, found {}",
                    names.len(),
                    values.len()
                ),
            ));
            return;
        }
        let mut cpu = CpuRow::default();
        let mut errors = Vec::new();
        for (name, value) in names.iter().zip(&values) {
            if let Some(slot) = sysstat::cpu_slot(&mut cpu, name) {
                match sysstat::figure(value, 1.0) {
                    Ok(v) => *slot = Some(v),
                    Err(e) => errors.push(format!("{e} in {name}")),
                }
            }
        }
        note_errors(no, errors, out);
        let sample = match self.cur.as_mut() {
            Some(s) => s,
            None => self.start(no, None),
        };
        sample.cpu = Some(cpu);
    }

    fn device_row(&mut self, no: usize, t: &str, out: &mut Emit) {
        let Phase::Devices(cols) = &self.phase else {
            return;
        };
        let mut fields: Vec<&str> = t.split_whitespace().collect();
        let want = cols.names.len();
        let pending = self.pending_name.take();
        if fields.len() == 1 && want > 1 && pending.is_none() {
            self.pending_name = fields.first().map(|f| (*f).to_owned());
            self.last_bad = Some(no);
            return;
        }
        if let Some(name) = pending.as_deref()
            && fields.len() + 1 == want
        {
            fields.insert(cols.device.min(fields.len()), name);
        }
        if fields.len() != want {
            self.last_bad = Some(no);
            out.notes.push(Note::at(
                no,
                format!("expected {want} fields, found {}", fields.len()),
            ));
            return;
        }
        let mut row = DiskRow {
            device: fields.get(cols.device).copied().unwrap_or("").to_owned(),
            ..DiskRow::default()
        };
        let mut errors = Vec::new();
        for ((value, field), name) in fields.iter().zip(&cols.fields).zip(&cols.names) {
            let Some((field, factor)) = field else {
                continue;
            };
            match sysstat::figure(value, *factor) {
                Ok(v) => sysstat::set_disk(&mut row, *field, v),
                Err(e) => errors.push(format!("{e} in {name}")),
            }
        }
        note_errors(no, errors, out);
        let capped = self.capped;
        let sample = match self.cur.as_mut() {
            Some(s) => s,
            None => self.start(no, None),
        };
        if sample.disks.len() < MAX_DEVICES {
            sample.disks.push(row);
        } else if !capped {
            self.capped = true;
            out.notes.push(Note::at(
                no,
                format!("more than {MAX_DEVICES} devices in one report: the rest are skipped"),
            ));
        }
    }
}

/// One note per line: the first bad value, and how many more.
fn note_errors(no: usize, errors: Vec<String>, out: &mut Emit) {
    let more = errors.len().saturating_sub(1);
    if let Some(first) = errors.into_iter().next() {
        let text = if more > 0 {
            format!("{first} (and {more} more bad values on this line)")
        } else {
            first
        };
        out.notes.push(Note::at(no, text));
    }
}

impl Importer for Iostat {
    fn line(&mut self, no: usize, line: &str, out: &mut Emit) {
        let t = line.trim();
        if t.is_empty() {
            if matches!(self.phase, Phase::Devices(_))
                && self.cur.as_ref().is_some_and(|s| !s.disks.is_empty())
            {
                self.close(out);
            }
            return;
        }
        self.last_bad = None;
        if is_banner(t) {
            self.close(out);
            self.stamps.date_ms = sysstat::banner_date(t).or(self.stamps.date_ms);
            return;
        }
        if let Some(t_ms) = self.stamps.read(no, t, out) {
            self.close(out);
            self.start(no, t_ms);
            return;
        }
        if let Some(rest) = t.strip_prefix("avg-cpu:") {
            if self
                .cur
                .as_ref()
                .is_some_and(|s| s.cpu.is_some() || !s.disks.is_empty())
            {
                self.close(out);
            }
            if self.cur.is_none() {
                self.start(no, None);
            }
            self.phase = Phase::Cpu(rest.split_whitespace().map(str::to_owned).collect());
            return;
        }
        if is_device_header(t) {
            if self.cur.as_ref().is_some_and(|s| !s.disks.is_empty()) {
                self.close(out);
            }
            if self.cur.is_none() {
                self.start(no, None);
            }
            self.pending_name = None;
            self.seen_devices = true;
            self.phase = Phase::Devices(Columns::new(t));
            return;
        }
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Cpu(names) => self.cpu_values(no, t, &names, out),
            Phase::Devices(cols) => {
                self.phase = Phase::Devices(cols);
                self.device_row(no, t, out);
            }
            Phase::Idle => out.notes.push(Note::at(
                no,
                format!("`{}` is not part of an iostat report", sysstat::short(t)),
            )),
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        if let Some(s) = self.cur.take() {
            let cut = self
                .last_bad
                .or(matches!(self.phase, Phase::Cpu(_)).then_some(s.line))
                .or(
                    (s.disks.is_empty() && (s.cpu.is_none() || self.seen_devices))
                        .then_some(s.line),
                );
            match cut {
                Some(at) => out.notes.push(Note::at(
                    at,
                    format!("the last report (line {}) is cut off: dropped", s.line),
                )),
                None => self.reports.push(s, out),
            }
        }
        self.phase = Phase::Idle;
        self.reports.finish(out);
    }
}

#[cfg(test)]
#[path = "iostat_tests.rs"]
pub(crate) mod tests;
