//! The player's thread: publishes a replay's frames into a hub as a live host would, in time
//! order, paced by their own timestamps divided by the speed, each diagnosed as it arrives; holds
//! on pause and at the end; and on a jump replaces the hub's history with the 15 minutes up to
//! the chosen moment and its diagnosis with the one over the window ending there.

use super::{Replay, Speed};
use crate::collect::ticker::Stop;
use crate::host_feed::diagnoser::Diagnoser;
use crate::host_feed::{HISTORY_SPAN, HostFeed};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

/// The player's thread.
pub struct Playing {
    stop: Arc<Stop>,
    thread: std::thread::JoinHandle<()>,
}

impl Playing {
    pub fn stop_and_join(self) {
        self.stop.stop();
        let _ = self.thread.join();
    }
}

/// What the player does next.
enum Step {
    /// Publish the next frame.
    Due,
    /// Jump to this moment (jump number `n`; 0 for Play at the end, which starts over).
    Seek {
        t_ms: u64,
        n: u64,
    },
    Stopped,
}

/// Starts playing the replay's frames (in time order) into `hub`.
pub fn spawn(
    replay: Arc<Replay>,
    hub: HostFeed,
    mut diagnoser: Diagnoser,
) -> std::io::Result<Playing> {
    let stop = Stop::new();
    let stopper = stop.clone();
    let thread = std::thread::Builder::new()
        .name("vramio-player".into())
        .spawn(move || play(&replay, &hub, &mut diagnoser, &stopper))?;
    Ok(Playing { stop, thread })
}

fn play(replay: &Replay, hub: &HostFeed, diagnoser: &mut Diagnoser, stop: &Stop) {
    let frames = &replay.frames;
    if frames.is_empty() {
        return;
    }
    // The first frame at once, paused or not, so the page has something to show.
    diagnoser.publish_to(hub, frames[0].clone());
    replay.position.store(frames[0].t_ms, Ordering::Relaxed);
    // Index of the frame to publish next.
    let mut next = 1;
    let mut published = Instant::now();
    let at_end = |next: usize| {
        if next == frames.len() {
            tracing::info!("the replay is at its end; Play starts it over");
            replay.steer(Some(false), None);
        }
    };
    at_end(next);
    loop {
        let gap = frames
            .get(next)
            .map(|f| f.t_ms.saturating_sub(frames[next - 1].t_ms));
        match next_step(replay, hub, published, gap, stop) {
            Step::Stopped => return,
            Step::Due => {
                diagnoser.publish_to(hub, frames[next].clone());
                replay.position.store(frames[next].t_ms, Ordering::Relaxed);
                next += 1;
                published = Instant::now();
                at_end(next);
            }
            Step::Seek { t_ms, n } => {
                let started = Instant::now();
                next = jump(replay, hub, diagnoser, t_ms) + 1;
                published = Instant::now();
                tracing::debug!(t_ms, ms = started.elapsed().as_secs_f64() * 1e3, "jumped");
                at_end(next);
                let mut c = replay.control();
                c.seeks_done = c.seeks_done.max(n);
                replay.changed.notify_all();
            }
        }
    }
}

/// Waits until the frame `gap_ms` after the one published at `since` is due (paused time does not
/// count; `gap_ms` is `None` at the end, where only a jump or Play moves on), a jump is asked
/// for, or `stop`. Tells the hub it is held while paused or at the end, so the page does not
/// call the host stale.
fn next_step(
    replay: &Replay,
    hub: &HostFeed,
    since: Instant,
    gap_ms: Option<u64>,
    stop: &Stop,
) -> Step {
    let mut c = replay.control();
    let mut paused_for = Duration::ZERO;
    let mut held = None;
    loop {
        if stop.is_stopped() {
            return Step::Stopped;
        }
        if let Some(t_ms) = c.seek.take() {
            hub.hold(!c.playing);
            return Step::Seek {
                t_ms,
                n: c.seeks_asked,
            };
        }
        let Some(gap_ms) = gap_ms.filter(|_| c.playing) else {
            if c.playing {
                // Play at the end: from the start.
                hub.hold(false);
                return Step::Seek {
                    t_ms: 0,
                    n: c.seeks_done,
                };
            }
            if held != Some(true) {
                hub.hold(true);
                held = Some(true);
            }
            let at = Instant::now();
            c = replay
                .changed
                .wait_timeout(c, Duration::from_millis(200))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            paused_for += at.elapsed();
            continue;
        };
        if held != Some(false) {
            hub.hold(false);
            held = Some(false);
        }
        let due = since + paused_for + c.speed.wait(gap_ms);
        let now = Instant::now();
        if now >= due {
            return Step::Due;
        }
        c = replay
            .changed
            .wait_timeout(c, (due - now).min(Duration::from_millis(200)))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Makes the frame at or just before `t_ms` the hub's newest: its history becomes the
/// [`HISTORY_SPAN`] up to it, and its diagnosis the one over the diagnoser's window ending there,
/// with the hysteresis playing through would have carried (from the verdict timeline's
/// checkpoints; until that is worked out, the window before warms it). Returns that frame's
/// index.
fn jump(replay: &Replay, hub: &HostFeed, diagnoser: &mut Diagnoser, t_ms: u64) -> usize {
    let frames = &replay.frames;
    let at = frames.partition_point(|f| f.t_ms <= t_ms).saturating_sub(1);
    let until = frames[at].t_ms;
    let before = |span_ms: u64| frames[..=at].partition_point(|f| until - f.t_ms > span_ms);
    let span_ms = u64::try_from(HISTORY_SPAN.as_millis()).unwrap_or(u64::MAX);
    let from = before(span_ms).max((at + 1).saturating_sub(hub.history_capacity()));
    let window_ms = diagnoser.span_ms();
    let diagnosis = match replay.diagnosis_at(at, window_ms) {
        Some(d) => Some(diagnoser.resume(&frames[before(window_ms)..=at], d)),
        None => diagnoser.restart(&frames[before(window_ms.saturating_mul(2))..=at]),
    };
    let mut history = frames[from..=at].to_vec();
    if let Err(e) = hub.replace_history(&mut history, diagnosis) {
        tracing::error!(error = %e, "cannot encode the frames of a jump");
    }
    replay.position.store(until, Ordering::Relaxed);
    at
}

impl Speed {
    /// Real time between two frames `gap_ms` apart in the recording. A gap in the log longer
    /// than a minute of replay is shortened to a second, so a night without samples does not
    /// look like a hang.
    pub(super) fn wait(self, gap_ms: u64) -> Duration {
        match self {
            Speed::Max => Duration::ZERO,
            Speed::Times(x) => {
                // `try_`: a speed made other than by `parse` must not panic the player either.
                match Duration::try_from_secs_f64(gap_ms as f64 / 1000.0 / x) {
                    Ok(d) if d <= Duration::from_secs(60) => d,
                    _ => Duration::from_secs(1),
                }
            }
        }
    }
}
