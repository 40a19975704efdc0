//! One block of one series in one tier: its points as pco-compressed columns
//! (docs/history.md#the-store).
//!
//! Layout: a version byte, a flags byte, the point count (u32 LE), then each column led by its
//! length (u32 LE): the times (u64 seconds, the start of each point's period), the means (f64),
//! and, unless every point is of one sample (a 1 s tier sampled at 1 Hz or slower), the mins,
//! maxes (f64) and sample counts (u32). A period with nothing measured has no point.

use shared::rollup::Point;

const VERSION: u8 = 1;
/// Mins, maxes and sample counts follow the means.
const SPREAD: u8 = 1;

#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error("history block: {0}")]
    Malformed(&'static str),
    #[error("history block: {0}")]
    Pco(#[from] pco::errors::PcoError),
}

fn column<T: pco::data_types::Number>(out: &mut Vec<u8>, values: &[T]) -> Result<(), BlockError> {
    let bytes = pco::standalone::simple_compress(values, &pco::ChunkConfig::default())?;
    let len = u32::try_from(bytes.len()).map_err(|_| BlockError::Malformed("column too long"))?;
    out.extend(len.to_le_bytes());
    out.extend(bytes);
    Ok(())
}

/// `points` (ascending times, at least one) as a block.
pub fn encode(points: &[(u64, Point)]) -> Result<Vec<u8>, BlockError> {
    let n = u32::try_from(points.len()).map_err(|_| BlockError::Malformed("too many points"))?;
    let spread = points
        .iter()
        .any(|(_, p)| p.samples != 1 || p.min != p.mean || p.max != p.mean);
    let mut out = vec![VERSION, if spread { SPREAD } else { 0 }];
    out.extend(n.to_le_bytes());
    let times: Vec<u64> = points.iter().map(|(t, _)| *t).collect();
    column(&mut out, &times)?;
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
    let times: Vec<u64> = r.column(n)?;
    let means: Vec<f64> = r.column(n)?;
    let (mins, maxes, samples) = if spread {
        (r.column(n)?, r.column(n)?, r.column::<u32>(n)?)
    } else {
        (means.clone(), means.clone(), vec![1; n])
    };
    Ok((0..n)
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
        .collect())
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
    }
}
