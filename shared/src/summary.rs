//! The compact per-host summary that feeds a hub's overview: status, verdict, each GPU's memory
//! and utilization, the busiest disk, the soonest time-to-OOM and time-to-full. Sent once per tick
//! per host to every viewer, so it must stay small (aim: <= 300 bytes for a host of 8 GPUs);
//! full frames flow only for the hosts a viewer has open.

use crate::diagnosis::{Diagnosis, ProjectionKind, Severity, Verdict};
use crate::frame::Frame;
use crate::protocol::HostState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One host at a glance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostSummary {
    pub state: HostState,
    /// Time of the newest frame (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_ms: Option<u64>,
    /// Why the host is stale or down (ssh's last error line, "unauthorized", ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The hostname the host reports (beside the name the hub knows it by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// Every GPU, in index order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuBrief>,
    /// The block device with the highest utilization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskBrief>,
    /// Soonest projected GPU memory exhaustion, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_s: Option<u64>,
    /// Soonest projected full disk, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_s: Option<u64>,
    /// The job held back worst (docs/jobs.md#5-a-verdict-per-job); absent while every job is
    /// healthy or unknown, or there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobBrief>,
}

/// A job at a glance: its label (never its user) and its own verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobBrief {
    pub label: String,
    pub verdict: Verdict,
}

/// One GPU: memory used and utilization, whole percent (absent when not known).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GpuBrief {
    /// Memory used, % of total.
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    pub mem_pct: Option<u8>,
    /// Utilization, %.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub util_pct: Option<u8>,
}

/// The busiest disk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiskBrief {
    pub name: String,
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub util_pct: Option<u8>,
}

fn pct(v: f64) -> Option<u8> {
    v.is_finite()
        .then(|| v.round().clamp(0.0, 100.0))
        .map(|p| p as u8)
}

fn secs(v: f64) -> Option<u64> {
    (v.is_finite() && v >= 0.0).then(|| v.round().min(u64::MAX as f64) as u64)
}

/// The job with the worst verdict (severity, then the frame's order: most GPU memory), if one is
/// held back.
fn worst_job(d: &Diagnosis) -> Option<JobBrief> {
    d.jobs
        .iter()
        .filter(|j| !matches!(j.verdict, Verdict::Healthy | Verdict::NoData))
        .fold(
            None::<&crate::diagnosis::JobDiagnosis>,
            |worst, j| match worst {
                Some(w) if w.severity.rank() >= j.severity.rank() => Some(w),
                _ => Some(j),
            },
        )
        .map(|j| JobBrief {
            label: j.label.clone(),
            verdict: j.verdict,
        })
}

impl HostSummary {
    /// A host with no data yet, or that is gone: just its state and why.
    pub fn bare(state: HostState, error: Option<String>) -> HostSummary {
        HostSummary {
            state,
            seen_ms: None,
            error,
            hostname: None,
            verdict: None,
            severity: None,
            gpus: Vec::new(),
            disk: None,
            oom_s: None,
            full_s: None,
            job: None,
        }
    }

    /// The summary of `frame` (the newest) and `diagnosis` (the newest, if any).
    pub fn of(
        state: HostState,
        frame: &Frame,
        diagnosis: Option<&Diagnosis>,
        error: Option<String>,
    ) -> HostSummary {
        let gpus = frame
            .gpus
            .iter()
            .map(|g| GpuBrief {
                mem_pct: g.memory.as_ref().and_then(|m| {
                    (m.total_bytes.0 > 0)
                        .then(|| pct(m.used_bytes.0 as f64 * 100.0 / m.total_bytes.0 as f64))
                        .flatten()
                }),
                util_pct: g.utilization_gpu_pct.and_then(|p| pct(p.0)),
            })
            .collect();
        let disk = frame
            .block_devices
            .iter()
            .filter_map(|d| d.util_pct.map(|u| (d, u.0)))
            .filter(|(_, u)| u.is_finite())
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(d, u)| DiskBrief {
                name: d.name.clone(),
                util_pct: pct(u),
            });
        let soonest = |kind: ProjectionKind| {
            diagnosis?
                .projections
                .iter()
                .filter(|p| p.kind == kind)
                .filter_map(|p| secs(p.seconds))
                .min()
        };
        HostSummary {
            state,
            seen_ms: Some(frame.t_ms),
            error,
            hostname: Some(frame.host.clone()),
            verdict: diagnosis.map(|d| d.verdict),
            severity: diagnosis.map(|d| d.severity),
            gpus,
            disk,
            oom_s: soonest(ProjectionKind::TimeToFullGpuMemory),
            full_s: soonest(ProjectionKind::TimeToFullDisk),
            job: diagnosis.and_then(worst_job),
        }
    }
}
