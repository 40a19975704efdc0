//! Small window statistics: quantiles by selection, running moments, and N-of-M tallies with
//! hysteresis. Shared by every rule.

use super::evidence::Comparison;
use super::model::Severity;

/// The `q` quantile (0..1, nearest rank below) of `values`, reordering them. `None` when empty.
pub(crate) fn quantile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let k = ((values.len() - 1) as f64 * q.clamp(0.0, 1.0)).floor() as usize;
    let (_, v, _) = values.select_nth_unstable_by(k, f64::total_cmp);
    Some(*v)
}

/// The median (lower middle for an even count).
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    quantile(values, 0.5)
}

/// Running count, mean and variance without keeping the samples.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Moments {
    pub n: u32,
    sum: f64,
    sum_sq: f64,
    pub max: Option<f64>,
}

impl Moments {
    pub fn add(&mut self, v: f64) {
        self.n += 1;
        self.sum += v;
        self.sum_sq += v * v;
        self.max = Some(self.max.map_or(v, |m| m.max(v)));
    }
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / f64::from(self.n))
    }
    /// Coefficient of variation (population standard deviation over mean); `None` when the mean
    /// is zero or there are no samples.
    pub fn cv(&self) -> Option<f64> {
        let mean = self.mean()?;
        if mean <= 0.0 {
            return None;
        }
        let var = (self.sum_sq / f64::from(self.n) - mean * mean).max(0.0);
        Some(var.sqrt() / mean)
    }
}

/// Which side of a threshold is the bad one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// Bad when `value >= threshold`.
    AtLeast,
    /// Bad when `value < threshold`.
    Below,
}

/// A warning (and optionally critical) level on one side.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Band {
    pub warn: f64,
    pub crit: Option<f64>,
    pub dir: Dir,
}

impl Band {
    /// The clearing levels for a finding already held: `points` easier on the bad side.
    pub fn relaxed(self, held: bool, points: f64) -> Band {
        if !held {
            return self;
        }
        let d = match self.dir {
            Dir::AtLeast => -points,
            Dir::Below => points,
        };
        Band {
            warn: self.warn + d,
            crit: self.crit.map(|c| c + d),
            dir: self.dir,
        }
    }
    fn hits(self, level: f64, v: f64) -> bool {
        match self.dir {
            Dir::AtLeast => v >= level,
            Dir::Below => v < level,
        }
    }
    pub fn comparison(self) -> Comparison {
        match self.dir {
            Dir::AtLeast => Comparison::Ge,
            Dir::Below => Comparison::Lt,
        }
    }
}

/// N-of-M counts of one series against one band.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tally {
    pub band: Band,
    pub warn: u32,
    pub crit: u32,
    pub of: u32,
    /// The newest value seen.
    pub last: Option<f64>,
}

impl Tally {
    pub fn new(band: Band) -> Self {
        Tally {
            band,
            warn: 0,
            crit: 0,
            of: 0,
            last: None,
        }
    }
    pub fn add(&mut self, v: f64) {
        self.of += 1;
        self.last = Some(v);
        if self.band.hits(self.band.warn, v) {
            self.warn += 1;
        }
        if let Some(c) = self.band.crit
            && self.band.hits(c, v)
        {
            self.crit += 1;
        }
    }
    /// The severity that held in enough samples, `None` when neither level held, or when there
    /// were too few samples (see [`Tally::enough`]).
    pub fn severity(&self, hold_fraction: f64, min_samples: u32) -> Option<Severity> {
        if !self.enough(min_samples) {
            return None;
        }
        if holds(self.crit, self.of, hold_fraction) {
            Some(Severity::Critical)
        } else if holds(self.warn, self.of, hold_fraction) {
            Some(Severity::Warning)
        } else {
            None
        }
    }
    pub fn enough(&self, min_samples: u32) -> bool {
        self.of >= min_samples.max(1)
    }
}

/// Whether `held` of `of` samples is at least `fraction` of them (and at least one).
pub(crate) fn holds(held: u32, of: u32, fraction: f64) -> bool {
    held > 0 && f64::from(held) >= fraction * f64::from(of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_pick_nearest_rank_below() {
        let mut v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(median(&mut v), Some(3.0));
        assert_eq!(quantile(&mut v, 0.0), Some(1.0));
        assert_eq!(quantile(&mut v, 1.0), Some(5.0));
        assert_eq!(quantile(&mut [], 0.5), None);
        let mut even = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(median(&mut even), Some(2.0));
    }

    #[test]
    fn moments_give_mean_and_cv() {
        let mut m = Moments::default();
        for v in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            m.add(v);
        }
        assert_eq!(m.mean(), Some(5.0));
        assert_eq!(m.cv(), Some(2.0 / 5.0));
        assert_eq!(m.max, Some(9.0));
        assert_eq!(Moments::default().mean(), None);
    }

    #[test]
    fn tally_needs_n_of_m_and_relaxes_when_held() {
        let band = Band {
            warn: 90.0,
            crit: Some(95.0),
            dir: Dir::AtLeast,
        };
        let mut t = Tally::new(band);
        for v in [91.0, 96.0, 50.0, 97.0, 92.0] {
            t.add(v);
        }
        assert_eq!((t.warn, t.crit, t.of), (4, 2, 5));
        assert_eq!(t.severity(0.6, 3), Some(Severity::Warning));
        let mut held = Tally::new(band.relaxed(true, 5.0));
        for v in [87.0, 87.0, 87.0] {
            held.add(v);
        }
        assert_eq!(held.severity(0.6, 3), Some(Severity::Warning));
        assert_eq!(held.severity(0.6, 4), None);
    }
}
