//! Plays recorded or imported frames into a hub as a live host would send them: in time order,
//! paced by their own timestamps divided by the speed, each one diagnosed as it arrives, with the
//! same diagnoser the sampler feeds.

use crate::collect::ticker::Stop;
use crate::hub::Hub;
use crate::hub::diagnoser::Diagnoser;
use shared::Frame;
use std::sync::Arc;
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

/// Starts playing `frames` (in time order) into `hub`.
pub fn spawn(
    frames: Vec<Frame>,
    speed: Speed,
    hub: Hub,
    mut diagnoser: Diagnoser,
) -> std::io::Result<Playing> {
    let stop = Stop::new();
    let stopper = stop.clone();
    let thread = std::thread::Builder::new()
        .name("vramio-player".into())
        .spawn(move || {
            let start = Instant::now();
            let mut at = Duration::ZERO;
            let mut prev_t: Option<u64> = None;
            for frame in frames {
                if let Some(prev) = prev_t {
                    at += speed.wait(frame.t_ms.saturating_sub(prev));
                }
                prev_t = Some(frame.t_ms);
                if !at.is_zero() && stopper.sleep_until(start + at) {
                    return;
                }
                if stopper.is_stopped() {
                    return;
                }
                diagnoser.publish_to(&hub, frame);
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
        let p = spawn(frames, Speed::Times(100.0), hub.clone(), diagnoser).expect("thread");
        let deadline = Instant::now() + Duration::from_secs(5);
        while hub.history_len() < 5 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        p.stop_and_join();
        let t: Vec<u64> = hub.history_after(None).iter().map(|e| e.t_ms).collect();
        assert_eq!(t.len(), 5);
        assert!(t.windows(2).all(|w| w[1] - w[0] == 1000));
        assert!(hub.latest_diagnosis().is_some());
    }
}
