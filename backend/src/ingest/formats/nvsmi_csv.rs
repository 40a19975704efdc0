//! `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] [-l N | -lms N]` logs: any
//! subset and order of fields (mapped by the header's names, units in the header or in the
//! values), a header repeated before every row (a shell loop calling nvidia-smi), user-added
//! prefix columns (an epoch or a date before nvidia-smi's fields) used as the time when
//! nvidia-smi's own `timestamp` is absent, and `noheader` logs given their field list.
//!
//! One row per GPU per sample; rows are grouped into samples until a GPU (by `index`, else
//! `uuid`, else `pci.bus_id`) repeats or the time moves on by more than about half the
//! interval. A log with none of those fields is read as one GPU, one row per sample.

use super::nvsmi_values::{self as v, keep, quote};
use crate::ingest::clock;
use crate::ingest::model::{Emit, GpuRow, Importer, Note, Sample};

/// What vramio reads of a `--query-gpu` field; other fields are ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Timestamp,
    Index,
    Uuid,
    Name,
    BusId,
    Driver,
    MemTotal,
    MemUsed,
    MemFree,
    MemReserved,
    UtilGpu,
    UtilMem,
    Temp,
    Power,
    PowerInstant,
    PowerAverage,
    PowerLimit,
    EnforcedLimit,
}

/// The field a `--query-gpu` name (or its alias in `nvidia-smi --help-query-gpu`) reads.
fn field(name: &str) -> Option<Field> {
    Some(match name {
        "timestamp" => Field::Timestamp,
        "index" => Field::Index,
        "uuid" | "gpu_uuid" => Field::Uuid,
        "name" | "gpu_name" => Field::Name,
        "pci.bus_id" | "gpu_bus_id" => Field::BusId,
        "driver_version" => Field::Driver,
        "memory.total" => Field::MemTotal,
        "memory.used" => Field::MemUsed,
        "memory.free" => Field::MemFree,
        "memory.reserved" => Field::MemReserved,
        "utilization.gpu" => Field::UtilGpu,
        "utilization.memory" => Field::UtilMem,
        "temperature.gpu" => Field::Temp,
        "power.draw" => Field::Power,
        "power.draw.instant" => Field::PowerInstant,
        "power.draw.average" => Field::PowerAverage,
        "power.limit" => Field::PowerLimit,
        "enforced.power.limit" => Field::EnforcedLimit,
        _ => return None,
    })
}

/// Fields only `--query-compute-apps` has: a header with one of them is not a GPU log.
pub(crate) const APPS_FIELDS: [&str; 4] = ["pid", "process_name", "used_memory", "used_gpu_memory"];

#[derive(Clone, Debug, PartialEq)]
struct Column {
    name: String,
    field: Option<Field>,
}

/// The field name of a header cell: `memory.used [MiB]` is `memory.used`.
pub(crate) fn header_name(cell: &str) -> String {
    let cell = cell.trim();
    let name = match cell.split_once('[') {
        Some((n, _)) => n.trim_end(),
        None => cell,
    };
    name.to_ascii_lowercase()
}

fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// The cells of a CSV line (nvidia-smi never quotes; GPU names have no commas).
pub(crate) fn cells(line: &str) -> Vec<&str> {
    line.split(',').map(str::trim).collect()
}

/// A header line: every cell a field-like name, at least one that vramio reads.
fn header(cells: &[&str]) -> Option<Vec<Column>> {
    let names: Vec<String> = cells.iter().map(|c| header_name(c)).collect();
    if !names.iter().all(|n| is_identifier(n)) || !names.iter().any(|n| field(n).is_some()) {
        return None;
    }
    Some(
        names
            .into_iter()
            .map(|name| Column {
                field: field(&name),
                name,
            })
            .collect(),
    )
}

/// Whether `head` (the first non-empty lines) looks like a `--query-gpu` CSV log.
pub fn sniff(head: &[&str]) -> Result<(), String> {
    let first = head.first().ok_or("the file is empty")?;
    let first_cells = cells(first);
    if let Some(cols) = header(&first_cells) {
        return match cols.iter().find(|c| APPS_FIELDS.contains(&c.name.as_str())) {
            Some(c) => Err(format!(
                "`{}` is a --query-compute-apps header (it has `{}`)",
                quote(first),
                c.name
            )),
            None => Ok(()),
        };
    }
    // `noheader`: the same number of cells on every line, and a value only nvidia-smi's GPU
    // query prints (a `%`, `W` or `MHz` unit). A `nounits` log without a header cannot be told
    // from `--query-compute-apps` output: it needs `--format`.
    for line in head {
        let c = cells(line);
        if c.len() < 2 || c.len() != first_cells.len() {
            return Err(format!(
                "`{}` is neither a --query-gpu header nor a row like the first",
                quote(line)
            ));
        }
        let gpu_like = c
            .iter()
            .any(|x| x.ends_with(" %") || x.ends_with(" W") || x.ends_with(" MHz"));
        if !gpu_like {
            return Err(format!(
                "`{}` has no header and no value only nvidia-smi --query-gpu prints",
                quote(line)
            ));
        }
    }
    Ok(())
}

