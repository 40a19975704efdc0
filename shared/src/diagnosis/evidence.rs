//! Typed evidence: one measured fact ([`Metric`] in a [`Unit`]) compared with one [`Threshold`]
//! by a [`Comparison`], with the N-of-M count, the window and, for a finding kept by hysteresis,
//! its [`Held`] state. Built by the rules through `ctx`; read by `words` and by any consumer of
//! the wire, which never has to parse a string to know what was measured or how it compared.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What was measured. One variant per measured thing; the unit is [`Metric::unit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Frames in the window (only when there are none).
    Frames,
    /// GPUs reported by NVML.
    GpuCount,
    /// NVML's state; the error is the detail.
    NvmlStatus,
    /// Used / total device memory.
    GpuMemoryUsed,
    /// Time until the device memory is full at the current growth.
    GpuMemoryTimeToFull,
    /// Samples in which the GPU was lost, failing or absent.
    GpuUnavailable,
    /// Device memory used beyond what the listed processes hold.
    GpuMemoryNotHeldByProcesses,
    /// Device memory held by a pid that no longer exists.
    GpuMemoryOrphan,
    /// Samples in which a job held memory on the GPU.
    GpuJobPresent,
    /// Mean GPU utilization over the window.
    GpuUtilizationMean,
    /// Coefficient of variation of GPU utilization (saw-tooth).
    GpuUtilizationCv,
    /// Host CPU busy.
    CpuBusy,
    /// Write throughput of all block devices.
    WriteRate,
    /// Utilization dips that coincide with write bursts.
    UtilDipsAtWriteBursts,
    /// PSI io `some avg10`.
    PsiIoSome,
    /// Mean read throughput of the busiest device.
    ReadRateMean,
    /// Median read throughput over the observed peak.
    ReadMedianOverPeak,
    /// Median read await.
    RAwaitMedian,
    /// Median `%util` of a rotational device.
    DiskUtilMedian,
    /// Mean iowait.
    IowaitMean,
    /// Block devices seen.
    BlockDeviceCount,
    /// Mounts seen.
    MountCount,
    /// Writable mounts seen.
    WritableMountCount,
    /// Used / (used + available to non-root) of a mount.
    MountUsed,
    /// Inodes used of a mount.
    InodesUsed,
    /// Size of `/dev/shm`.
    ShmSize,
    /// Time until a mount is full at the current growth.
    MountTimeToFull,
    /// MemAvailable / MemTotal.
    MemAvailable,
    /// PSI memory `some avg10`.
    PsiMemorySome,
    /// Growth of swap in use.
    SwapGrowth,
    /// A job's mean read rate over the window (its own counters, docs/jobs.md).
    JobReadRateMean,
}

impl Metric {
    /// The unit its values are in.
    pub fn unit(self) -> Unit {
        use Metric as M;
        match self {
            M::Frames
            | M::GpuCount
            | M::GpuUnavailable
            | M::GpuJobPresent
            | M::UtilDipsAtWriteBursts
            | M::BlockDeviceCount
            | M::MountCount
            | M::WritableMountCount => Unit::Count,
            M::NvmlStatus => Unit::None,
            M::GpuMemoryUsed
            | M::GpuUtilizationMean
            | M::CpuBusy
            | M::PsiIoSome
            | M::DiskUtilMedian
            | M::IowaitMean
            | M::MountUsed
            | M::InodesUsed
            | M::MemAvailable
            | M::PsiMemorySome => Unit::Percent,
            M::GpuMemoryTimeToFull | M::MountTimeToFull => Unit::Seconds,
            M::GpuMemoryNotHeldByProcesses | M::GpuMemoryOrphan | M::ShmSize => Unit::Bytes,
            M::WriteRate | M::ReadRateMean | M::SwapGrowth | M::JobReadRateMean => {
                Unit::BytesPerSec
            }
            M::GpuUtilizationCv | M::ReadMedianOverPeak => Unit::Ratio,
            M::RAwaitMedian => Unit::Millis,
        }
    }
}

/// The unit of a value and its threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// 0..100.
    Percent,
    Bytes,
    BytesPerSec,
    Seconds,
    Millis,
    /// A number of things or samples.
    Count,
    /// A dimensionless quotient.
    Ratio,
    /// Nothing was measured (a state, with the detail saying which).
    None,
}

