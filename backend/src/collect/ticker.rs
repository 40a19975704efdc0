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
        let slot = next_slot(self.next, self.start.elapsed(), self.interval);
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

/// The grid slot of the tick after the one before `next` (`None`: the first tick, slot 0), at
/// `elapsed` since the first: `next`, unless it is already behind, then the first slot still
/// ahead (missed slots are skipped).
fn next_slot(next: Option<u64>, elapsed: Duration, interval: Duration) -> u64 {
    match next {
        None => 0,
        Some(next) => {
            let due = elapsed.as_nanos() / interval.as_nanos() + 1;
            next.max(u64::try_from(due).unwrap_or(u64::MAX))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_grid_skips_the_slots_an_overrun_missed_then_goes_one_at_a_time() {
        let interval = 40 * MS;
        assert_eq!(
            next_slot(None, 500 * MS, interval),
            0,
            "the first tick is now"
        );
        // On time (the next slot is still ahead): that slot.
        assert_eq!(next_slot(Some(1), 5 * MS, interval), 1);
        assert_eq!(next_slot(Some(2), 79 * MS, interval), 2);
        // Work of 3.5 slots after the tick at slot 1 (40 ms): 180 ms is in slot 4, so 5.
        assert_eq!(
            next_slot(Some(2), 180 * MS, interval),
            5,
            "missed slots skipped"
        );
        // Then one at a time again.
        assert_eq!(next_slot(Some(6), 201 * MS, interval), 6);
        // Exactly on a slot's start counts that slot as begun.
        assert_eq!(next_slot(Some(2), 120 * MS, interval), 4);
    }

    #[test]
    fn ticks_are_on_the_grid_and_never_back_to_back() {
        // Whatever this thread's scheduling, every offset is a grid slot and each is later than
        // the one before; an overrun of 3.5 slots skips at least three.
        let interval = 40 * MS;
        let mut t = Ticker::new(interval, Stop::new());
        assert_eq!(t.tick(None), Some(Duration::ZERO));
        let first = t.tick(None).expect("ticks");
        std::thread::sleep(interval * 7 / 2);
        let after = t.tick(None).expect("ticks");
        let next = t.tick(None).expect("ticks");
        for o in [first, after, next] {
            assert_eq!(o.as_nanos() % interval.as_nanos(), 0, "{o:?} on the grid");
        }
        assert!(first >= interval);
        assert!(after >= first + interval * 3, "{first:?} then {after:?}");
        assert!(next > after);
    }

    #[test]
    fn a_limit_ends_without_waiting_and_stop_wakes_at_once() {
        // With an hour between ticks, any wait would show.
        let mut t = Ticker::new(Duration::from_secs(3600), Stop::new());
        let began = Instant::now();
        let offsets: Vec<Duration> = std::iter::from_fn(|| t.tick(Some(Duration::ZERO))).collect();
        assert_eq!(
            offsets,
            [Duration::ZERO],
            "offsets up to and including the limit"
        );
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "it did not wait for a tick"
        );
        let stop = Stop::new();
        let mut t = Ticker::new(Duration::from_secs(3600), stop.clone());
        assert!(t.tick(None).is_some());
        let waker = stop.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            waker.stop();
        });
        let began = Instant::now();
        assert_eq!(t.tick(None), None);
        assert!(began.elapsed() < Duration::from_secs(60));
        h.join().expect("joins");
    }
}
