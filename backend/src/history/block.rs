//! One block of one series in one tier: its points as columns (docs/history.md#the-store).
//!
//! Layout: a version byte, a flags byte, the point count (u32 LE), then each column led by its
//! length (u32 LE): the times (u64 seconds, the start of each point's period) as runs, then the
//! means (f64) and, unless every point is of one sample (a 1 s tier sampled at 1 Hz or slower),
//! the mins, maxes (f64) and sample counts (u32), each compressed with pco. A period with nothing
//! measured has no point.
//!
//! The times are nearly always a regular run (a point a step, a gap where nothing was measured),
//! so they are kept as the first time and `(gap, repeats)` runs: an hour of seconds is 16 bytes,
//! and costs nothing to encode (pco on them was a fifth of the hourly seal).

use shared::rollup::Point;

/// 2: times as runs (1 compressed them with pco).
const VERSION: u8 = 2;
/// Mins, maxes and sample counts follow the means.
const SPREAD: u8 = 1;
/// Points a block holds at most: 7 days of minutes, or a week of seconds from an import, fit;
/// a damaged count past it is refused before anything is allocated for it.
pub const MAX_POINTS: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error("history block: {0}")]
    Malformed(&'static str),
    #[error("history block: {0}")]
    Pco(#[from] pco::errors::PcoError),
}

fn column<T: pco::data_types::Number>(out: &mut Vec<u8>, values: &[T]) -> Result<(), BlockError> {
    // First-order deltas tried, not searched for: pco's search (lookbacks, orders) was a third
    // of the hourly seal and gained under 2% on the history_cost bench's noisy series.
    let config = pco::ChunkConfig::default().with_delta_spec(pco::DeltaSpec::TryConsecutive(1));
    let bytes = pco::standalone::simple_compress(values, &config)?;
    section(out, &bytes)
}

fn section(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), BlockError> {
    let len = u32::try_from(bytes.len()).map_err(|_| BlockError::Malformed("column too long"))?;
    out.extend(len.to_le_bytes());
    out.extend(bytes);
    Ok(())
}

/// Ascending `times` as the first and `(gap, repeats)` runs (u32 LE each).
fn times_column(out: &mut Vec<u8>, times: &[u64]) -> Result<(), BlockError> {
    let mut bytes = Vec::with_capacity(16);
    let Some(&first) = times.first() else {
        return section(out, &bytes);
    };
    bytes.extend(first.to_le_bytes());
    let mut run: Option<(u32, u32)> = None;
    for w in times.windows(2) {
        let gap = w[1]
            .checked_sub(w[0])
            .and_then(|g| u32::try_from(g).ok())
            .filter(|g| *g > 0)
            .ok_or(BlockError::Malformed("times not ascending"))?;
        run = match run {
            Some((g, n)) if g == gap && n < u32::MAX => Some((g, n + 1)),
            Some((g, n)) => {
                bytes.extend(g.to_le_bytes());
                bytes.extend(n.to_le_bytes());
                Some((gap, 1))
            }
            None => Some((gap, 1)),
        };
    }
    if let Some((g, n)) = run {
        bytes.extend(g.to_le_bytes());
        bytes.extend(n.to_le_bytes());
    }
    section(out, &bytes)
}

fn head(out: &mut Vec<u8>, n: usize, spread: bool) -> Result<(), BlockError> {
    let n = u32::try_from(n).map_err(|_| BlockError::Malformed("too many points"))?;
    out.extend([VERSION, if spread { SPREAD } else { 0 }]);
    out.extend(n.to_le_bytes());
    Ok(())
}

/// `points` (ascending times, at least one) as a block.
pub fn encode(points: &[(u64, Point)]) -> Result<Vec<u8>, BlockError> {
    let spread = points
        .iter()
        .any(|(_, p)| p.samples != 1 || p.min != p.mean || p.max != p.mean);
    let mut out = Vec::new();
    head(&mut out, points.len(), spread)?;
    let times: Vec<u64> = points.iter().map(|(t, _)| *t).collect();
    times_column(&mut out, &times)?;
    let of = |f: fn(&Point) -> f64| points.iter().map(|(_, p)| f(p)).collect::<Vec<f64>>();
    column(&mut out, &of(|p| p.mean))?;
    if spread {
        column(&mut out, &of(|p| p.min))?;
        column(&mut out, &of(|p| p.max))?;
        let samples: Vec<u32> = points.iter().map(|(_, p)| p.samples).collect();
        column(&mut out, &samples)?;
    }
    Ok(out)
}

/// Single samples at ascending `times` (one a second of a 1 s block) as a block: what
/// [`encode`] makes of them, without building points first.
pub fn encode_singles(times: &[u64], values: &[f64]) -> Result<Vec<u8>, BlockError> {
    if times.len() != values.len() {
        return Err(BlockError::Malformed("a time for each value"));
    }
    let mut out = Vec::new();
    head(&mut out, times.len(), false)?;
    times_column(&mut out, times)?;
    column(&mut out, values)?;
    Ok(out)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], BlockError> {
        if self.0.len() < n {
            return Err(BlockError::Malformed("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<u32, BlockError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn column<T: pco::data_types::Number>(&mut self, n: usize) -> Result<Vec<T>, BlockError> {
        let len = self.u32()? as usize;
        let values = pco::standalone::simple_decompress::<T>(self.take(len)?)?;
        if values.len() != n {
            return Err(BlockError::Malformed(
                "a column's length differs from the count",
            ));
        }
        Ok(values)
    }
    fn times(&mut self, n: usize) -> Result<Vec<u64>, BlockError> {
        let len = self.u32()? as usize;
        let mut r = Reader(self.take(len)?);
        let mut out = Vec::with_capacity(n.min(1 << 20));
        if len == 0 {
            return if n == 0 {
                Ok(out)
            } else {
                Err(BlockError::Malformed("no times"))
            };
        }
        let b = r.take(8)?;
        let mut t = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        out.push(t);
        while !r.0.is_empty() {
            let gap = u64::from(r.u32()?);
            let repeats = r.u32()? as usize;
            if gap == 0 || out.len() + repeats > n {
                return Err(BlockError::Malformed("times do not match the count"));
            }
            for _ in 0..repeats {
                t = t
                    .checked_add(gap)
                    .ok_or(BlockError::Malformed("times past the end of time"))?;
                out.push(t);
            }
        }
        if out.len() != n {
            return Err(BlockError::Malformed("times do not match the count"));
        }
        Ok(out)
    }
}

/// The points of a block.
pub fn decode(bytes: &[u8]) -> Result<Vec<(u64, Point)>, BlockError> {
    let mut r = Reader(bytes);
    let head = r.take(2)?;
    if head[0] != VERSION {
        return Err(BlockError::Malformed("unknown version"));
    }
    let spread = head[1] & SPREAD != 0;
    let n = r.u32()? as usize;
    if n > MAX_POINTS {
        return Err(BlockError::Malformed("more points than a block holds"));
    }
    let times: Vec<u64> = r.times(n)?;
    let means: Vec<f64> = r.column(n)?;
    let (mins, maxes, samples) = if spread {
        (r.column(n)?, r.column(n)?, r.column::<u32>(n)?)
    } else {
        (means.clone(), means.clone(), vec![1; n])
    };
    let points: Vec<(u64, Point)> = (0..n)
        .map(|i| {
            (
                times[i],
                Point {
                    min: mins[i],
                    mean: means[i],
                    max: maxes[i],
                    samples: samples[i],
                },
            )
        })
        .collect();
    // What roll-ups rely on (a clamp between min and max panics on NaN or min > max).
    if points.iter().any(|(_, p)| {
        !(p.min.is_finite() && p.mean.is_finite() && p.max.is_finite())
            || p.min > p.mean
            || p.mean > p.max
            || p.samples == 0
    }) {
        return Err(BlockError::Malformed(
            "a point not finite, or its mean outside its min and max",
        ));
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(min: f64, mean: f64, max: f64, samples: u32) -> Point {
        Point {
            min,
            mean,
            max,
            samples,
        }
    }

    #[test]
    fn points_come_back_exactly_with_or_without_spread() {
        let single: Vec<(u64, Point)> = (0..600)
            .filter(|t| t % 7 != 3)
            .map(|t| {
                (
                    1_700_000_000 + t,
                    p(t as f64 * 0.1, t as f64 * 0.1, t as f64 * 0.1, 1),
                )
            })
            .collect();
        let block = encode(&single).expect("encodes");
        assert_eq!(block[1], 0, "one sample a point: means only");
        assert_eq!(decode(&block).expect("decodes"), single);
        let spread = vec![(60, p(1.0, 2.5, 99.0, 60)), (120, p(0.0, 0.0, 0.0, 3))];
        assert_eq!(
            decode(&encode(&spread).expect("encodes")).expect("decodes"),
            spread
        );
    }

    #[test]
    fn times_are_runs_and_singles_encode_as_points_do() {
        let times: Vec<u64> = (0..3600).map(|t| 1_764_504_000 + t).collect();
        let values: Vec<f64> = times.iter().map(|t| (*t % 97) as f64).collect();
        let block = encode_singles(&times, &values).expect("encodes");
        let points: Vec<(u64, Point)> = times
            .iter()
            .zip(&values)
            .map(|(t, v)| (*t, p(*v, *v, *v, 1)))
            .collect();
        assert_eq!(block, encode(&points).expect("encodes"));
        assert_eq!(decode(&block).expect("decodes"), points);
        // An hour of seconds: the first time and one run.
        assert_eq!(
            u32::from_le_bytes([block[6], block[7], block[8], block[9]]),
            16
        );
        assert!(
            encode_singles(&[2, 1], &[0.0, 0.0]).is_err(),
            "not ascending"
        );
        assert!(
            encode_singles(&[1, 1], &[0.0, 0.0]).is_err(),
            "twice the same second"
        );
        assert!(encode_singles(&[1], &[]).is_err());
        let gaps = vec![(0, p(1.0, 1.0, 1.0, 1)), (u64::MAX, p(2.0, 2.0, 2.0, 1))];
        assert!(encode(&gaps).is_err(), "a gap wider than a run's");
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics() {
        let block = encode(&[(1, p(1.0, 1.0, 1.0, 1)), (2, p(2.0, 2.0, 2.0, 1))]).expect("ok");
        for cut in 0..block.len() {
            assert!(decode(&block[..cut]).is_err(), "cut at {cut}");
        }
        let mut other = block.clone();
        other[0] = 9;
        assert!(decode(&other).is_err());
        let mut count = block.clone();
        count[2] = 3;
        assert!(decode(&count).is_err());
        // Runs that say more points than the count, or a zero gap.
        let mut runs = block.clone();
        runs[22] = 5;
        assert!(decode(&runs).is_err());
        let mut zero = block;
        zero[18] = 0;
        assert!(decode(&zero).is_err());
        // A count past what a block holds is refused before its times are laid out.
        let mut many = encode(&[(1, p(1.0, 1.0, 1.0, 1))]).expect("ok");
        many[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
        many.splice(10..18, [0u8; 8]);
        assert!(decode(&many).is_err());
        // Points a roll-up could not take (it clamps between min and max).
        for bad in [
            p(2.0, 1.0, 3.0, 2),
            p(0.0, f64::NAN, 1.0, 2),
            p(0.0, 1.0, 2.0, 0),
        ] {
            let b = encode(&[(5, bad)]).expect("encodes what it is given");
            assert!(decode(&b).is_err(), "{bad:?}");
        }
    }
}
