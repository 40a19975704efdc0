//! One evidence item as one sentence: `gpu 0 memory used 96% ≥ 95% in 58/60 samples over 60 s`,
//! or for a condition kept by hysteresis `gpu 0 memory used 88% in 50/60 samples over 60 s (held
//! since 12:03, entered at 90%, clears below 85%)`.

use super::{DASH, Tz, clock_text, duration_text, value_text};
use crate::diagnosis::evidence::{Comparison, Evidence, Held, Metric, Threshold, Unit};

/// The metric in words, as read after its subject (`gpu 0` + `memory used`).
pub fn metric_text(m: Metric) -> &'static str {
    use Metric as M;
    match m {
        M::Frames => "frames",
        M::GpuCount => "GPUs",
        M::NvmlStatus => "status",
        M::GpuMemoryUsed => "memory used",
        M::GpuMemoryTimeToFull => "memory full in",
        M::GpuUnavailable => "unavailable",
        M::GpuMemoryNotHeldByProcesses => "memory not held by any process",
        M::GpuMemoryOrphan => "memory held by an exited process",
        M::GpuJobPresent => "job present",
        M::GpuUtilizationMean => "mean utilization",
        M::GpuUtilizationCv => "utilization variation (CV)",
        M::CpuBusy => "CPU busy",
        M::WriteRate => "writes",
        M::UtilDipsAtWriteBursts => "utilization dips at write bursts",
        M::PsiIoSome => "I/O pressure (PSI some avg10)",
        M::ReadRateMean => "mean reads",
        M::ReadMedianOverPeak => "median reads / peak",
        M::RAwaitMedian => "median read await",
        M::DiskUtilMedian => "median %util",
        M::IowaitMean => "mean iowait",
        M::BlockDeviceCount => "block devices",
        M::MountCount => "mounts",
        M::WritableMountCount => "writable mounts",
        M::MountUsed => "used",
        M::InodesUsed => "inodes used",
        M::ShmSize => "size",
        M::MountTimeToFull => "full in",
        M::MemAvailable => "memory available",
        M::PsiMemorySome => "memory pressure (PSI some avg10)",
        M::SwapGrowth => "swap growth",
        M::JobReadRateMean => "own mean reads",
    }
}

fn symbol(c: Comparison) -> &'static str {
    match c {
        Comparison::Ge => "≥",
        Comparison::Gt => ">",
        Comparison::Le => "≤",
        Comparison::Lt => "<",
    }
}

/// `≥ 90%`.
pub fn threshold_text(t: Threshold, unit: Unit) -> String {
    format!("{} {}", symbol(t.comparison), value_text(t.value, unit))
}

/// `held since 12:03, entered at 90%, clears below 85%` (`above` when low values are the bad
/// side, as for MemAvailable).
pub fn held_text(h: &Held, comparison: Comparison, unit: Unit, tz: Tz) -> String {
    let side = if comparison.bad_when_high() {
        "below"
    } else {
        "above"
    };
    format!(
        "held since {}, entered at {}, clears {side} {}",
        clock_text(h.since_ms, tz),
        value_text(h.entered_at, unit),
        value_text(h.clears_at, unit)
    )
}

/// One evidence item as a sentence: subject, metric, value, comparison with the threshold (or,
/// when held, the hysteresis levels), in how many samples it held, over which window, and any
/// detail. A count that only repeats the samples held is not written twice.
pub fn evidence_text(e: &Evidence, tz: Tz) -> String {
    let mut s = String::new();
    if let Some(subject) = e.subject.as_deref().filter(|s| !s.is_empty()) {
        s.push_str(subject);
        s.push(' ');
    }
    s.push_str(metric_text(e.metric));
    if e.unit == Unit::None && e.value.is_none() {
        if let Some(d) = e.detail.as_deref().filter(|d| !d.is_empty()) {
            s.push_str(": ");
            s.push_str(d);
        }
        return s;
    }
    let repeats_samples = e.unit == Unit::Count
        && e.threshold.is_none()
        && matches!((e.value, e.samples), (Some(v), Some((held, _))) if v == f64::from(held));
    if !repeats_samples {
        s.push(' ');
        s.push_str(
            &e.value
                .map_or_else(|| DASH.to_owned(), |v| value_text(v, e.unit)),
        );
    }
    if let (Some(t), None) = (e.threshold, e.held) {
        s.push(' ');
        s.push_str(&threshold_text(t, e.unit));
    }
    if let Some((held, of)) = e.samples {
        s.push_str(&format!(" in {held}/{of} samples"));
    }
    if let Some(w) = e.window_s {
        s.push_str(&format!(" over {}", duration_text(w)));
    }
    let mut notes = Vec::new();
    if let Some(h) = &e.held {
        let cmp = e.threshold.map_or(Comparison::Ge, |t| t.comparison);
        notes.push(held_text(h, cmp, e.unit, tz));
    }
    if let Some(d) = e.detail.as_deref().filter(|d| !d.is_empty()) {
        notes.push(d.to_owned());
    }
    if !notes.is_empty() {
        s.push_str(&format!(" ({})", notes.join("; ")));
    }
    s
}
