//! What `iostat`'s text and JSON importers share: column (key) names to [`DiskRow`] and
//! [`CpuRow`] fields with their units, numbers as iostat prints them, the banner's date, and the
//! since-boot rule (the first report averages since boot, not over the run); and, for `df`
//! too, [`short`] to quote a value in a note.

use crate::ingest::clock;
use crate::ingest::model::{CpuRow, DiskRow, Emit, Note, Sample};

/// A kernel sector as `/proc/diskstats` and iostat's `rsec/s` and `Blk_read/s` count it.
const SECTOR: f64 = 512.0;
/// iostat's kB and MB are binary (its `-k` divides sectors by 2, `-m` by 2048).
const KB: f64 = 1024.0;
const MB: f64 = 1024.0 * 1024.0;

/// A [`DiskRow`] field a column fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DiskField {
    ReadIops,
    WriteIops,
    ReadBytes,
    WriteBytes,
    RAwait,
    WAwait,
    Await,
    Queue,
    Util,
}

/// The field a column (text header) or key (JSON) fills, and the factor to bytes for rates.
/// Text headers and JSON keys of sysstat 10 to 12 (`r`, `rkB`, `kB_read_per_sec` are 11.x JSON).
pub(super) fn disk_field(name: &str) -> Option<(DiskField, f64)> {
    use DiskField::*;
    Some(match name {
        "r/s" | "r" => (ReadIops, 1.0),
        "w/s" | "w" => (WriteIops, 1.0),
        "rkB/s" | "rkB" | "kB_read/s" | "kB_read_per_sec" => (ReadBytes, KB),
        "wkB/s" | "wkB" | "kB_wrtn/s" | "kB_wrtn_per_sec" => (WriteBytes, KB),
        "rMB/s" | "rMB" | "MB_read/s" | "MB_read_per_sec" => (ReadBytes, MB),
        "wMB/s" | "wMB" | "MB_wrtn/s" | "MB_wrtn_per_sec" => (WriteBytes, MB),
        "rsec/s" | "Blk_read/s" => (ReadBytes, SECTOR),
        "wsec/s" | "Blk_wrtn/s" => (WriteBytes, SECTOR),
        "r_await" => (RAwait, 1.0),
        "w_await" => (WAwait, 1.0),
        "await" => (Await, 1.0),
        "aqu-sz" | "avgqu-sz" => (Queue, 1.0),
        "%util" | "util" => (Util, 1.0),
        _ => return None,
    })
}

pub(super) fn set_disk(row: &mut DiskRow, field: DiskField, value: f64) {
    let slot = match field {
        DiskField::ReadIops => &mut row.read_iops,
        DiskField::WriteIops => &mut row.write_iops,
        DiskField::ReadBytes => &mut row.read_bytes_per_sec,
        DiskField::WriteBytes => &mut row.write_bytes_per_sec,
        DiskField::RAwait => &mut row.r_await_ms,
        DiskField::WAwait => &mut row.w_await_ms,
        DiskField::Await => &mut row.await_ms,
        DiskField::Queue => &mut row.avg_queue_size,
        DiskField::Util => &mut row.util_pct,
    };
    *slot = Some(value);
}

/// The [`CpuRow`] slot of an `avg-cpu` column (`%user`) or JSON key (`user`).
pub(super) fn cpu_slot<'a>(cpu: &'a mut CpuRow, name: &str) -> Option<&'a mut Option<f64>> {
    Some(match name.trim_start_matches('%') {
        "user" => &mut cpu.user_pct,
        "nice" => &mut cpu.nice_pct,
        "system" => &mut cpu.system_pct,
        "iowait" => &mut cpu.iowait_pct,
        "steal" => &mut cpu.steal_pct,
        "idle" => &mut cpu.idle_pct,
        _ => return None,
    })
}

/// A figure as iostat prints it: `12.34`, or `12,34` where LC_NUMERIC uses a comma. Never
/// negative or infinite; the error says why, for a note.
pub(super) fn number(text: &str) -> Result<f64, String> {
    let dotted;
    let t = if !text.contains('.') && text.matches(',').count() == 1 {
        dotted = text.replace(',', ".");
        dotted.as_str()
    } else {
        text
    };
    match t.parse::<f64>() {
        Ok(v) if !v.is_finite() => Err(format!("`{}` is out of range", short(text))),
        Ok(v) if v < 0.0 => Err(format!("`{}` is negative", short(text))),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("`{}` is not a number", short(text))),
    }
}