/// A fresh importer for a log with a header.
pub fn importer() -> CsvImporter {
    CsvImporter::new(None)
}

/// A fresh importer; `fields` is the `--query-gpu` list of a `noheader` log (a header in the
/// file still wins).
pub fn importer_with_fields(fields: Option<Vec<String>>) -> CsvImporter {
    CsvImporter::new(fields)
}

/// GPU identity used to tell one sample's rows apart.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    Index(u32),
    Uuid(String),
    Bus(String),
}

/// The sample being gathered.
#[derive(Debug)]
struct Open {
    sample: Sample,
    keys: Vec<Key>,
    start: Option<u64>,
}

/// The `--query-gpu` CSV importer.
#[derive(Debug, Default)]
pub struct CsvImporter {
    columns: Option<Vec<Column>>,
    /// The last line, held one line back: only at the end is a short line known to be cut off.
    pending: crate::ingest::lines::HeldLine,
    open: Option<Open>,
    /// GPUs in the last sample emitted, to spot a cut-off last sample.
    last_gpus: Option<usize>,
    /// Start of the last sample and the gap to the one before it.
    last_start: Option<u64>,
    interval: Option<u64>,
    emitted: usize,
    any_time: bool,
    /// `noheader` without a field list: the first data line and how many were skipped.
    headless: Option<(usize, usize)>,
}

impl CsvImporter {
    fn new(fields: Option<Vec<String>>) -> CsvImporter {
        let columns = fields.filter(|f| !f.is_empty()).map(|f| {
            f.iter()
                .map(|n| {
                    let name = header_name(n);
                    Column {
                        field: field(&name),
                        name,
                    }
                })
                .collect()
        });
        CsvImporter {
            columns,
            ..CsvImporter::default()
        }
    }

    fn process(&mut self, no: usize, line: &str, last: bool, out: &mut Emit) {
        let cells = cells(line);
        if let Some(cols) = header(&cells) {
            self.columns = Some(cols);
            return;
        }
        let Some(cols) = self.columns.as_ref() else {
            let h = self.headless.get_or_insert((no, 0));
            h.1 = h.1.saturating_add(1);
            return;
        };
        let (n, m) = (cols.len(), cells.len());
        if m < n || (last && cells.last().is_some_and(|c| c.is_empty())) {
            let why = if last {
                format!(
                    "the last line is cut off ({m} of {n} fields, or an empty last one), dropped"
                )
            } else {
                format!("expected {n} fields, found {m}")
            };
            out.notes.push(Note::at(no, why));
            return;
        }
        // Extra cells in front: a prefix a shell loop added (`date +%s`, `date`), used as
        // the time when nvidia-smi's own timestamp is absent.
        let extra = m - n;
        let (prefix, cells) = cells.split_at(extra);
        let prefix_time = prefix.iter().find_map(|c| clock::parse(c));
        if extra > 0 && prefix_time.is_none() {
            out.notes
                .push(Note::at(no, format!("expected {n} fields, found {m}")));
            return;
        }
        let mut why = Vec::new();
        let (t, gpu) = read_row(cols, cells, &mut why);
        for w in why {
            out.notes.push(Note::at(no, w));
        }
        self.push(no, t.or(prefix_time), gpu, out);
    }

    fn push(&mut self, no: usize, t: Option<u64>, gpu: GpuRow, out: &mut Emit) {
        let key = gpu
            .index
            .map(Key::Index)
            .or_else(|| gpu.uuid.clone().map(Key::Uuid))
            .or_else(|| gpu.pci_bus_id.clone().map(Key::Bus));
        let threshold = self.interval.map_or(500, |i| (i / 2).max(250));
        let starts_new = match (&self.open, &key) {
            (None, _) | (Some(_), None) => true,
            (Some(o), Some(k)) => {
                o.keys.contains(k)
                    || matches!((o.start, t), (Some(a), Some(b)) if a.abs_diff(b) > threshold)
            }
        };
        if starts_new {
            self.flush(out);
            if let (Some(prev), Some(now)) = (self.last_start, t)
                && now > prev
            {
                self.interval = Some(now - prev);
            }
            if t.is_some() {
                self.last_start = t;
            }
            self.open = Some(Open {
                sample: Sample {
                    t_ms: t,
                    line: no,
                    ..Sample::default()
                },
                keys: Vec::new(),
                start: t,
            });
        }
        if let Some(o) = self.open.as_mut() {
            if o.sample.t_ms.is_none() {
                o.sample.t_ms = t;
                o.start = t;
            }
            o.keys.extend(key);
            o.sample.gpus.push(gpu);
        }
    }

