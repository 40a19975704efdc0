//! `df` snapshots: plain (`1K-blocks`), `-k`, `-m`, `-B1` and `-P` (`N-blocks`, `Capacity`),
//! `-h`/`-H` (`Size`, rounded human sizes), `-T` (a `Type` column), `-i` (inodes), a long
//! filesystem name wrapped onto its own line (old `df` without `-P`), mount points with spaces,
//! and several snapshots appended, each maybe after a `date` line (its timestamp). One
//! [`MountRow`] per filesystem; columns by header name.

use super::df_layout::{Col, Header, header, stamp};
use super::sysstat::short;
use crate::ingest::model::{Emit, Importer, MountRow, Note, Sample};

/// Filesystems kept in one snapshot; more are noted and skipped (memory stays bounded).
const MAX_MOUNTS: usize = 10_000;

/// What a `-h` suffix (`K`, `M`, `G`, ...) multiplies by: `df -h` uses powers of 1024, `df -H`
/// powers of 1000. Their headers are the same, so the caller says which (`Binary` by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HumanBase {
    Binary,
    Si,
}

/// Whether `head` (the first non-empty lines) looks like `df` output.
pub fn sniff(head: &[&str]) -> Result<(), String> {
    let mut lines = head.iter().map(|l| l.trim());
    let Some(first) = lines.next() else {
        return Err("the file is empty".to_owned());
    };
    if header(first).is_some() {
        return Ok(());
    }
    if stamp(first).is_some() {
        return match lines.next() {
            Some(second) if header(second).is_some() => Ok(()),
            Some(second) => Err(format!(
                "the line after the date, `{}`, is not df's `Filesystem ... Mounted on` header",
                short(second)
            )),
            None => Err("a date and nothing else".to_owned()),
        };
    }
    Err(format!(
        "the first line `{}` is not df's `Filesystem ... Mounted on` header (or a `date` line \
         before one)",
        short(first)
    ))
}

/// A fresh importer reading `-h` sizes as powers of 1024.
pub fn importer() -> Df {
    importer_with(HumanBase::Binary)
}

pub fn importer_with(base: HumanBase) -> Df {
    Df {
        base,
        header: None,
        cur: None,
        stamp: None,
        pending_source: None,
        last_bad: None,
        untimed: false,
        human_noted: false,
        zone_noted: false,
        capped: false,
    }
}

/// The importer; see the module docs.
#[derive(Debug)]
pub struct Df {
    base: HumanBase,
    header: Option<Header>,
    cur: Option<Sample>,
    /// A `date` line waiting for its snapshot: (line, ms).
    stamp: Option<(usize, u64)>,
    /// A long filesystem name alone on its line; its figures follow.
    pending_source: Option<String>,
    /// The last non-empty line was a row that did not parse (a cut-off line at the end).
    last_bad: Option<usize>,
    untimed: bool,
    human_noted: bool,
    zone_noted: bool,
    capped: bool,
}

impl Df {
    fn close(&mut self, out: &mut Emit) {
        self.pending_source = None;
        if let Some(s) = self.cur.take() {
            if s.mounts.is_empty() {
                out.notes
                    .push(Note::at(s.line, "a df header with no filesystems, skipped"));
            } else {
                self.untimed |= s.t_ms.is_none();
                out.samples.push(s);
            }
        }
    }

    /// `1.9G`, `931M`, `12K`, `0` (df -h), or plain blocks.
    fn size(&mut self, text: &str, block: Option<u64>) -> Result<Option<u64>, String> {
        if text == "-" {
            return Ok(None);
        }
        if let Some(b) = block {
            let n: u64 = text
                .parse()
                .map_err(|_| format!("`{}` is not a whole number", short(text)))?;
            return n
                .checked_mul(b)
                .map(Some)
                .ok_or_else(|| format!("`{}` blocks overflow", short(text)));
        }
        if text.bytes().all(|b| b.is_ascii_digit()) {
            return text
                .parse()
                .map(Some)
                .map_err(|_| format!("`{}` is out of range", short(text)));
        }
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .unwrap_or(text.len());
        let (digits, unit) = text.split_at(split);
        let exp = match unit.trim_end_matches(['i', 'B']) {
            "" => 0,
            "K" | "k" => 1,
            "M" => 2,
            "G" => 3,
            "T" => 4,
            "P" => 5,
            "E" => 6,
            _ => return Err(format!("`{}` is not a size", short(text))),
        };
        let v: f64 = digits
            .replace(',', ".")
            .parse()
            .map_err(|_| format!("`{}` is not a size", short(text)))?;
        let base: f64 = match self.base {
            HumanBase::Binary => 1024.0,
            HumanBase::Si => 1000.0,
        };
        let bytes = v * base.powi(exp);
        // `u64::MAX as f64` rounds up to 2^64, itself out of range: compare with `<`.
        if !(0.0..18_446_744_073_709_551_615.0).contains(&bytes) {
            return Err(format!("`{}` is out of range", short(text)));
        }
        self.human_noted = true;
        // In range (checked just above), so the cast neither wraps nor saturates.
        Ok(Some(bytes.round() as u64))
    }

