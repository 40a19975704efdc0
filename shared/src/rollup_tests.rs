//! Rolling samples up through the tiers: spikes survive, absent samples count for nothing,
//! counters become rates across a reset.

use super::*;
use proptest::prelude::*;

/// Feeds `values` (one a second from `t0`) and returns every minute and hour closed, plus one
/// more second to close the last minute.
/// Closed periods: each one's start (seconds) and its point, if anything in it was measured.
type ClosedPeriods = Vec<(u64, Option<Point>)>;

fn feed(t0: u64, values: &[Option<f64>]) -> (ClosedPeriods, ClosedPeriods) {
    let mut tiers = Tiers::default();
    let (mut minutes, mut hours) = (Vec::new(), Vec::new());
    let end = t0 + values.len() as u64;
    let closing = [None; 3600];
    let tail = closing
        .iter()
        .take((3600 - (end % 3600) as usize) % 3600 + 61);
    for (t, v) in (t0..).zip(values.iter().chain(tail)) {
        let c = tiers.add(t, *v);
        minutes.extend(c.minute);
        hours.extend(c.hour);
    }
    (minutes, hours)
}

#[test]
fn a_one_second_spike_is_the_max_of_its_minute_and_its_hour() {
    let mut values = vec![Some(10.0); 3600];
    values[1234] = Some(99.0);
    let (minutes, hours) = feed(7200, &values);
    let minute = minutes
        .iter()
        .find(|(start, _)| *start == 7200 + 1200)
        .and_then(|(_, p)| *p)
        .expect("the spike's minute");
    assert_eq!((minute.min, minute.max, minute.samples), (10.0, 99.0, 60));
    assert!((minute.mean - (59.0 * 10.0 + 99.0) / 60.0).abs() < 1e-9);
    let hour = hours[0].1.expect("the hour");
    assert_eq!(hours[0].0, 7200);
    assert_eq!((hour.min, hour.max, hour.samples), (10.0, 99.0, 3600));
    assert!((hour.mean - (3599.0 * 10.0 + 99.0) / 3600.0).abs() < 1e-9);
}

#[test]
fn samples_not_measured_count_for_nothing_and_an_empty_period_has_no_point() {
    let mut values: Vec<Option<f64>> = (0..120).map(|i| Some(f64::from(i))).collect();
    for v in values.iter_mut().skip(60) {
        *v = None;
    }
    values[30] = Some(f64::NAN);
    let (minutes, _) = feed(0, &values);
    let first = minutes[0].1.expect("measured");
    assert_eq!(first.samples, 59, "the NaN is not a sample");
    assert_eq!((first.min, first.max), (0.0, 59.0));
    assert_eq!(
        minutes[1],
        (60, None),
        "nothing measured: no point, never 0"
    );
}

#[test]
fn a_skipped_period_has_no_point_and_a_late_sample_is_ignored() {
    let mut periods = Periods::new(60);
    let one = Point {
        min: 1.0,
        mean: 1.0,
        max: 1.0,
        samples: 1,
    };
    assert_eq!(periods.add(5, Some(&one)), None);
    // Three minutes later: the first minute closes; the two between were never opened.
    let closed = periods.add(185, Some(&one));
    assert_eq!(
        closed.map(|(s, p)| (s, p.map(|p| p.samples))),
        Some((0, Some(1)))
    );
    assert_eq!(
        periods.add(100, Some(&one)),
        None,
        "older than the open minute"
    );
    let closed = periods.add(240, None).expect("the minute of 185 closes");
    assert_eq!((closed.0, closed.1.map(|p| p.samples)), (180, Some(1)));
}

#[test]
fn a_counter_is_a_rate_and_its_reset_counts_from_zero() {
    let mut c = CounterRate::default();
    assert_eq!(c.add(0, Some(1000)), None, "one sample is no rate");
    assert_eq!(c.add(2000, Some(5000)), Some(2000.0));
    // Reset: the counter started again from 0 and now reads 300.
    assert_eq!(c.add(3000, Some(300)), Some(300.0));
    assert_eq!(c.add(3000, Some(400)), None, "no time passed");
    assert_eq!(c.add(2500, Some(400)), None, "older than the last");
    assert_eq!(
        c.add(4000, Some(500)),
        Some(200.0),
        "from the last kept sample"
    );
    assert_eq!(c.add(5000, None), None, "not read");
    assert_eq!(c.add(6000, Some(900)), None, "starts over after a gap");
    assert_eq!(c.add(7000, Some(1900)), Some(1000.0));
}

proptest! {
    /// Whatever the samples, every closed minute and hour bounds each of its samples by its min
    /// and max, its mean lies between them, and it counts exactly the samples measured.
    #[test]
    fn points_bound_their_samples(
        values in prop::collection::vec(prop::option::of(-1e12f64..1e12), 1..400),
        t0 in 0u64..100_000,
    ) {
        let (minutes, hours) = feed(t0, &values);
        let tiers = minutes.iter().map(|m| (m, 60)).chain(hours.iter().map(|h| (h, 3600)));
        for ((start, point), step) in tiers {
            let inside: Vec<f64> = (t0..)
                .zip(&values)
                .filter(|(t, _)| *t >= *start && *t < start + step)
                .filter_map(|(_, v)| *v)
                .collect();
            match point {
                None => prop_assert!(inside.is_empty()),
                Some(p) => {
                    prop_assert!(p.min <= p.mean && p.mean <= p.max);
                    for v in &inside {
                        prop_assert!(p.min <= *v && *v <= p.max);
                    }
                    prop_assert_eq!(p.samples as usize, inside.len());
                }
            }
        }
    }
}
