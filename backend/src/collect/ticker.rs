//! The one ticker that paces every command that samples (`serve`, `check`, `record`), and the
//! [`Stop`] that ends it.
//!
//! Ticks sit on a fixed grid (`start + k * interval`). A tick that overran its slot makes the
//! ticker skip the slots it missed, so the next tick comes at the next grid slot still ahead,
//! never back to back (tokio's `MissedTickBehavior::Skip`, on a plain thread). Waiting uses a
//! condvar, so a stop wakes it at once.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Tells a sampling loop to stop, waking it at once (no polling while it waits).
#[derive(Default)]
pub struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    pub fn new() -> Arc<Self> {
        Arc::new(Stop::default())
    }

    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
    }

    pub fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sleeps until `at` or until stopped; returns whether it was stopped.
    pub fn sleep_until(&self, at: Instant) -> bool {
        let mut stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *stopped {
                return true;
            }
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            stopped = self
                .wake
                .wait_timeout(stopped, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// Fixed-grid ticks with missed slots skipped.
pub struct Ticker {
    interval: Duration,
    start: Instant,
    /// Grid index of the next tick; `None` before the first.
    next: Option<u64>,
    stop: Arc<Stop>,
}

impl Ticker {
    /// A ticker whose first tick is now.
    pub fn new(interval: Duration, stop: Arc<Stop>) -> Self {
        Ticker {
            interval: interval.max(Duration::from_millis(1)),
            start: Instant::now(),
            next: None,
            stop,
        }
    }

    /// Waits for the next tick and returns its offset from the first one, or `None` once stopped
    /// or when that offset would be past `limit` (then it returns at once, without waiting).
    pub fn tick(&mut self, limit: Option<Duration>) -> Option<Duration> {
        let slot = match self.next {
            None => 0,
            Some(next) => {
                // The first slot not already behind us: missed ones are skipped.
                let now = self.start.elapsed().as_nanos();
                let step = self.interval.as_nanos();
                let due = u64::try_from(now / step + 1).unwrap_or(u64::MAX);
                next.max(due)
            }
        };
        let offset = self
            .interval
            .saturating_mul(u32::try_from(slot).unwrap_or(u32::MAX));
        if limit.is_some_and(|l| offset > l) || self.stop.is_stopped() {
            return None;
        }
        if self.stop.sleep_until(self.start + offset) {
            return None;
        }
        self.next = Some(slot.saturating_add(1));
        Some(offset)
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_on_a_grid_and_skips_what_an_overrun_missed() {
        let interval = Duration::from_millis(40);
        let mut t = Ticker::new(interval, Stop::new());
        assert_eq!(t.tick(None), Some(Duration::ZERO));
        assert_eq!(t.tick(None), Some(interval));
        // Overrun: this tick's work takes 3.5 slots.
        std::thread::sleep(interval * 7 / 2);
        let after = t.tick(None).expect("ticks");
        assert!(after >= interval * 4, "missed slots are skipped: {after:?}");
        assert_eq!(after.as_nanos() % interval.as_nanos(), 0, "on the grid");
        let next = t.tick(None).expect("ticks");
        assert_eq!(next, after + interval, "then one slot at a time");
    }

    #[test]
    fn a_limit_ends_without_waiting_and_stop_wakes_at_once() {
        let mut t = Ticker::new(Duration::from_millis(30), Stop::new());
        let offsets: Vec<Duration> =
            std::iter::from_fn(|| t.tick(Some(Duration::from_millis(60)))).collect();
        assert_eq!(
            offsets,
            [0, 30, 60].map(Duration::from_millis),
            "offsets up to and including the limit"
        );
        let stop = Stop::new();
        let mut t = Ticker::new(Duration::from_secs(60), stop.clone());
        assert!(t.tick(None).is_some());
        let waker = stop.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            waker.stop();
        });
        let began = Instant::now();
        assert_eq!(t.tick(None), None);
        assert!(began.elapsed() < Duration::from_secs(30));
        h.join().expect("joins");
    }
}
