//! A replay's state: its frames, how it is told to go (play, pause, speed, jump to a moment),
//! where it is, and its verdict timeline; [`playing`] is the thread that plays it into a hub.
//!
//! The diagnosis at any moment is worked out here, in the backend, with the same `shared` code and
//! the same [`Diagnoser`](crate::host_feed::diagnoser::Diagnoser) a live host uses: the page only
//! renders, as it does live, and a read-only viewer sees the moment the admin chose without
//! holding the recording.

mod playing;
#[cfg(test)]
mod tests;

pub use playing::{Playing, spawn};

use shared::Frame;
use shared::replay::{ReplayInfo, Timeline};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How fast a replay runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speed {
    /// This many times real time.
    Times(f64),
    /// As fast as it goes.
    Max,
}

/// Slowest replay: a hundredth of real time (a minute between frames at 1 Hz). Slower speeds are
/// of no use, and tiny ones overflow the wait between two frames.
pub const MIN_SPEED: f64 = 0.01;
/// Fastest paced replay (`max` plays with no pacing at all).
pub const MAX_SPEED: f64 = 100_000.0;

impl Speed {
    /// `1`, `10x`, `60`, `max`.
    pub fn parse(s: &str) -> Result<Speed, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("max") {
            return Ok(Speed::Max);
        }
        let n: f64 = t
            .trim_end_matches(['x', 'X'])
            .parse()
            .map_err(|_| format!("`{s}` is not a speed like 1, 10x, 60 or max"))?;
        if !(n.is_finite() && (MIN_SPEED..=MAX_SPEED).contains(&n)) {
            return Err(format!(
                "`{s}`: the speed must be at least {MIN_SPEED} and at most {MAX_SPEED}"
            ));
        }
        Ok(Speed::Times(n))
    }
}

impl std::fmt::Display for Speed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Speed::Times(x) => write!(f, "{x}x"),
            Speed::Max => f.write_str("full speed"),
        }
    }
}

/// Frames between two diagnoses the timeline keeps for jumps: a jump diagnoses at most this many
/// frames to reach its moment (a day at 1 Hz keeps 1,440).
const CHECKPOINT_EVERY: usize = 60;

/// How the player is told to go.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Control {
    playing: bool,
    speed: Speed,
    /// A jump asked for and not made yet: the moment (`t_ms`).
    seek: Option<u64>,
    /// Jumps asked for, and made, so far (a caller waits until its own is made).
    seeks_asked: u64,
    seeks_done: u64,
}

/// A replay: its frames, how it plays, where it is, and its verdict timeline once worked out.
#[derive(Debug)]
pub struct Replay {
    /// In time order.
    pub frames: Vec<Frame>,
    control: Mutex<Control>,
    /// Notified when `control` changes (the player re-paces or jumps at once) and when a jump
    /// is made (its caller stops waiting).
    changed: Condvar,
    /// `t_ms` of the frame played last, 0 before the first.
    position: AtomicU64,
    timeline: OnceLock<Worked>,
}

/// The verdict timeline, with what it was worked out with.
#[derive(Debug)]
struct Worked {
    timeline: Timeline,
    thresholds: shared::diagnosis::Thresholds,
    window_ms: u64,
}

impl Replay {
    /// A replay of `frames` (sorted here by time, stably), playing at `speed`.
    pub fn new(mut frames: Vec<Frame>, speed: Speed) -> Arc<Replay> {
        frames.sort_by_key(|f| f.t_ms);
        Arc::new(Replay {
            frames,
            control: Mutex::new(Control {
                playing: true,
                speed,
                seek: None,
                seeks_asked: 0,
                seeks_done: 0,
            }),
            changed: Condvar::new(),
            position: AtomicU64::new(0),
            timeline: OnceLock::new(),
        })
    }

    fn control(&self) -> std::sync::MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pauses or plays, and sets the speed; what is not given stays.
    pub fn steer(&self, playing: Option<bool>, speed: Option<Speed>) {
        let mut c = self.control();
        if let Some(p) = playing {
            c.playing = p;
        }
        if let Some(s) = speed {
            c.speed = s;
        }
        self.changed.notify_all();
    }

    /// Asks the player to jump to the frame at or just before `t_ms` (the first frame if it is
    /// earlier), playing on from there if it plays; returns the jump's number for
    /// [`Replay::wait_for_seek`]. A newer jump asked before the player got to this one replaces it.
    pub fn seek(&self, t_ms: u64) -> u64 {
        let mut c = self.control();
        c.seek = Some(t_ms);
        c.seeks_asked = c.seeks_asked.wrapping_add(1);
        self.changed.notify_all();
        c.seeks_asked
    }

    /// Waits until jump number `n` (or a later one) is made and the hub holds its moment, for at
    /// most `limit`; false if it was not made in time.
    pub fn wait_for_seek(&self, n: u64, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut c = self.control();
        while c.seeks_done < n {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            c = self
                .changed
                .wait_timeout(c, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Works out the verdict timeline (seconds for a day at 1 Hz) on a thread of its own.
    pub fn spawn_timeline(
        self: &Arc<Self>,
        thresholds: shared::diagnosis::Thresholds,
        window: Duration,
    ) -> std::io::Result<()> {
        let me = self.clone();
        std::thread::Builder::new()
            .name("vramio-timeline".into())
            .spawn(move || {
                let ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
                let started = Instant::now();
                let timeline = Timeline::build(&me.frames, &thresholds, ms, CHECKPOINT_EVERY);
                tracing::info!(
                    segments = timeline.segments.len(),
                    frames = me.frames.len(),
                    secs = started.elapsed().as_secs_f64(),
                    "verdict timeline ready"
                );
                let _ = me.timeline.set(Worked {
                    timeline,
                    thresholds,
                    window_ms: ms,
                });
            })
            .map(|_| ())
    }

    /// The diagnosis at frame `i` as playing through gives it, once the timeline is worked out
    /// with a window of `window_ms`.
    fn diagnosis_at(&self, i: usize, window_ms: u64) -> Option<shared::diagnosis::Diagnosis> {
        let w = self.timeline.get().filter(|w| w.window_ms == window_ms)?;
        w.timeline
            .diagnosis_at(&self.frames, i, &w.thresholds, w.window_ms)
    }

    /// What `GET /api/replay` answers.
    pub fn info(&self) -> ReplayInfo {
        let control = *self.control();
        ReplayInfo {
            start_ms: self.frames.first().map_or(0, |f| f.t_ms),
            end_ms: self.frames.last().map_or(0, |f| f.t_ms),
            position_ms: Some(self.position.load(Ordering::Relaxed)).filter(|t| *t > 0),
            speed: match control.speed {
                Speed::Times(x) => Some(x),
                Speed::Max => None,
            },
            playing: control.playing,
            frames: self.frames.len(),
            timeline: self.timeline.get().map(|w| w.timeline.segments.clone()),
        }
    }
}