/// How the value was compared with the threshold; the condition holds when
/// `value <comparison> threshold`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Comparison {
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "<")]
    Lt,
}

impl Comparison {
    /// Whether `value <self> threshold`.
    pub fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Comparison::Ge => value >= threshold,
            Comparison::Gt => value > threshold,
            Comparison::Le => value <= threshold,
            Comparison::Lt => value < threshold,
        }
    }

    /// Whether large values are the bad side (`>=`, `>`).
    pub fn bad_when_high(self) -> bool {
        matches!(self, Comparison::Ge | Comparison::Gt)
    }
}

/// The level a value was compared with.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Threshold {
    pub comparison: Comparison,
    pub value: f64,
}

/// A condition kept by hysteresis: it was met in an earlier diagnosis at `entered_at`, and is now
/// compared with the easier `clears_at` (the evidence's threshold), so it clears only once the
/// window is past that level.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Held {
    /// When the finding was first reported (ms since the epoch).
    pub since_ms: u64,
    /// The level that raised it.
    pub entered_at: f64,
    /// The level it clears at.
    pub clears_at: f64,
}

/// One measured fact compared with one threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    pub metric: Metric,
    /// Which item (`gpu 0`, `/data`, `nvme0n1`, `host`); absent for host-wide facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The value that was compared (the newest sample, or the window statistic the metric names);
    /// absent when it could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The unit of `value` and of the threshold (always `metric.unit()` for evidence made here).
    pub unit: Unit,
    /// Absent when nothing was compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<Threshold>,
    /// Seconds of data behind it; absent without frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
    /// `(held, of)`: in how many of the samples that had data the condition held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<(u32, u32)>,
    /// Present when the finding was already held by the previous diagnosis and still holds: it
    /// was then counted against the hysteresis level `threshold` (= `held.clears_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
    /// Free text such as the error a lost GPU reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Evidence {
    /// Evidence of `metric` (in its own unit) with nothing else filled in.
    pub fn new(metric: Metric) -> Self {
        Evidence {
            metric,
            subject: None,
            value: None,
            unit: metric.unit(),
            threshold: None,
            window_s: None,
            samples: None,
            held: None,
            detail: None,
        }
    }

    /// Whether the comparison held for the value, when both are known.
    pub fn comparison_holds(&self) -> Option<bool> {
        let t = self.threshold?;
        Some(t.comparison.holds(self.value?, t.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_serialize_as_symbols_and_compare() {
        let json = serde_json::to_string(&[Comparison::Ge, Comparison::Lt]).expect("json");
        assert_eq!(json, r#"[">=","<"]"#);
        assert!(Comparison::Ge.holds(90.0, 90.0));
        assert!(!Comparison::Gt.holds(90.0, 90.0));
        assert!(Comparison::Le.holds(10.0, 10.0));
        assert!(!Comparison::Lt.holds(10.0, 10.0));
        assert!(Comparison::Gt.bad_when_high() && !Comparison::Le.bad_when_high());
    }

    #[test]
    fn metrics_and_units_are_snake_case_on_the_wire() {
        let mut e = Evidence::new(Metric::RAwaitMedian);
        assert_eq!(e.unit, Unit::Millis);
        e.value = Some(12.0);
        e.threshold = Some(Threshold {
            comparison: Comparison::Gt,
            value: 5.0,
        });
        let v = serde_json::to_value(&e).expect("json");
        assert_eq!(v["metric"], "r_await_median");
        assert_eq!(v["unit"], "millis");
        assert_eq!(v["threshold"]["comparison"], ">");
        assert!(v.get("window_s").is_none(), "absent, not 0: {v}");
        assert_eq!(e.comparison_holds(), Some(true));
        e.value = None;
        assert_eq!(e.comparison_holds(), None);
        e.held = Some(Held {
            since_ms: 1,
            entered_at: 90.0,
            clears_at: 85.0,
        });
        let v = serde_json::to_value(&e).expect("json");
        assert_eq!(
            v["held"],
            serde_json::json!({"since_ms": 1, "entered_at": 90.0, "clears_at": 85.0})
        );
    }
}
