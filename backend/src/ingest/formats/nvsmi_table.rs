//! The default `nvidia-smi` table, one snapshot or many appended (`nvidia-smi -l`, a loop),
//! each with or without its date line: the 418-470 layouts (79 columns, `Persistence-M|`, two
//! or three lines per GPU), the 525+ ones (89-91 columns), Windows (`TCC/WDDM` or
//! `Driver-Model`), a `MIG devices:` block (each instance's ids and memory), and the processes table in its old
//! (`GPU PID Type Process name Usage`) and new (`GPU GI CI PID ...`) forms.
//!
//! A snapshot becomes a sample when its processes box closes; one cut off before that (the
//! file ends, or the next snapshot starts) is dropped with a note. Names are kept as printed
//! (nvidia-smi truncates them with `...`).

use super::nvsmi_values::{self as v, keep, quote};
use crate::ingest::clock;
use crate::ingest::model::{Emit, GpuRow, Importer, MigRow, Note, ProcessRow, Sample};
use shared::MigSlot;

/// Whether `head` looks like nvidia-smi's default table.
pub fn sniff(head: &[&str]) -> Result<(), String> {
    if head
        .iter()
        .any(|l| l.trim_start().starts_with("| NVIDIA-SMI") && l.contains("Driver Version"))
    {
        return Ok(());
    }
    Err(match head.first() {
        Some(first) => format!(
            "no `| NVIDIA-SMI ... Driver Version` line (first line `{}`)",
            quote(first)
        ),
        None => "the file is empty".to_owned(),
    })
}

/// A fresh importer for one file.
pub fn importer() -> TableImporter {
    TableImporter::default()
}

/// Where in a snapshot the last line was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Part {
    /// Between snapshots.
    #[default]
    Outside,
    /// After `| NVIDIA-SMI`, before the GPUs' `|===` line.
    Header,
    Gpus,
    /// The `MIG devices:` block: a row per instance, then its BAR1 line.
    Mig,
    /// After `| Processes:`, before its `|===` line.
    ProcHeader,
    Procs,
}

/// The default-table importer.
#[derive(Debug, Default)]
pub struct TableImporter {
    part: Part,
    /// The snapshot being read.
    open: Option<Sample>,
    driver: Option<String>,
    /// The GPU being read and how many of its lines were seen.
    gpu: Option<(GpuRow, u8)>,
    /// Whether the processes table has the `GI CI` columns (MIG-capable drivers).
    gi_ci: bool,
    /// A date line (and its time) or a box top seen between snapshots.
    date: Option<(usize, u64)>,
    box_top: Option<usize>,
    /// Between snapshots, table lines without a start were already noted.
    stray_noted: bool,
    emitted: usize,
    any_time: bool,
}

/// The cells of a `| a | b | c |` line, without the outer bars.
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim();
    let inner = inner.strip_prefix('|').unwrap_or(inner);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').collect()
}

/// Byte spans of the words of `s`.
fn spans(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(b)) => {
                out.push((b, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(b) = start {
        out.push((b, s.len()));
    }
    out
}

fn word<'a>(s: &'a str, span: Option<&(usize, usize)>) -> &'a str {
    span.and_then(|(a, b)| s.get(*a..*b)).unwrap_or("")
}

/// `  0  NVIDIA A100-SXM4-40GB  Off | 00000000:81:00.0 Off | 0`: index, name, bus id.
fn gpu_first(c: &[&str], why: &mut Vec<String>) -> GpuRow {
    let first = c.first().copied().unwrap_or("");
    let w = spans(first);
    let mut g = GpuRow {
        index: keep(v::whole(word(first, w.first()), "the GPU number"), why),
        ..GpuRow::default()
    };
    // The name runs from the second word to before the last (Persistence-M / Driver-Model).
    if let (Some(a), Some(b)) = (w.get(1), w.len().checked_sub(2).and_then(|i| w.get(i)))
        && a.0 <= b.0
    {
        g.name = first.get(a.0..b.1).and_then(v::text);
    }
    let bus = c.get(1).copied().unwrap_or("");
    g.pci_bus_id = bus.split_whitespace().next().and_then(v::text);
    g
}