    fn row(&mut self, no: usize, line: &str, out: &mut Emit) {
        let Some(h) = self.header.as_ref() else {
            out.notes.push(Note::at(
                no,
                format!("`{}` comes before any df header", short(line.trim())),
            ));
            return;
        };
        let want = h.cols.len();
        let mut words: Vec<&str> = line.split_whitespace().collect();
        let pending = self.pending_source.take();
        if words.len() == 1 && pending.is_none() && want > 1 {
            self.pending_source = words.first().map(|w| (*w).to_owned());
            self.last_bad = Some(no);
            return;
        }
        let skip = want.saturating_sub(usize::from(pending.is_some()));
        if let Some(p) = pending.as_deref() {
            words.insert(0, p);
        }
        if words.len() <= want {
            self.last_bad = Some(no);
            out.notes.push(Note::at(
                no,
                format!(
                    "expected at least {} fields (the last the mount point), found {}",
                    want + 1,
                    words.len()
                ),
            ));
            return;
        }
        // The mount point is everything after the figures (it may hold spaces).
        let mut rest = line;
        for _ in 0..skip {
            rest = rest.trim_start();
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            rest = rest.get(end..).unwrap_or("");
        }
        let mut m = MountRow {
            mount_point: rest.trim().to_owned(),
            ..MountRow::default()
        };
        let cols: Vec<(Col, String)> = h.cols.iter().copied().zip(h.name.clone()).collect();
        let block = h.block;
        let mut errors = Vec::new();
        for ((col, name), word) in cols.into_iter().zip(words) {
            let slot = match col {
                Col::Source => {
                    m.source = word.to_owned();
                    continue;
                }
                Col::Type => {
                    m.fs_type = Some(word.to_owned());
                    continue;
                }
                Col::Other => continue,
                Col::Size => &mut m.size_bytes,
                Col::Used => &mut m.used_bytes,
                Col::Avail => &mut m.avail_bytes,
                Col::Inodes => &mut m.inodes_total,
                Col::IUsed => &mut m.inodes_used,
                Col::IFree => &mut m.inodes_free,
            };
            let unit = match col {
                Col::Size | Col::Used | Col::Avail => block,
                _ => None,
            };
            match self.size(word, unit) {
                Ok(v) => *slot = v,
                Err(e) => errors.push(format!("{e} in {name}")),
            }
        }
        if let Some(first) = errors.first() {
            out.notes.push(Note::at(no, first.clone()));
        }
        let sample = self.cur.get_or_insert_with(|| Sample {
            line: no,
            ..Sample::default()
        });
        if sample.mounts.len() < MAX_MOUNTS {
            sample.mounts.push(m);
        } else if !self.capped {
            self.capped = true;
            out.notes.push(Note::at(
                no,
                format!("more than {MAX_MOUNTS} filesystems in one snapshot: the rest are skipped"),
            ));
        }
    }
}

impl Importer for Df {
    fn line(&mut self, no: usize, line: &str, out: &mut Emit) {
        let t = line.trim();
        if t.is_empty() {
            if self.cur.as_ref().is_some_and(|s| !s.mounts.is_empty()) {
                self.close(out);
            }
            return;
        }
        self.last_bad = None;
        if let Some(h) = header(t) {
            self.close(out);
            let (line_no, t_ms) = match self.stamp.take() {
                Some((l, ms)) => (l, Some(ms)),
                None => (no, None),
            };
            self.header = Some(h);
            self.capped = false;
            self.cur = Some(Sample {
                t_ms,
                line: line_no,
                ..Sample::default()
            });
            return;
        }
        if self.pending_source.is_none()
            && let Some((ms, zone)) = stamp(t)
        {
            if self.cur.as_ref().is_some_and(|s| !s.mounts.is_empty()) {
                self.close(out);
            }
            if let Some(z) = zone
                && !self.zone_noted
            {
                self.zone_noted = true;
                out.notes.push(Note::at(
                    no,
                    format!("the time zone `{z}` of the date lines is read as UTC"),
                ));
            }
            self.stamp = Some((no, ms));
            return;
        }
        self.row(no, line, out);
    }

    fn finish(&mut self, out: &mut Emit) {
        if let Some(at) = self.last_bad
            && let Some(s) = self.cur.take()
        {
            out.notes.push(Note::at(
                at,
                format!("the last snapshot (line {}) is cut off: dropped", s.line),
            ));
        }
        if let Some(s) = self.cur.as_ref()
            && s.mounts.is_empty()
        {
            out.notes.push(Note::at(
                s.line,
                "the last snapshot is cut off after its header: dropped",
            ));
            self.cur = None;
        }
        self.close(out);
        if let Some((at, _)) = self.stamp.take() {
            out.notes.push(Note::at(
                at,
                "a date line with no snapshot after it (cut off), ignored",
            ));
        }
        if self.human_noted {
            self.human_noted = false;
            out.notes.push(Note::file(match self.base {
                HumanBase::Binary => {
                    "sizes like `1.9G` are rounded by `df -h`: read as powers of 1024, they are \
                     approximate (a `df -H` log, powers of 1000, needs the SI reading)"
                }
                HumanBase::Si => {
                    "sizes like `1.9G` are rounded by `df -H`: read as powers of 1000, they are \
                     approximate"
                }
            }));
        }
        if self.untimed {
            self.untimed = false;
            out.notes.push(Note::untimed());
        }
    }
}

#[cfg(test)]
#[path = "df_tests.rs"]
pub(crate) mod tests;