/// The bytes a `-h` suffix stands for (`0.0k`, `463.5M`: powers of 1024, as sysstat prints).
fn suffix_bytes(c: char) -> Option<f64> {
    Some(match c {
        'B' => 1.0,
        'k' | 'K' => KB,
        'M' => MB,
        'G' => MB * KB,
        'T' => MB * MB,
        'P' => MB * MB * KB,
        _ => return None,
    })
}

/// A figure in a column whose unit is `factor` bytes (1 for a count, a time or a percent), as
/// plain iostat prints it or as `-h` does (`1.1M`: the suffix gives the unit; `98.6%`).
pub(super) fn figure(text: &str, factor: f64) -> Result<f64, String> {
    let t = text.strip_suffix('%').unwrap_or(text);
    let (digits, unit) = match t.char_indices().last() {
        Some((i, c)) if i > 0 => match suffix_bytes(c) {
            Some(unit) => (t.get(..i).unwrap_or(""), unit),
            None => (t, factor),
        },
        _ => (t, factor),
    };
    let v = number(digits).map_err(|e| {
        e.replacen(
            &format!("`{}`", short(digits)),
            &format!("`{}`", short(text)),
            1,
        )
    })? * unit;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("`{}` is out of range", short(text)))
    }
}

/// At most 40 characters of `text`, for a note.
pub(super) fn short(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push_str("...");
    }
    s
}

/// `DD.MM.YYYY` (a locale's `%x`) rewritten as `YYYY-MM-DD`; other tokens unchanged.
fn iso_date(token: &str) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    match parts.as_slice() {
        [d, m, y] if d.len() <= 2 && m.len() <= 2 && y.len() == 4 => format!("{y}-{m}-{d}"),
        _ => token.to_owned(),
    }
}

/// Midnight (UTC) of a date as iostat's banner or JSON `date` writes it (`12/19/2022`,
/// `04/12/17`, `2022-12-19`, `30.10.2020`).
pub(super) fn date_ms(token: &str) -> Option<u64> {
    clock::parse(&format!("{} 00:00:00", iso_date(token.trim())))
}

/// The date in iostat's banner (`Linux 5.4.0 (host) \t12/19/2022 \t_x86_64_\t(24 CPU)`).
pub(super) fn banner_date(line: &str) -> Option<u64> {
    let after_host = line.split_once(')').map_or(line, |(_, rest)| rest);
    after_host.split_whitespace().find_map(date_ms)
}

/// A report's timestamp (`-t`): a whole date and time, or a time of day alone that takes its
/// date from the banner, rolling over past midnight.
#[derive(Debug, Default)]
pub(super) struct Stamps {
    /// The banner's (or JSON `date`) midnight.
    pub date_ms: Option<u64>,
    last_tod: Option<u64>,
    days: u64,
    undated_noted: bool,
}

impl Stamps {
    /// `Some(Some(ms))` for a timestamp, `Some(None)` for a time of day with no date to put it
    /// on (noted once), `None` when `text` is not a timestamp.
    pub fn read(&mut self, no: usize, text: &str, out: &mut Emit) -> Option<Option<u64>> {
        let t = text.trim();
        let mut words = t.split_whitespace();
        let first = words.next()?;
        if words.clone().count() > 2 || !first.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let rest: Vec<&str> = words.collect();
        let mut whole = iso_date(first);
        for w in &rest {
            whole.push(' ');
            whole.push_str(w);
        }
        if let Some(ms) = clock::parse(&whole) {
            return Some(Some(ms));
        }
        if !first.contains(':') {
            return None;
        }
        let tod = clock::parse(&format!("1970-01-01 {t}"))?;
        if self.last_tod.is_some_and(|last| tod < last) {
            self.days = self.days.saturating_add(1);
        }
        self.last_tod = Some(tod);
        match self.date_ms {
            Some(d) => Some(
                d.checked_add(self.days.saturating_mul(86_400_000))
                    .and_then(|d| d.checked_add(tod)),
            ),
            None => {
                if !self.undated_noted {
                    self.undated_noted = true;
                    out.notes.push(Note::at(
                        no,
                        "a time of day with no date (the banner line is missing): these reports have no timestamps",
                    ));
                }
                Some(None)
            }
        }
    }
}

/// The since-boot rule: the first report is held; a second one drops it (noted), and a file of
/// one report keeps it (noted). `skip_first = false` keeps every report (a `-y` log).
#[derive(Debug)]
pub(super) struct Reports {
    skip_first: bool,
    held: Option<Sample>,
    accepted: usize,
    untimed: bool,
}

impl Reports {
    pub fn new(skip_first: bool) -> Reports {
        Reports {
            skip_first,
            held: None,
            accepted: 0,
            untimed: false,
        }
    }

