//! The diagnosis' output types (docs/diagnosis.md#combining-the-rules): verdict, severity, the path through the tree with
//! its evidence, findings with suggestions, and projections. They go on the wire as they are.

use super::evidence::Evidence;
use super::suggestions::Suggestion;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What one window of frames says about one host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnosis {
    /// The first answer along the spine (see [`super::tree`]).
    pub verdict: Verdict,
    /// The worst severity of all findings (not only the verdict's), so `check` exits non-zero on
    /// any critical; at least `unknown` when the verdict is `no_data`.
    pub severity: Severity,
    /// The nodes visited from the root to the verdict's leaf, in order.
    pub path: Vec<PathNode>,
    /// Every rule that fired, in spine order, whether or not it decided the verdict.
    pub findings: Vec<Finding>,
    /// Time-to-full forecasts from the trend of GPU memory and disk usage.
    pub projections: Vec<Projection>,
    /// Seconds the window covers (first to last frame plus one interval); absent without frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
    /// `t_ms` of the newest frame; absent without frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_ms: Option<u64>,
    /// Why the data did not suffice: present exactly when the verdict is `no_data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_data: Option<NoDataCause>,
    /// A verdict per job of the newest frame that holds a GPU (docs/jobs.md#5-a-verdict-per-job),
    /// in the frame's order; empty without jobs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<super::per_job::JobDiagnosis>,
}

/// Why a diagnosis is `no_data`: the first spine question that could not be answered, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum NoDataCause {
    /// The window holds no frames.
    NoFrames,
    /// No NVIDIA driver could be loaded; `message` is the loader's error.
    NoDriver { message: String },
    /// NVML is loaded but failing.
    NvmlFailed { message: String },
    /// NVML works and reports no GPU.
    NoGpus,
    /// A GPU has no memory reading in the newest frame (lost, failing, or gone).
    GpuLost { gpu: String, message: String },
    /// Fewer samples than the rules need (`min_samples`), e.g. just after start.
    TooFewSamples { have: u32, need: u32 },
    /// Enough frames, but the readings `node` needs are missing from them.
    NotRead { node: NodeId },
}

/// Stable verdict ids (used by `check --json`, the page and `/metrics`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Healthy,
    GpuMemoryPressure,
    InputBoundDisk,
    InputBoundCpu,
    CheckpointStall,
    GpuUnderutilized,
    DiskSpaceRisk,
    HostMemoryPressure,
    NoData,
}

impl Verdict {
    pub const ALL: [Verdict; 9] = [
        Verdict::Healthy,
        Verdict::GpuMemoryPressure,
        Verdict::InputBoundDisk,
        Verdict::InputBoundCpu,
        Verdict::CheckpointStall,
        Verdict::GpuUnderutilized,
        Verdict::DiskSpaceRisk,
        Verdict::HostMemoryPressure,
        Verdict::NoData,
    ];

    /// The id as it appears on the wire.
    pub fn id(self) -> &'static str {
        match self {
            Verdict::Healthy => "healthy",
            Verdict::GpuMemoryPressure => "gpu_memory_pressure",
            Verdict::InputBoundDisk => "input_bound_disk",
            Verdict::InputBoundCpu => "input_bound_cpu",
            Verdict::CheckpointStall => "checkpoint_stall",
            Verdict::GpuUnderutilized => "gpu_underutilized",
            Verdict::DiskSpaceRisk => "disk_space_risk",
            Verdict::HostMemoryPressure => "host_memory_pressure",
            Verdict::NoData => "no_data",
        }
    }

    /// Whether the verdict is one of the GPU-starved leaves.
    pub fn is_starvation(self) -> bool {
        matches!(
            self,
            Verdict::InputBoundDisk
                | Verdict::InputBoundCpu
                | Verdict::CheckpointStall
                | Verdict::GpuUnderutilized
        )
    }
}

/// Monitoring-plugin severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Ok,
    Warning,
    Critical,
    /// The data needed to decide is missing (no frames, a GPU lost, NVML failing).
    Unknown,
}

