//! `nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid[,gpu_bus_id]
//! [,timestamp] --format=csv[,noheader][,nounits]` logs: a `ProcessRow` per line, the GPU by
//! uuid (its bus id is kept only as a fallback key). Columns by the header's names; without a
//! header, by the `--fields` list, else by the values' shapes (`GPU-...` is the uuid, a bus id,
//! a timestamp, a `MiB` value; of two bare numbers the first is the pid, as nvidia-smi's
//! documented order has it).
//!
//! Rows of one call are one sample: a new sample starts when a header line repeats, a
//! (pid, GPU) pair repeats, or the time moves by more than half a second.

use super::nvsmi_csv::{cells, header_name};
use super::nvsmi_values::{self as v, keep, quote};
use crate::ingest::clock;
use crate::ingest::model::{Emit, Importer, Note, ProcessRow, Sample};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Pid,
    Name,
    Memory,
    Uuid,
    Bus,
    Time,
    Other,
}

fn field(name: &str) -> Field {
    match name {
        "pid" => Field::Pid,
        "process_name" | "name" => Field::Name,
        "used_memory" | "used_gpu_memory" => Field::Memory,
        "gpu_uuid" | "uuid" => Field::Uuid,
        "gpu_bus_id" | "pci.bus_id" => Field::Bus,
        "timestamp" => Field::Time,
        _ => Field::Other,
    }
}

/// A header: every cell a field-like name, `pid` among them.
fn header(c: &[&str]) -> Option<Vec<Field>> {
    let names: Vec<String> = c.iter().map(|x| header_name(x)).collect();
    let ok = names.iter().any(|n| n == "pid")
        && names.iter().all(|n| {
            !n.is_empty()
                && n.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '.')
        });
    ok.then(|| names.iter().map(|n| field(n)).collect())
}

fn is_uuid(c: &str) -> bool {
    c.starts_with("GPU-") || c.starts_with("MIG-")
}

/// `00000000:3B:00.0`.
fn is_bus(c: &str) -> bool {
    c.len() >= 12
        && c.matches(':').count() == 2
        && c.contains('.')
        && c.chars()
            .all(|ch| ch.is_ascii_hexdigit() || ch == ':' || ch == '.')
}

fn is_whole(c: &str) -> bool {
    !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit())
}

/// The fields of a header-less row, by the shapes of its values.
fn infer(c: &[&str]) -> Vec<Field> {
    let mut seen_pid = false;
    c.iter()
        .map(|x| {
            if is_uuid(x) {
                Field::Uuid
            } else if is_bus(x) {
                Field::Bus
            } else if x.ends_with("MiB") || (x.starts_with('[') && x.ends_with(']')) {
                Field::Memory
            } else if is_whole(x) && !seen_pid {
                seen_pid = true;
                Field::Pid
            } else if is_whole(x) {
                Field::Memory
            } else if x.contains(':') && clock::parse(x).is_some() {
                Field::Time
            } else {
                Field::Name
            }
        })
        .collect()
}

/// Whether `head` looks like a `--query-compute-apps` CSV log.
pub fn sniff(head: &[&str]) -> Result<(), String> {
    let first = head.first().ok_or("the file is empty")?;
    let first_cells = cells(first);
    if let Some(f) = header(&first_cells) {
        return if f.contains(&Field::Memory) || f.contains(&Field::Name) {
            Ok(())
        } else {
            Err(format!(
                "`{}` has `pid` but neither process_name nor used_memory",
                quote(first)
            ))
        };
    }
    for line in head {
        let c = cells(line);
        let f = infer(&c);
        let gpu_query = c
            .iter()
            .any(|x| x.ends_with(" %") || x.ends_with(" W") || x.ends_with(" MHz"));
        if c.len() < 2
            || c.len() != first_cells.len()
            || gpu_query
            || !f.contains(&Field::Pid)
            || !(f.contains(&Field::Uuid) || f.contains(&Field::Bus))
        {
            return Err(format!(
                "`{}` is neither a --query-compute-apps header nor a pid and GPU row",
                quote(line)
            ));
        }
    }
    Ok(())
}

