//! Robust trends: the Theil-Sen estimator (median of pairwise slopes) over a subsampled series,
//! and the time-to-full it implies. One outlier in the window moves neither slope nor level.

use super::stats::median;
use super::thresholds::Thresholds;

/// A fitted line over a series of `(t_s, value)` points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Trend {
    /// Units of value per second.
    pub slope_per_s: f64,
    /// The fitted value at the newest point's time (robust "now").
    pub level_now: f64,
}

/// Theil-Sen fit. `None` with fewer than two points at distinct times.
///
/// Cost is O(n^2) in the points, so callers keep at most `Thresholds::trend_max_points` (see
/// [`Subsample`]). `scratch` is reused across calls to avoid an allocation per series.
pub(crate) fn theil_sen(points: &[(f64, f64)], scratch: &mut Vec<f64>) -> Option<Trend> {
    scratch.clear();
    for (i, &(ti, yi)) in points.iter().enumerate() {
        for &(tj, yj) in &points[i + 1..] {
            let dt = tj - ti;
            if dt != 0.0 {
                scratch.push((yj - yi) / dt);
            }
        }
    }
    let slope = median(scratch)?;
    let t_last = points.last()?.0;
    scratch.clear();
    scratch.extend(points.iter().map(|&(t, y)| y - slope * t));
    let intercept = median(scratch)?;
    Some(Trend {
        slope_per_s: slope,
        level_now: intercept + slope * t_last,
    })
}

/// Seconds until `level_now` reaches `capacity` at the trend's slope; `None` unless growing.
pub(crate) fn time_to_full(trend: Trend, capacity: f64) -> Option<f64> {
    (trend.slope_per_s > 0.0).then(|| ((capacity - trend.level_now) / trend.slope_per_s).max(0.0))
}

/// Picks every `stride`-th sample (and the last) so a window of `n` samples gives at most about
/// `max_points` points. Call [`Subsample::next`] once per sample, in order (no division per
/// sample).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Subsample {
    stride: usize,
    n: usize,
    i: usize,
    countdown: usize,
}

impl Subsample {
    pub fn new(n: usize, max_points: u32) -> Self {
        let max = (max_points as usize).max(2);
        Subsample {
            stride: n.div_ceil(max - 1).max(1),
            n,
            i: 0,
            countdown: 0,
        }
    }
    /// Whether the next sample is kept.
    pub fn next(&mut self) -> bool {
        let keep = self.countdown == 0 || self.i + 1 == self.n;
        self.countdown = if self.countdown == 0 {
            self.stride - 1
        } else {
            self.countdown - 1
        };
        self.i += 1;
        keep
    }
}

/// Mann-Kendall trend statistic of a time-ordered series: z-score of S = sum over pairs of
/// sign(y_j - y_i), with the continuity correction and without the tie correction (which makes it
/// slightly conservative). Cheap: comparisons only.
pub(crate) fn mann_kendall_z(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let mut s = 0i64;
    for (i, &(_, yi)) in points.iter().enumerate() {
        for &(_, yj) in &points[i + 1..] {
            s += i64::from(yj > yi) - i64::from(yj < yi);
        }
    }
    let var = n * (n - 1.0) * (2.0 * n + 5.0) / 18.0;
    if var <= 0.0 || s == 0 {
        return 0.0;
    }
    let s = s as f64;
    (s - s.signum()) / var.sqrt()
}

/// A significantly *rising* trend (the only kind any rule acts on), or `None`: too few points,
/// too short a span, or a Mann-Kendall z below `min_z` (noise, or not rising). The test runs
/// first and is cheap, so a flat series never pays for the Theil-Sen median.
pub(crate) fn rising(
    points: &[(f64, f64)],
    th: &Thresholds,
    scratch: &mut Vec<f64>,
) -> Option<Trend> {
    let (first, last) = (points.first()?, points.last()?);
    if points.len() < th.trend_min_points as usize
        || last.0 - first.0 < th.trend_min_span_s
        || mann_kendall_z(points) < th.trend_min_z
    {
        return None;
    }
    theil_sen(points, scratch).filter(|t| t.slope_per_s > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_on_a_line() {
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, 100.0 + 2.0 * i as f64))
            .collect();
        let t = theil_sen(&pts, &mut Vec::new()).expect("fit");
        assert_eq!(t.slope_per_s, 2.0);
        assert_eq!(t.level_now, 118.0);
        assert_eq!(time_to_full(t, 218.0), Some(50.0));
    }

    #[test]
    fn robust_to_one_outlier() {
        let mut pts: Vec<(f64, f64)> = (0..11).map(|i| (i as f64, 3.0 * i as f64)).collect();
        pts[5].1 = 1e9;
        let t = theil_sen(&pts, &mut Vec::new()).expect("fit");
        assert_eq!(t.slope_per_s, 3.0);
        assert_eq!(t.level_now, 30.0);
    }

    #[test]
    fn flat_or_shrinking_never_fills() {
        let flat = [(0.0, 5.0), (1.0, 5.0), (2.0, 5.0)];
        let t = theil_sen(&flat, &mut Vec::new()).expect("fit");
        assert_eq!(time_to_full(t, 10.0), None);
        assert_eq!(theil_sen(&[(1.0, 1.0)], &mut Vec::new()), None);
        assert_eq!(theil_sen(&[(1.0, 1.0), (1.0, 2.0)], &mut Vec::new()), None);
    }

    #[test]
    fn rising_needs_points_span_and_significance() {
        let th = Thresholds::default();
        let line: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, i as f64)).collect();
        assert_eq!(
            rising(&line, &th, &mut Vec::new()).map(|t| t.slope_per_s),
            Some(1.0)
        );
        // 10 points: S = 45, var = 10 * 9 * 25 / 18 = 125.
        assert_eq!(mann_kendall_z(&line), 44.0 / 125f64.sqrt());
        assert!(
            rising(&line[..4], &th, &mut Vec::new()).is_none(),
            "too few points"
        );
        let short: Vec<(f64, f64)> = (0..10).map(|i| (i as f64 * 0.1, i as f64)).collect();
        assert!(
            rising(&short, &th, &mut Vec::new()).is_none(),
            "span under 4 s"
        );
        let falling: Vec<(f64, f64)> = line.iter().map(|&(t, y)| (t, -y)).collect();
        assert!(rising(&falling, &th, &mut Vec::new()).is_none());
        // Alternating noise around a flat level: no trend.
        let noise: Vec<(f64, f64)> = (0..30)
            .map(|i| (i as f64, if i % 2 == 0 { 5.0 } else { 6.0 }))
            .collect();
        assert!(mann_kendall_z(&noise).abs() < 1.0);
        assert!(rising(&noise, &th, &mut Vec::new()).is_none());
    }

    #[test]
    fn subsample_bounds_the_points() {
        let mut s = Subsample::new(300, 30);
        let kept: Vec<usize> = (0..300).filter(|_| s.next()).collect();
        assert!(kept.len() <= 31, "{}", kept.len());
        assert_eq!(&kept[..3], &[0, 11, 22]);
        assert_eq!(kept.last(), Some(&299));
        let mut all = Subsample::new(10, 30);
        assert_eq!((0..10).filter(|_| all.next()).count(), 10);
    }
}