    fn flush(&mut self, out: &mut Emit) {
        if let Some(o) = self.open.take() {
            self.any_time |= o.sample.t_ms.is_some();
            self.last_gpus = Some(o.sample.gpus.len());
            self.emitted = self.emitted.saturating_add(1);
            out.samples.push(o.sample);
        }
    }
}

/// The time and GPU row of one data line; unusable values are named in `why`.
fn read_row(cols: &[Column], cells: &[&str], why: &mut Vec<String>) -> (Option<u64>, GpuRow) {
    let mut g = GpuRow::default();
    let mut t = None;
    let mut prefix_t = None;
    let mut seen_known = false;
    let (mut draw, mut instant, mut average, mut limit, mut enforced) =
        (None, None, None, None, None);
    for (col, cell) in cols.iter().zip(cells) {
        let name = col.name.as_str();
        let Some(f) = col.field else {
            // A hand-named column before nvidia-smi's fields (`epoch`, `date`) may be the time.
            if !seen_known && prefix_t.is_none() {
                prefix_t = clock::parse(cell);
            }
            continue;
        };
        seen_known = true;
        match f {
            Field::Timestamp => {
                if !v::absent(cell) {
                    t = clock::parse(cell);
                    if t.is_none() {
                        why.push(format!("`{}` is not a timestamp", quote(cell)));
                    }
                }
            }
            Field::Index => g.index = keep(v::whole(cell, name), why),
            Field::Uuid => g.uuid = v::text(cell),
            Field::Name => g.name = v::text(cell),
            Field::BusId => g.pci_bus_id = v::text(cell),
            Field::Driver => g.driver_version = v::text(cell),
            Field::MemTotal => g.memory_total_bytes = keep(v::mib(cell, name), why),
            Field::MemUsed => g.memory_used_bytes = keep(v::mib(cell, name), why),
            Field::MemFree => g.memory_free_bytes = keep(v::mib(cell, name), why),
            Field::MemReserved => g.memory_reserved_bytes = keep(v::mib(cell, name), why),
            Field::UtilGpu => g.util_gpu_pct = keep(v::percent(cell, name), why),
            Field::UtilMem => g.util_mem_pct = keep(v::percent(cell, name), why),
            Field::Temp => g.temperature_c = keep(v::celsius(cell, name), why),
            Field::Power => draw = keep(v::watts(cell, name), why),
            Field::PowerInstant => instant = keep(v::watts(cell, name), why),
            Field::PowerAverage => average = keep(v::watts(cell, name), why),
            Field::PowerLimit => limit = keep(v::watts(cell, name), why),
            Field::EnforcedLimit => enforced = keep(v::watts(cell, name), why),
        }
    }
    // `power.draw` as asked for; else the instant reading, the closest to what NVML's live
    // power usage gives; else the 1 s average.
    g.power_w = draw.or(instant).or(average);
    g.power_limit_w = enforced.or(limit);
    (t.or(prefix_t), g)
}

impl Importer for CsvImporter {
    fn line(&mut self, no: usize, line: &str, out: &mut Emit) {
        if let Some((pno, pline)) = self.pending.swap(no, line) {
            self.process(pno, &pline, false, out);
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        if let Some((pno, pline)) = self.pending.take() {
            self.process(pno, &pline, true, out);
        }
        if let Some(o) = &self.open
            && let Some(prev) = self.last_gpus
            && o.keys.len() == o.sample.gpus.len()
            && o.sample.gpus.len() < prev
        {
            out.notes.push(Note::at(
                o.sample.line,
                format!(
                    "the last sample has {} of {prev} GPUs (cut off at the end of the file), dropped",
                    o.sample.gpus.len()
                ),
            ));
            self.open = None;
        }
        self.flush(out);
        if let Some((first, skipped)) = self.headless.take() {
            out.notes.push(Note::at(
                first,
                format!(
                    "no header: pass the --query-gpu field list with --fields ({skipped} lines not read)"
                ),
            ));
        }
        if self.emitted > 0 && !self.any_time {
            out.notes.push(Note::untimed());
        }
    }
}

#[cfg(test)]
#[path = "nvsmi_csv_tests.rs"]
pub(crate) mod tests;