/// A fresh importer for one file.
pub fn importer() -> AppsImporter {
    importer_with_fields(None)
}

/// A fresh importer; `fields` is the `--query-compute-apps` list of a `noheader` log (a
/// header in the file still wins).
pub fn importer_with_fields(fields: Option<Vec<String>>) -> AppsImporter {
    AppsImporter {
        fields: fields
            .filter(|f| !f.is_empty())
            .map(|f| f.iter().map(|n| field(&header_name(n))).collect()),
        ..AppsImporter::default()
    }
}

/// A process's identity within one sample: its pid and its GPU (uuid, else bus id).
type Key = (u32, Option<String>);

/// The `--query-compute-apps` importer.
#[derive(Debug, Default)]
pub struct AppsImporter {
    fields: Option<Vec<Field>>,
    /// The last line, held back: only at the end is a short line known to be cut off.
    pending: crate::ingest::lines::HeldLine,
    /// The sample being gathered and its (pid, GPU) pairs.
    open: Option<(Sample, Vec<Key>)>,
    emitted: usize,
    any_time: bool,
}

impl AppsImporter {
    fn flush(&mut self, out: &mut Emit) {
        if let Some((s, _)) = self.open.take() {
            self.any_time |= s.t_ms.is_some();
            self.emitted = self.emitted.saturating_add(1);
            out.samples.push(s);
        }
    }

    fn process(&mut self, no: usize, line: &str, last: bool, out: &mut Emit) {
        let c = cells(line);
        if let Some(f) = header(&c) {
            self.fields = Some(f);
            // One header per nvidia-smi call: what follows is the next sample.
            self.flush(out);
            return;
        }
        let inferred;
        let fields = match &self.fields {
            Some(f) => f,
            None => {
                inferred = infer(&c);
                &inferred
            }
        };
        let (n, m) = (fields.len(), c.len());
        if m != n || (last && c.last().is_some_and(|x| x.is_empty())) {
            let why = if last && m <= n {
                format!("the last line is cut off ({m} of {n} fields), dropped")
            } else {
                format!("expected {n} fields, found {m}")
            };
            out.notes.push(Note::at(no, why));
            return;
        }
        let mut why = Vec::new();
        let mut row = ProcessRow::default();
        let (mut pid, mut bus, mut t) = (None, None, None);
        for (f, x) in fields.iter().zip(&c) {
            match f {
                Field::Pid => pid = keep(v::whole(x, "pid"), &mut why),
                Field::Name => row.name = v::text(x),
                Field::Memory => row.used_bytes = keep(v::mib(x, "used_memory"), &mut why),
                Field::Uuid => row.gpu_uuid = v::text(x),
                Field::Bus => bus = v::text(x),
                Field::Time if !v::absent(x) => {
                    t = clock::parse(x);
                    if t.is_none() {
                        why.push(format!("`{}` is not a timestamp", quote(x)));
                    }
                }
                Field::Time | Field::Other => {}
            }
        }
        let Some(pid) = pid else {
            why.push("no pid".to_owned());
            out.notes.extend(why.into_iter().map(|w| Note::at(no, w)));
            return;
        };
        out.notes.extend(why.into_iter().map(|w| Note::at(no, w)));
        row.pid = pid;
        let key = (pid, row.gpu_uuid.clone().or(bus));
        let starts_new = match &self.open {
            None => true,
            Some((s, seen)) => {
                seen.contains(&key)
                    || matches!((s.t_ms, t), (Some(a), Some(b)) if a.abs_diff(b) > 500)
            }
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
            seen.push(key);
            s.processes.push(row);
        }
    }
}

impl Importer for AppsImporter {
    fn line(&mut self, no: usize, line: &str, out: &mut Emit) {
        if let Some((pno, pline)) = self.pending.swap(no, line) {
            self.process(pno, &pline, false, out);
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        if let Some((pno, pline)) = self.pending.take() {
            self.process(pno, &pline, true, out);
        }
        self.flush(out);
        if self.emitted > 0 && !self.any_time {
            out.notes.push(Note::untimed());
        }
    }
}

#[cfg(test)]
#[path = "nvsmi_apps_tests.rs"]
mod tests;
