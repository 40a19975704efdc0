//! What a human reads about a diagnosis, written once for `vramio check` and the page: verdict,
//! rule, severity and answer names, values in their units, durations, times of day, evidence
//! sentences ([`evidence_text`]), projections, the banner's one-line [`reason`] and the order the
//! findings panel lists findings in ([`order_findings`]).
//!
//! Times of day need a clock and `shared` is pure: callers pass a [`Tz`] (the page its browser's
//! offset, `vramio check` UTC, which it prints as such).

mod evidence;
mod order;
mod reason;
#[cfg(test)]
mod tests;

pub use evidence::{evidence_text, held_text, metric_text, threshold_text};
pub use order::{explains, order_findings};
pub use reason::{
    deciding_evidence, gpus_text, job_reason, jobs_about, no_data_text, reason, reason_with_jobs,
};

use super::evidence::Unit;
use super::model::{Answer, ProjectionKind, RuleId, Severity, Verdict};
use crate::units::{Bytes, format_bytes};

/// What is shown for a value that could not be read. Never "0".
pub const DASH: &str = "—";

/// The verdict in words, for the banner, the flowchart's leaves and the report's first line.
pub fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::Healthy => "Healthy",
        Verdict::GpuMemoryPressure => "GPU memory pressure",
        Verdict::InputBoundDisk => "Input-bound: disk",
        Verdict::InputBoundCpu => "Input-bound: CPU",
        Verdict::CheckpointStall => "Checkpoint stall",
        Verdict::GpuUnderutilized => "GPU underutilized",
        Verdict::DiskSpaceRisk => "Disk space at risk",
        Verdict::HostMemoryPressure => "Host memory pressure",
        Verdict::NoData => "No data",
    }
}

/// A rule's name in words, for the findings.
pub fn rule_text(r: RuleId) -> &'static str {
    match r {
        RuleId::GpuMemoryPressure => "GPU memory pressure",
        RuleId::GpuMemoryNotHeldByJob => "GPU memory not held by the job",
        RuleId::GpuMemoryOrphan => "GPU memory held by an exited process",
        RuleId::GpuUnavailable => "GPU unavailable",
        RuleId::InputBoundDisk => "Input-bound on disk",
        RuleId::InputBoundCpu => "Input-bound on CPU",
        RuleId::CheckpointStall => "Checkpoint stall",
        RuleId::GpuUnderutilized => "GPU underutilized",
        RuleId::DiskSpaceRisk => "Disk space at risk",
        RuleId::DevShm => "/dev/shm too small or full",
        RuleId::HostMemoryPressure => "Host memory pressure",
        RuleId::Headroom => "Headroom",
    }
}

/// `ok`, `warning`, `critical`, `unknown`.
pub fn severity_text(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "ok",
        Severity::Warning => "warning",
        Severity::Critical => "critical",
        Severity::Unknown => "unknown",
    }
}

/// `yes`, `no`, `unknown`.
pub fn answer_text(a: Answer) -> &'static str {
    match a {
        Answer::Yes => "yes",
        Answer::No => "no",
        Answer::Unknown => "unknown",
    }
}

/// A duration for people: `45 s`, `12 min`, `1.5 h`, `15 h`, `3 d`; a dash when not finite or
/// negative.
pub fn duration_text(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return DASH.to_owned();
    }
    let tenth = |v: f64| {
        if v < 10.0 && (v - v.round()).abs() >= 0.05 {
            format!("{v:.1}")
        } else {
            format!("{v:.0}")
        }
    };
    if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if seconds < 48.0 * 3600.0 {
        format!("{} h", tenth(seconds / 3600.0))
    } else {
        format!("{} d", tenth(seconds / 86_400.0))
    }
}

/// A forecast as a card or the report says it: `memory full in ~12 min`, `full in ~40 min`.
pub fn projection_text(kind: ProjectionKind, seconds: f64) -> String {
    let when = duration_text(seconds);
    match kind {
        ProjectionKind::TimeToFullGpuMemory => format!("memory full in ~{when}"),
        ProjectionKind::TimeToFullDisk => format!("full in ~{when}"),
    }
}

/// `97%`, `4.5%`: one decimal only where it matters (under 10).
pub fn percent_text(p: f64) -> String {
    if p.abs() < 10.0 && p.fract().abs() > f64::EPSILON {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// A plain number: no decimals from 100 on, one below.
pub fn number_text(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A throughput in MiB/s with one decimal (what `iostat -m` prints).
pub fn mib_per_sec_text(bytes_per_sec: f64) -> String {
    format!("{:.1} MiB/s", bytes_per_sec / (1024.0 * 1024.0))
}

/// A unitless figure: whole numbers as they are, small fractions with two decimals.
fn plain(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() < 1.0 {
        format!("{v:.2}")
    } else {
        number_text(v)
    }
}

/// `value` in `unit`: `96%`, `1.2 GiB`, `12.3 MiB/s`, `12 min`, `4.0 ms`, `3`, `0.93`.
pub fn value_text(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Percent => percent_text(value),
        Unit::Bytes => format_bytes(Bytes(value.max(0.0).round() as u64)),
        Unit::BytesPerSec => mib_per_sec_text(value),
        Unit::Seconds => duration_text(value),
        Unit::Millis => format!("{} ms", number_text(value)),
        Unit::Count => format!("{value:.0}"),
        Unit::Ratio | Unit::None => plain(value),
    }
}

/// The offset from UTC that times of day are written in. `shared` has no clock of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tz {
    east_minutes: i32,
}

impl Tz {
    pub const UTC: Tz = Tz { east_minutes: 0 };

    /// A zone `minutes` east of UTC (JavaScript's `getTimezoneOffset()` is the negation).
    pub fn east_of_utc(minutes: i32) -> Tz {
        Tz {
            east_minutes: minutes.clamp(-18 * 60, 18 * 60),
        }
    }
}

/// The day and time of `t_ms`: `12-03 14:00` (month-day), with ` UTC` in [`Tz::UTC`]; for a
/// time axis longer than a day.
pub fn day_clock_text(t_ms: u64, tz: Tz) -> String {
    let secs = i64::try_from(t_ms / 1000).unwrap_or(i64::MAX) + i64::from(tz.east_minutes) * 60;
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let text = format!(
        "{month:02}-{day:02} {:02}:{:02}",
        of_day / 3600,
        of_day % 3600 / 60
    );
    if tz == Tz::UTC {
        format!("{text} UTC")
    } else {
        text
    }
}

/// The time of day of `t_ms` (ms since the epoch): `12:03`, or `12:03 UTC` in [`Tz::UTC`].
pub fn clock_text(t_ms: u64, tz: Tz) -> String {
    let secs = i64::try_from(t_ms / 1000).unwrap_or(i64::MAX) + i64::from(tz.east_minutes) * 60;
    let of_day = secs.rem_euclid(86_400);
    let text = format!("{:02}:{:02}", of_day / 3600, of_day % 3600 / 60);
    if tz == Tz::UTC {
        format!("{text} UTC")
    } else {
        text
    }
}
