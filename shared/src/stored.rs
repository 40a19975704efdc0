//! The stored history on the wire (docs/api.md#history): what `GET /api/history` and
//! `GET /api/history/moment` answer, read by the page and by a hub from its peers.

use crate::diagnosis::{Diagnosis, Finding, Severity, Verdict};
use crate::frame::Frame;
use crate::series::{Scope, Unit};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A stretch of one verdict and severity (findings as they were when it began).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Segment {
    pub from_ms: u64,
    /// When it was last seen to hold.
    pub to_ms: u64,
    pub verdict: Verdict,
    pub severity: Severity,
    #[serde(default)]
    pub findings: Vec<Finding>,
}

/// One series of an answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeriesPoints {
    pub scope: Scope,
    pub item: String,
    pub metric: String,
    pub unit: Unit,
    /// `[t_ms, min, mean, max]`, ascending.
    pub points: Vec<(u64, f64, f64, f64)>,
}

/// Which resolution a part of the range was read at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Piece {
    pub from_ms: u64,
    pub to_ms: u64,
    pub step_ms: u64,
}

/// What `GET /api/history` answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Answer {
    pub from_ms: u64,
    pub to_ms: u64,
    /// The width of one point.
    pub step_ms: u64,
    /// The resolution each part of the range was stored at (minute data where 1 s is no longer
    /// kept, hours where minutes are not).
    pub tiers: Vec<Piece>,
    pub series: Vec<SeriesPoints>,
    pub segments: Vec<Segment>,
    pub events: Vec<serde_json::Value>,
    /// What the page should say about the history itself: writing paused by a full disk, a
    /// damaged file set aside at start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// The page at a stored moment (a rewind).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Moment {
    /// The moment shown (the stored point at or just before the one asked for).
    pub t_ms: u64,
    /// The width of a stored point there: 1000 (1 s) or 60000 (minute data).
    pub step_ms: u64,
    pub frame: Frame,
    pub diagnosis: Diagnosis,
}
