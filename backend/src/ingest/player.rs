//! Plays recorded or imported frames into a hub as a live host would send them: in time order,
//! paced by their own timestamps divided by the speed, each one diagnosed as it arrives, with the
//! same diagnoser the sampler feeds.

use crate::collect::ticker::Stop;
use crate::hub::Hub;
use crate::hub::diagnoser::Diagnoser;
use shared::Frame;
use shared::replay::{ReplayInfo, Segment};
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
        if !(n.is_finite() && n > 0.0 && n <= 100_000.0) {
            return Err(format!(
                "`{s}`: the speed must be above 0 and at most 100000"
            ));
        }
        Ok(Speed::Times(n))
    }

    /// Real time between two frames `gap_ms` apart in the recording. A gap in the log longer
    /// than a minute of replay is shortened to a second, so a night without samples does not
    /// look like a hang.
    fn wait(self, gap_ms: u64) -> Duration {
        match self {
            Speed::Max => Duration::ZERO,
            Speed::Times(x) => {
                let d = Duration::from_secs_f64(gap_ms as f64 / 1000.0 / x);
                if d > Duration::from_secs(60) {
                    Duration::from_secs(1)
                } else {
                    d
                }
            }
        }
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

/// How the player is told to go.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Control {
    playing: bool,
    speed: Speed,
}

/// A replay: its frames, how it plays, where it is, and its verdict timeline once worked out.
#[derive(Debug)]
pub struct Replay {
    pub frames: Vec<Frame>,
    control: Mutex<Control>,
    /// Notified when `control` changes, so a waiting player re-paces at once.
    changed: Condvar,
    /// `t_ms` of the frame played last, 0 before the first.
    position: AtomicU64,
    timeline: OnceLock<Vec<Segment>>,
}

impl Replay {
    pub fn new(frames: Vec<Frame>, speed: Speed) -> Arc<Replay> {
        Arc::new(Replay {
            frames,
            control: Mutex::new(Control {
                playing: true,
                speed,
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

    /// Waits until the frame `gap_ms` after the one published at `since` is due (paused time
    /// does not count), or until `stop`; returns false when stopped.
    fn wait_for_next(&self, since: Instant, gap_ms: u64, stop: &Stop) -> bool {
        let mut c = self.control();
        let mut paused_for = Duration::ZERO;
        loop {
            if stop.is_stopped() {
                return false;
            }
            if !c.playing {
                let at = Instant::now();
                let (guard, _) = self
                    .changed
                    .wait_timeout(c, Duration::from_millis(200))
                    .unwrap_or_else(PoisonError::into_inner);
                c = guard;
                paused_for += at.elapsed();
                continue;
            }
            let due = since + paused_for + c.speed.wait(gap_ms);
            let now = Instant::now();
            if now >= due {
                return true;
            }
            let (guard, _) = self
                .changed
                .wait_timeout(c, (due - now).min(Duration::from_millis(200)))
                .unwrap_or_else(PoisonError::into_inner);
            c = guard;
        }
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
                let t = shared::replay::verdict_timeline(&me.frames, &thresholds, ms);
                tracing::info!(
                    segments = t.len(),
                    frames = me.frames.len(),
                    secs = started.elapsed().as_secs_f64(),
                    "verdict timeline ready"
                );
                let _ = me.timeline.set(t);
            })
            .map(|_| ())
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
            timeline: self.timeline.get().cloned(),
        }
    }
}

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

/// Starts playing the replay's frames (in time order) into `hub`.
pub fn spawn(replay: Arc<Replay>, hub: Hub, mut diagnoser: Diagnoser) -> std::io::Result<Playing> {
    let stop = Stop::new();
    let stopper = stop.clone();
    let thread = std::thread::Builder::new()
        .name("vramio-player".into())
        .spawn(move || {
            let mut published = Instant::now();
            let mut prev_t: Option<u64> = None;
            for frame in &replay.frames {
                if let Some(prev) = prev_t
                    && !replay.wait_for_next(published, frame.t_ms.saturating_sub(prev), &stopper)
                {
                    return;
                }
                if stopper.is_stopped() {
                    return;
                }
                prev_t = Some(frame.t_ms);
                published = Instant::now();
                diagnoser.publish_to(&hub, frame.clone());
                replay.position.store(frame.t_ms, Ordering::Relaxed);
            }
            tracing::info!("the replay reached its end");
        })?;
    Ok(Playing { stop, thread })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_parse_and_pace() {
        assert_eq!(Speed::parse("10x"), Ok(Speed::Times(10.0)));
        assert_eq!(Speed::parse("60"), Ok(Speed::Times(60.0)));
        assert_eq!(Speed::parse("MAX"), Ok(Speed::Max));
        for bad in ["0", "-1", "fast", "inf", "NaN", "1e9"] {
            assert!(Speed::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Speed::Times(10.0).wait(1000), Duration::from_millis(100));
        assert_eq!(Speed::Max.wait(1000), Duration::ZERO);
        assert_eq!(Speed::Times(1.0).wait(3_600_000), Duration::from_secs(1));
    }

    #[test]
    fn frames_reach_the_hub_in_order_with_a_diagnosis() {
        let hub = Hub::new(
            "h",
            Duration::from_secs(1),
            crate::hub::HubConfig::for_interval(Duration::from_secs(1)),
        );
        let frames: Vec<Frame> = (0..5)
            .map(|i| Frame::empty("h", 0, 1_700_000_000_000 + i * 1000, 1000))
            .collect();
        let diagnoser = Diagnoser::new(Default::default(), Duration::from_secs(60));
        let replay = Replay::new(frames, Speed::Times(100.0));
        let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
        let deadline = Instant::now() + Duration::from_secs(5);
        while hub.history_len() < 5 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        p.stop_and_join();
        let t: Vec<u64> = hub.history_after(None).iter().map(|e| e.t_ms).collect();
        assert_eq!(t.len(), 5);
        assert!(t.windows(2).all(|w| w[1] - w[0] == 1000));
        assert!(hub.latest_diagnosis().is_some());
        let info = replay.info();
        assert_eq!(info.position_ms, Some(1_700_000_004_000));
        assert_eq!(
            (info.start_ms, info.end_ms, info.frames),
            (1_700_000_000_000, 1_700_000_004_000, 5)
        );
        assert_eq!(info.speed, Some(100.0));
        assert!(info.playing);
    }

    #[test]
    fn a_paused_replay_waits_and_a_faster_one_catches_up() {
        let hub = Hub::new(
            "h",
            Duration::from_secs(1),
            crate::hub::HubConfig::for_interval(Duration::from_secs(1)),
        );
        let frames: Vec<Frame> = (0..50)
            .map(|i| Frame::empty("h", 0, 1_700_000_000_000 + i * 1000, 1000))
            .collect();
        let replay = Replay::new(frames, Speed::Times(1.0));
        replay.steer(Some(false), None);
        let diagnoser = Diagnoser::new(Default::default(), Duration::from_secs(60));
        let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
        std::thread::sleep(Duration::from_millis(600));
        // The first frame is out; paused, no second one follows.
        assert_eq!(hub.history_len(), 1);
        assert!(!replay.info().playing);
        replay.steer(Some(true), Some(Speed::Max));
        let deadline = Instant::now() + Duration::from_secs(5);
        while hub.history_len() < 50 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(hub.history_len(), 50);
        assert_eq!(replay.info().speed, None);
        p.stop_and_join();
    }
}