/// `N/A 32C P0 52W / 400W | 1MiB / 40960MiB | 0% Default`: temperature, power, memory, util.
fn gpu_second(g: &mut GpuRow, c: &[&str], why: &mut Vec<String>) {
    let first = c.first().copied().unwrap_or("");
    let words: Vec<&str> = first.split_whitespace().collect();
    g.temperature_c = keep(
        v::celsius(words.get(1).copied().unwrap_or(""), "temperature"),
        why,
    );
    if let Some((used, cap)) = first.split_once(" / ") {
        let used = used.split_whitespace().last().unwrap_or("");
        let cap = cap.split_whitespace().next().unwrap_or("");
        g.power_w = keep(v::watts(used, "power"), why);
        g.power_limit_w = keep(v::watts(cap, "power cap"), why);
    }
    if let Some((used, total)) = c.get(1).and_then(|m| m.split_once(" / ")) {
        g.memory_used_bytes = keep(v::mib(used, "memory usage"), why);
        g.memory_total_bytes = keep(v::mib(total, "memory usage"), why);
    }
    let util = c.get(2).and_then(|u| u.split_whitespace().next());
    g.util_gpu_pct = keep(v::percent(util.unwrap_or(""), "GPU-Util"), why);
}

/// `  0   N/A  N/A   5997   C   python   794MiB`, with or without the GI/CI columns.
fn process(cell: &str, gi_ci: bool) -> Result<ProcessRow, String> {
    let w = spans(cell);
    let fixed = if gi_ci { 5 } else { 3 };
    if w.len() < fixed + 1 {
        return Err(format!(
            "expected at least {} words in a process row, found {}",
            fixed + 1,
            w.len()
        ));
    }
    let pid_at = fixed - 2;
    let pid = v::whole(word(cell, w.get(pid_at)), "PID")?.ok_or("no PID in a process row")?;
    let last = w.len() - 1;
    let name = match (w.get(fixed), w.get(last.saturating_sub(1))) {
        (Some(a), Some(b)) if fixed < last => cell.get(a.0..b.1).and_then(v::text),
        _ => None,
    };
    let mig = if gi_ci {
        slot(word(cell, w.get(1)), word(cell, w.get(2)))?
    } else {
        None
    };
    Ok(ProcessRow {
        gpu_index: v::whole(word(cell, w.first()), "the GPU number")?,
        gpu_uuid: None,
        pid,
        name,
        used_bytes: v::mib(word(cell, w.get(last)), "GPU memory")?,
        mig,
    })
}

/// A `GI ID` and `CI ID` pair; `None` where either is `N/A` (no MIG).
fn slot(gi: &str, ci: &str) -> Result<Option<MigSlot>, String> {
    let gi = v::whole(gi, "GI ID")?;
    let ci = v::whole(ci, "CI ID")?;
    Ok(gi
        .zip(ci)
        .map(|(gpu_instance_id, compute_instance_id)| MigSlot {
            gpu_instance_id,
            compute_instance_id,
        }))
}

/// `  0    1   0   0  |   3751MiB / 20096MiB | 42 0 | ...`: a MIG instance's ids and memory;
/// `None` for its second (BAR1) line, whose first cell is empty.
fn mig_row(c: &[&str]) -> Result<Option<MigRow>, String> {
    let first = c.first().copied().unwrap_or("");
    let w = spans(first);
    if w.is_empty() {
        return Ok(None);
    }
    if w.len() != 4 {
        return Err(format!(
            "expected GPU, GI, CI and MIG Dev in a MIG devices row, found {} words",
            w.len()
        ));
    }
    let mut row = MigRow {
        gpu_index: v::whole(word(first, w.first()), "the GPU number")?,
        slot: slot(word(first, w.get(1)), word(first, w.get(2)))?,
        device: v::whole(word(first, w.get(3)), "MIG Dev")?,
        ..MigRow::default()
    };
    if let Some((used, total)) = c.get(1).and_then(|m| m.split_once(" / ")) {
        row.memory_used_bytes = v::mib(used, "MIG memory usage")?;
        row.memory_total_bytes = v::mib(total, "MIG memory usage")?;
    }
    Ok(Some(row))
}

impl TableImporter {
    /// Ends the snapshot in progress: emitted when complete, else dropped with a note.
    fn close(&mut self, complete: bool, why: &str, out: &mut Emit) {
        self.gpu = None;
        if let Some(s) = self.open.take() {
            if complete {
                self.any_time |= s.t_ms.is_some();
                self.emitted = self.emitted.saturating_add(1);
                out.samples.push(s);
            } else {
                out.notes
                    .push(Note::at(s.line, format!("a table cut off {why}, dropped")));
            }
        }
        self.part = Part::Outside;
    }

