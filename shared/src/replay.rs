//! What `GET /api/replay` says about a replay: the recording's span, where the player is, its
//! speed, and the verdict timeline (where the verdict changed), for the page's time bar.

use crate::diagnosis::{Diagnosis, Severity, Thresholds, Verdict, diagnose};
use crate::frame::Frame;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /api/replay` (admin): pause or play, the speed (`1`, `10x`, `60`, `max`), and a jump to a
/// moment. What is absent stays as it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayControl {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub playing: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<String>,
    /// Jump to the frame at or just before this `t_ms` (the first frame if earlier): the page
    /// then shows that moment, and the replay plays on from there if it plays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_ms: Option<u64>,
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

/// The verdict over a recording, and what a jump into it needs to diagnose any moment as playing
/// through would have: every `every` frames, the diagnosis there (the hysteresis carried so far).
#[derive(Clone, Debug)]
pub struct Timeline {
    pub segments: Vec<Segment>,
    /// `(frame index, its diagnosis)`, in order.
    checkpoints: Vec<(usize, Diagnosis)>,
}

/// Index of the first of `frames[..=i]` within `window_ms` of frame `i`.
fn window_start(frames: &[Frame], i: usize, window_ms: u64) -> usize {
    let newest = frames[i].t_ms;
    frames[..=i].partition_point(|f| newest.saturating_sub(f.t_ms) > window_ms)
}

impl Timeline {
    /// Diagnoses every frame over the `window_ms` ending there with the live diagnosis' own code
    /// and hysteresis (each frame's diagnosis sees the one before), folds the verdicts into
    /// segments, and keeps the diagnosis of every `every`-th frame.
    pub fn build(frames: &[Frame], thresholds: &Thresholds, window_ms: u64, every: usize) -> Self {
        let every = every.max(1);
        let mut segments: Vec<Segment> = Vec::new();
        let mut checkpoints = Vec::new();
        let mut prev: Option<Diagnosis> = None;
        for (i, f) in frames.iter().enumerate() {
            let lo = window_start(frames, i, window_ms);
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
            if i % every == 0 {
                checkpoints.push((i, d.clone()));
            }
            prev = Some(d);
        }
        Timeline {
            segments,
            checkpoints,
        }
    }

    /// The diagnosis at frame `i` exactly as playing `frames` through gives it: from the nearest
    /// checkpoint at or before `i`, on to `i`. `None` past the frames. `frames`, `thresholds` and
    /// `window_ms` must be the ones it was built with.
    pub fn diagnosis_at(
        &self,
        frames: &[Frame],
        i: usize,
        thresholds: &Thresholds,
        window_ms: u64,
    ) -> Option<Diagnosis> {
        frames.get(i)?;
        let at = self.checkpoints.partition_point(|(c, _)| *c <= i);
        let (from, mut prev) = match at.checked_sub(1).map(|k| &self.checkpoints[k]) {
            Some((c, d)) => (c + 1, d.clone()),
            None => {
                let d = diagnose(&frames[..=0], thresholds, None);
                (1, d)
            }
        };
        for j in from..=i {
            let lo = window_start(frames, j, window_ms);
            prev = diagnose(&frames[lo..=j], thresholds, Some(&prev));
        }
        Some(prev)
    }
}

/// The verdict at every frame, folded into segments of one verdict (see [`Timeline::build`]).
pub fn verdict_timeline(frames: &[Frame], thresholds: &Thresholds, window_ms: u64) -> Vec<Segment> {
    Timeline::build(frames, thresholds, window_ms, usize::MAX).segments
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

    #[test]
    fn a_moment_diagnosed_from_a_checkpoint_is_the_moment_played_through() {
        // Pressure that comes, holds, and goes: hysteresis (held since, entered at) matters.
        let frames = window(400, |i, f| {
            let pct = match i {
                0..100 => 40.0,
                100..250 => 97.0,
                250..300 => 88.0,
                _ => 40.0,
            };
            f.gpus = vec![gpu(0, 80, pct, 90.0)];
        });
        let th = Thresholds::default();
        let mut straight = Vec::new();
        let mut prev = None;
        for i in 0..frames.len() {
            let lo = window_start(&frames, i, 60_000);
            let d = diagnose(&frames[lo..=i], &th, prev.as_ref());
            straight.push(d.clone());
            prev = Some(d);
        }
        let t = Timeline::build(&frames, &th, 60_000, 60);
        for i in [0, 1, 59, 60, 61, 130, 260, 299, 399] {
            assert_eq!(
                t.diagnosis_at(&frames, i, &th, 60_000).as_ref(),
                Some(&straight[i]),
                "frame {i}"
            );
        }
        assert!(t.diagnosis_at(&frames, 400, &th, 60_000).is_none());
        // Still held at 88% (entered at 97%), so the checkpoint carried the hysteresis.
        assert_eq!(straight[260].verdict, Verdict::GpuMemoryPressure);
        assert_eq!(t.segments, verdict_timeline(&frames, &th, 60_000));
    }
}