impl Severity {
    /// Nagios / monitoring-plugins exit status: 0 ok, 1 warning, 2 critical, 3 unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Severity::Ok => 0,
            Severity::Warning => 1,
            Severity::Critical => 2,
            Severity::Unknown => 3,
        }
    }

    /// Order used to combine and list findings: ok < unknown < warning < critical. A warning or
    /// critical finding says more than "could not tell", so it wins over unknown.
    pub fn rank(self) -> u8 {
        match self {
            Severity::Ok => 0,
            Severity::Unknown => 1,
            Severity::Warning => 2,
            Severity::Critical => 3,
        }
    }

    /// The id as it appears on the wire.
    pub fn id(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
            Severity::Unknown => "unknown",
        }
    }

    /// A diagnosis' severity: the worst of its findings, at least `unknown` for `no_data`.
    pub fn of(findings: &[Finding], verdict: Verdict) -> Severity {
        let worst = findings
            .iter()
            .fold(Severity::Ok, |s, f| s.worst(f.severity));
        if verdict == Verdict::NoData {
            worst.worst(Severity::Unknown)
        } else {
            worst
        }
    }

    /// The worse of the two (see [`Severity::rank`]).
    pub fn worst(self, other: Severity) -> Severity {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// A node of the decision tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeId {
    GpuMemory,
    GpuStarved,
    DiskIo,
    CpuBound,
    CheckpointStall,
    DiskSpace,
    HostMemory,
}

/// A node's answer. Missing data is `unknown`, never `no`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Yes,
    No,
    Unknown,
}

/// One visited node: its question, answer and the numbers behind the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathNode {
    pub node: NodeId,
    pub question: String,
    pub answer: Answer,
    pub evidence: Vec<Evidence>,
}

/// The rule behind a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleId {
    /// Used/total high for most of the window, or growing towards OOM.
    GpuMemoryPressure,
    /// Device memory used far above what its processes account for.
    GpuMemoryNotHeldByJob,
    /// A pid that no longer exists still holds GPU memory.
    GpuMemoryOrphan,
    /// A GPU lost or failing in the window, or NVML failing.
    GpuUnavailable,
    InputBoundDisk,
    InputBoundCpu,
    CheckpointStall,
    GpuUnderutilized,
    DiskSpaceRisk,
    /// `/dev/shm` too small or nearly full (DataLoader workers pass batches through it).
    DevShm,
    HostMemoryPressure,
    /// Healthy, with room to do more (severity ok).
    Headroom,
}

impl RuleId {
    pub const ALL: [RuleId; 12] = [
        RuleId::GpuMemoryPressure,
        RuleId::GpuMemoryNotHeldByJob,
        RuleId::GpuMemoryOrphan,
        RuleId::GpuUnavailable,
        RuleId::InputBoundDisk,
        RuleId::InputBoundCpu,
        RuleId::CheckpointStall,
        RuleId::GpuUnderutilized,
        RuleId::DiskSpaceRisk,
        RuleId::DevShm,
        RuleId::HostMemoryPressure,
        RuleId::Headroom,
    ];

    /// The id as it appears on the wire.
    pub fn id(self) -> &'static str {
        match self {
            RuleId::GpuMemoryPressure => "gpu_memory_pressure",
            RuleId::GpuMemoryNotHeldByJob => "gpu_memory_not_held_by_job",
            RuleId::GpuMemoryOrphan => "gpu_memory_orphan",
            RuleId::GpuUnavailable => "gpu_unavailable",
            RuleId::InputBoundDisk => "input_bound_disk",
            RuleId::InputBoundCpu => "input_bound_cpu",
            RuleId::CheckpointStall => "checkpoint_stall",
            RuleId::GpuUnderutilized => "gpu_underutilized",
            RuleId::DiskSpaceRisk => "disk_space_risk",
            RuleId::DevShm => "dev_shm",
            RuleId::HostMemoryPressure => "host_memory_pressure",
            RuleId::Headroom => "headroom",
        }
    }
}

/// What one rule found, with its evidence and what to change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    pub rule: RuleId,
    pub severity: Severity,
    /// 0..1: how sure the rule is (share of samples that held, or a fixed prior for forecasts).
    pub confidence: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// When this finding (same rule and subject) was first reported, ms since the epoch: carried
    /// over from the previous diagnosis while it persists, else the newest frame's time.
    pub since_ms: u64,
    pub evidence: Vec<Evidence>,
    pub suggestions: Vec<Suggestion>,
}

/// A forecast of when something fills up at the current (robust) rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Projection {
    pub subject: String,
    pub kind: ProjectionKind,
    /// Seconds from the newest frame until full.
    pub seconds: f64,
    /// Growth in bytes per second (Theil-Sen slope).
    pub slope_per_s: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProjectionKind {
    TimeToFullGpuMemory,
    TimeToFullDisk,
}