    fn end_gpu(&mut self) {
        if let (Some((g, _)), Some(s)) = (self.gpu.take(), self.open.as_mut()) {
            s.gpus.push(g);
        }
    }

    fn start(&mut self, no: usize, line: &str, out: &mut Emit) {
        self.close(false, "before the next one", out);
        let (line_no, t) = match self.date.take() {
            Some((d, t)) => (d, Some(t)),
            None => (self.box_top.unwrap_or(no), None),
        };
        self.box_top = None;
        self.driver = line
            .split_once("Driver Version:")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(v::text);
        self.open = Some(Sample {
            t_ms: t,
            line: line_no,
            ..Sample::default()
        });
        self.part = Part::Header;
        self.gi_ci = false;
    }

    fn gpu_line(&mut self, no: usize, line: &str, out: &mut Emit) {
        let c = cells(line);
        let mut why = Vec::new();
        // A GPU's first line starts with its number; the second with the fan (`0%`, `N/A`).
        let starts_gpu = c
            .first()
            .and_then(|f| f.split_whitespace().next())
            .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()));
        if starts_gpu {
            self.end_gpu();
            let mut g = gpu_first(&c, &mut why);
            g.driver_version.clone_from(&self.driver);
            self.gpu = Some((g, 1));
        } else if let Some((g, seen)) = self.gpu.as_mut() {
            if *seen == 1 {
                gpu_second(g, &c, &mut why);
            }
            *seen = seen.saturating_add(1);
        }
        out.notes.extend(why.into_iter().map(|w| Note::at(no, w)));
    }
}

impl Importer for TableImporter {
    fn line(&mut self, no: usize, line: &str, out: &mut Emit) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        if t.starts_with('|') && t.contains("NVIDIA-SMI") {
            return self.start(no, t, out);
        }
        if !t.starts_with('|') && !t.starts_with('+') {
            if let Some(time) = clock::parse(t) {
                self.close(false, "before the next one", out);
                self.date = Some((no, time));
                self.box_top = None;
            } else if self.open.is_some() {
                out.notes
                    .push(Note::at(no, format!("`{}` is not a table line", quote(t))));
            }
            return;
        }
        if t.starts_with('+') {
            match self.part {
                Part::Outside => {
                    self.box_top.get_or_insert(no);
                }
                Part::Gpus => self.end_gpu(),
                Part::Procs => self.close(true, "", out),
                _ => {}
            }
            return;
        }
        if self.open.is_none() {
            if !self.stray_noted {
                out.notes.push(Note::at(
                    no,
                    "table lines before any `| NVIDIA-SMI` header, skipped",
                ));
                self.stray_noted = true;
            }
            return;
        }
        if t.contains("MIG devices:") {
            self.end_gpu();
            self.part = Part::Mig;
            return;
        }
        if t.contains("Processes:") {
            self.end_gpu();
            self.part = Part::ProcHeader;
            return;
        }
        let rule = t.starts_with("|=");
        match self.part {
            Part::Header if rule => self.part = Part::Gpus,
            Part::Gpus => self.gpu_line(no, t, out),
            Part::ProcHeader if rule => self.part = Part::Procs,
            Part::ProcHeader => self.gi_ci |= t.split_whitespace().any(|w| w == "GI"),
            Part::Mig
                if rule
                    || t.contains("GI")
                    || t.contains("ID")
                    || t.contains("No MIG devices found") => {}
            Part::Mig => match mig_row(&cells(t)) {
                Ok(Some(row)) => {
                    if let Some(s) = self.open.as_mut() {
                        s.mig.push(row);
                    }
                }
                Ok(None) => {}
                Err(why) => out.notes.push(Note::at(no, why)),
            },
            Part::Procs if t.contains("No running processes found") => {}
            Part::Procs => {
                let cell = cells(t).first().copied().unwrap_or("");
                match process(cell, self.gi_ci) {
                    Ok(p) => {
                        if let Some(s) = self.open.as_mut() {
                            s.processes.push(p);
                        }
                    }
                    Err(why) => out.notes.push(Note::at(no, why)),
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        self.close(false, "at the end of the file", out);
        if self.emitted > 0 && !self.any_time {
            out.notes.push(Note::file(
                "no timestamps (no date lines): samples are aligned by order",
            ));
        }
    }
}

#[cfg(test)]
#[path = "nvsmi_table_tests.rs"]
mod tests;
