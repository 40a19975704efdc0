//! What `GET /api/replay` says about a replay: the recording's span, where the player is, its
//! speed, and the verdict timeline (where the verdict changed), for the page's time bar.

use crate::diagnosis::{Severity, Thresholds, Verdict, diagnose};
use crate::frame::Frame;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /api/replay` (admin): pause or play, and the speed (`1`, `10x`, `60`, `max`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayControl {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub playing: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<String>,
}

/// One stretch of the recording with one verdict.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Segment {
    /// `t_ms` of its first frame.
    pub from_ms: u64,
    /// `t_ms` of its last frame.
    pub to_ms: u64,
    pub verdict: Verdict,
    pub severity: Severity,
}

/// A replay as the page sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayInfo {
    /// `t_ms` of the first and the last frame.
    pub start_ms: u64,
    pub end_ms: u64,
    /// `t_ms` of the frame played last; absent before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_ms: Option<u64>,
    /// Times real time; absent for "as fast as it goes".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Whether it plays (false: paused).
    pub playing: bool,
    pub frames: usize,
    /// The verdict over the recording, in order; absent while it is still being worked out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<Segment>>,
}

/// The verdict at every frame, diagnosed over the `window_ms` ending there with the live
/// diagnosis' own code and hysteresis (each frame's diagnosis sees the one before), folded into
/// segments of one verdict.
pub fn verdict_timeline(frames: &[Frame], thresholds: &Thresholds, window_ms: u64) -> Vec<Segment> {
    let mut segments: Vec<Segment> = Vec::new();
    let mut prev = None;
    let mut lo = 0;
    for (i, f) in frames.iter().enumerate() {
        while lo < i && f.t_ms.saturating_sub(frames[lo].t_ms) > window_ms {
            lo += 1;
        }
        let d = diagnose(&frames[lo..=i], thresholds, prev.as_ref());
        match segments.last_mut() {
            Some(s) if s.verdict == d.verdict && s.severity == d.severity => s.to_ms = f.t_ms,
            _ => segments.push(Segment {
                from_ms: f.t_ms,
                to_ms: f.t_ms,
                verdict: d.verdict,
                severity: d.severity,
            }),
        }
        prev = Some(d);
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::testutil::{gpu, window};

    #[test]
    fn a_verdict_that_changes_halfway_gives_two_segments_or_more() {
        // 60 s healthy-ish at 40% memory, then 60 s at 97%.
        let frames = window(120, |i, f| {
            let pct = if i < 60 { 40.0 } else { 97.0 };
            f.gpus = vec![gpu(0, 80, pct, 90.0)];
        });
        let t = verdict_timeline(&frames, &Thresholds::default(), 60_000);
        assert!(t.len() >= 2, "{t:?}");
        assert_eq!(t.first().map(|s| s.from_ms), frames.first().map(|f| f.t_ms));
        assert_eq!(t.last().map(|s| s.to_ms), frames.last().map(|f| f.t_ms));
        assert_eq!(
            t.last().map(|s| s.verdict),
            Some(Verdict::GpuMemoryPressure)
        );
        assert!(
            t.iter()
                .all(|s| s.verdict != Verdict::GpuMemoryPressure || s.from_ms > frames[59].t_ms)
        );
        assert!(t.windows(2).all(|w| w[0].to_ms < w[1].from_ms));
        assert!(verdict_timeline(&[], &Thresholds::default(), 60_000).is_empty());
    }
}
