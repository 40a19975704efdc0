//! History points rolled up through the tiers (docs/history.md): each point holds the min, mean
//! and max of the samples it covers, so a one-second spike is still the max of its minute and of
//! its hour; a cumulative counter becomes per-second rates first, across a counter reset. A
//! sample not measured counts for nothing, and a period with none measured has no point.

use serde::{Deserialize, Serialize};

/// One history point: the samples it covers, by their min, mean and max, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    /// Samples measured in its period (at most one a second).
    pub samples: u32,
}

/// A period's point being built.
#[derive(Clone, Copy, Debug, Default)]
pub struct Roll {
    min: f64,
    sum: f64,
    max: f64,
    samples: u32,
}

impl Roll {
    /// Adds one sample; `None` (not measured) and NaN count for nothing.
    pub fn add(&mut self, value: Option<f64>) {
        if let Some(v) = value.filter(|v| v.is_finite()) {
            self.add_point(&Point {
                min: v,
                mean: v,
                max: v,
                samples: 1,
            });
        }
    }

    /// Adds a finer tier's point, weighted by the samples it covers.
    pub fn add_point(&mut self, p: &Point) {
        if p.samples == 0 {
            return;
        }
        if self.samples == 0 {
            self.min = p.min;
            self.max = p.max;
        } else {
            self.min = self.min.min(p.min);
            self.max = self.max.max(p.max);
        }
        self.sum += p.mean * f64::from(p.samples);
        self.samples = self.samples.saturating_add(p.samples);
    }

    /// The point, `None` when nothing was measured.
    pub fn point(&self) -> Option<Point> {
        (self.samples > 0).then(|| Point {
            min: self.min,
            // Clamped: the weighted sum of rounded means may stray past the bounds by an ulp.
            mean: (self.sum / f64::from(self.samples)).clamp(self.min, self.max),
            max: self.max,
            samples: self.samples,
        })
    }
}

/// Periods of `step` seconds, closed as time passes them: a sample at or after the end of the
/// open period closes it (a period skipped has no point), and one older than it is ignored.
#[derive(Clone, Debug)]
pub struct Periods {
    step: u64,
    /// The open period's start and what it holds so far.
    open: Option<(u64, Roll)>,
}

impl Periods {
    pub fn new(step_secs: u64) -> Self {
        Periods {
            step: step_secs.max(1),
            open: None,
        }
    }

    /// Adds a point covering second `t`; returns the period it closed, by its start, with its
    /// point when anything in it was measured.
    pub fn add(&mut self, t: u64, point: Option<&Point>) -> Option<(u64, Option<Point>)> {
        let start = t - t % self.step;
        let mut closed = None;
        match &mut self.open {
            Some((open, _)) if start < *open => return None,
            Some((open, roll)) if start == *open => {
                if let Some(p) = point {
                    roll.add_point(p);
                }
                return None;
            }
            Some((open, roll)) => closed = Some((*open, roll.point())),
            None => {}
        }
        let mut roll = Roll::default();
        if let Some(p) = point {
            roll.add_point(p);
        }
        self.open = Some((start, roll));
        closed
    }
}

/// The three tiers of one series: each 1 s sample, its minute's point and its hour's point as
/// they close.
#[derive(Clone, Debug)]
pub struct Tiers {
    minutes: Periods,
    hours: Periods,
}

/// What one second gave each tier: the sample itself, and a minute and an hour closed by it
/// (by their start, in seconds), each `None` inside when nothing in it was measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Closed {
    pub second: Option<Point>,
    pub minute: Option<(u64, Option<Point>)>,
    pub hour: Option<(u64, Option<Point>)>,
}

impl Default for Tiers {
    fn default() -> Self {
        Tiers {
            minutes: Periods::new(60),
            hours: Periods::new(3600),
        }
    }
}

impl Tiers {
    /// Adds the sample of second `t` (`None`: not measured). The hour is built from the minutes'
    /// points, so its min and max are those of every second in it.
    pub fn add(&mut self, t: u64, value: Option<f64>) -> Closed {
        let mut roll = Roll::default();
        roll.add(value);
        let second = roll.point();
        let minute = self.minutes.add(t, second.as_ref());
        let hour = minute
            .as_ref()
            .and_then(|(start, point)| self.hours.add(*start, point.as_ref()));
        Closed {
            second,
            minute,
            hour,
        }
    }
}

/// A cumulative counter (bytes read since boot, say) as per-second rates between its samples.
/// A counter that went down was reset (a reboot, a device re-added): it counted from 0 since, so
/// its value is the increase over that interval.
#[derive(Clone, Copy, Debug, Default)]
pub struct CounterRate {
    last: Option<(u64, u64)>,
}

impl CounterRate {
    /// The rate since the previous sample, per second; `None` at the first sample, for a sample
    /// not after the previous one, and for a counter not read (which also forgets the last).
    pub fn add(&mut self, t_ms: u64, value: Option<u64>) -> Option<f64> {
        let Some(value) = value else {
            self.last = None;
            return None;
        };
        let prev = self.last.replace((t_ms, value));
        let (then, before) = prev?;
        if t_ms <= then {
            self.last = prev;
            return None;
        }
        let increase = if value >= before {
            value - before
        } else {
            value
        };
        Some(increase as f64 / ((t_ms - then) as f64 / 1000.0))
    }
}

#[cfg(test)]
#[path = "rollup_tests.rs"]
mod tests;