    /// A complete report.
    pub fn push(&mut self, sample: Sample, out: &mut Emit) {
        self.accepted = self.accepted.saturating_add(1);
        if self.skip_first && self.accepted == 1 {
            self.held = Some(sample);
            return;
        }
        if let Some(first) = self.held.take() {
            out.notes.push(Note::file(format!(
                "the first report (line {}) was skipped: iostat's first report averages since \
                 boot, not this run (a log taken with `iostat -y` has no such report; import it \
                 without the since-boot skip to keep its first report)",
                first.line
            )));
        }
        self.untimed |= sample.t_ms.is_none();
        out.samples.push(sample);
    }

    /// The end of the input.
    pub fn finish(&mut self, out: &mut Emit) {
        if let Some(first) = self.held.take() {
            out.notes.push(Note::file(
                "only one report: its figures are averages since boot, not over an interval",
            ));
            self.untimed |= first.t_ms.is_none();
            out.samples.push(first);
        }
        if self.untimed {
            self.untimed = false;
            out.notes.push(Note::untimed());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_iostat_prints_them() {
        assert_eq!(number("12.50"), Ok(12.5));
        assert_eq!(number("12,50"), Ok(12.5));
        assert_eq!(number("0"), Ok(0.0));
        assert!(number("1e400").is_err_and(|e| e.contains("out of range")));
        assert!(number("-1.00").is_err_and(|e| e.contains("negative")));
        assert!(number("abc").is_err_and(|e| e.contains("not a number")));
        assert!(number("1,000,0").is_err());
    }

    #[test]
    fn figures_with_units_and_suffixes() {
        assert_eq!(figure("2.00", KB), Ok(2048.0));
        assert_eq!(figure("1.5M", KB), Ok(1.5 * MB));
        assert_eq!(figure("0.0k", KB), Ok(0.0));
        assert_eq!(figure("98.6%", 1.0), Ok(98.6));
        assert_eq!(figure("3,5", MB), Ok(3.5 * MB));
        assert!(figure("1e300", MB * MB).is_err_and(|e| e.contains("out of range")));
        assert!(figure("M", 1.0).is_err_and(|e| e.contains("not a number")));
        assert!(figure("12x", 1.0).is_err_and(|e| e.contains("`12x`")));
        assert_eq!(figure("-1.0M", 1.0), Err("`-1.0M` is negative".to_owned()));
    }

    #[test]
    fn banner_dates_in_every_locale_seen() {
        let day = 1_671_408_000_000; // 2022-12-19
        for line in [
            "Linux 5.4.0-135-generic (compute3) \t12/19/2022 \t_x86_64_\t(24 CPU)",
            "Linux 5.4.0-135-generic (compute3) \t12/19/22 \t_x86_64_\t(24 CPU)",
            "Linux 5.4.0-135-generic (compute3) \t2022-12-19 \t_x86_64_\t(24 CPU)",
            "Linux 5.4.0-135-generic (compute3) \t19.12.2022 \t_x86_64_\t(24 CPU)",
        ] {
            assert_eq!(banner_date(line), Some(day), "{line}");
        }
        assert_eq!(banner_date("Linux 5.4.0 (host) _x86_64_ (24 CPU)"), None);
    }

    #[test]
    fn times_of_day_take_the_banner_date_and_roll_over_midnight() {
        let mut out = Emit::default();
        let mut s = Stamps {
            date_ms: date_ms("01/05/2023"),
            ..Stamps::default()
        };
        let day = 1_672_876_800_000;
        assert_eq!(
            s.read(1, "11:59:59 PM", &mut out),
            Some(Some(day + 86_399_000))
        );
        assert_eq!(
            s.read(2, "00:00:01", &mut out),
            Some(Some(day + 86_401_000))
        );
        assert_eq!(
            s.read(3, "01/05/2023 12:00:01 PM", &mut out),
            Some(Some(day + 43_201_000))
        );
        assert_eq!(
            s.read(4, "05.01.2023 12:00:01", &mut out),
            Some(Some(day + 43_201_000))
        );
        assert_eq!(s.read(5, "sda 1.00 2.00", &mut out), None);
        assert_eq!(s.read(6, "0.14    0.00    0.16", &mut out), None);
        let mut undated = Stamps::default();
        assert_eq!(undated.read(7, "12:00:01", &mut out), Some(None));
        assert_eq!(undated.read(8, "12:00:02", &mut out), Some(None));
        assert_eq!(out.notes.len(), 1);
    }
}
