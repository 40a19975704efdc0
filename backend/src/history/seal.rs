//! Sealing: batch rows into 1 s blocks, 1 s blocks into 1 min blocks, 1 min into 1 h, the
//! tiers' retention and the size cap (docs/history.md#the-store). Each step is a function of
//! what is stored, so a step a crash interrupted is simply done again at the next seal.

use super::block;
use super::chunk;
use super::store::{Store, StoreError};
use super::tables::{H1, M1, META, ROWS, S1, SEGMENTS, SHAPE_AT, Tier, samples};
use redb::{ReadableTable, WriteTransaction};
use shared::rollup::{Point, Roll};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a seal did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sealed {
    /// 1 s blocks written.
    pub blocks: usize,
    /// Chunks (of one block start each) dropped by retention or the size cap.
    pub dropped: usize,
}

/// `points` (ascending) rolled up into periods of `step` seconds.
pub fn roll_up(points: impl IntoIterator<Item = (u64, Point)>, step: u64) -> Vec<(u64, Point)> {
    let step = step.max(1);
    let mut out: Vec<(u64, Point)> = Vec::new();
    let mut open: Option<(u64, Roll)> = None;
    for (t, p) in points {
        let start = t - t % step;
        match &mut open {
            Some((s, roll)) if *s == start => roll.add_point(&p),
            _ => {
                if let Some((s, roll)) = open.take()
                    && let Some(point) = roll.point()
                {
                    out.push((s, point));
                }
                let mut roll = Roll::default();
                roll.add_point(&p);
                open = Some((start, roll));
            }
        }
    }
    if let Some((s, roll)) = open
        && let Some(point) = roll.point()
    {
        out.push((s, point));
    }
    out
}

fn meta(w: &WriteTransaction, key: &str) -> Result<Option<u64>, redb::Error> {
    Ok(w.open_table(META)?.get(key)?.map(|v| v.value()))
}

fn set_meta(w: &WriteTransaction, key: &str, value: u64) -> Result<(), redb::Error> {
    w.open_table(META)?.insert(key, value)?;
    Ok(())
}

/// One block start's samples as they are gathered from the rows: each series' seconds and values
/// (the columns of its block), found by id through the previous sample's order (a sampler sends
/// its series in the same order every tick), else by a map.
#[derive(Default)]
struct Gathered {
    cols: Vec<(u32, Vec<u64>, Vec<f64>)>,
    slot_of: HashMap<u32, usize>,
    /// The slot of each position of the previous sample.
    last: Vec<usize>,
}

impl Gathered {
    fn push(&mut self, at: usize, id: u32, t: u64, v: f64) {
        let slot = match self.last.get(at) {
            Some(&s) if self.cols[s].0 == id => s,
            _ => {
                let cols = &mut self.cols;
                let s = *self.slot_of.entry(id).or_insert_with(|| {
                    // An hour at 1 Hz, allocated once.
                    let n = S1.block as usize;
                    cols.push((id, Vec::with_capacity(n), Vec::with_capacity(n)));
                    cols.len() - 1
                });
                match self.last.get_mut(at) {
                    Some(l) => *l = s,
                    None => self.last.push(s),
                }
                s
            }
        };
        let (_, times, values) = &mut self.cols[slot];
        times.push(t);
        values.push(v);
    }
}

/// Each 1 s block start written, with its minutes as [`M1`] blocks by series id (the part of its
/// day, [`derive_parts`]), rolled up from the seconds in hand rather than decoded again; `None`
/// where the start held blocks before (other series' seconds are there: its part is built from
/// the stored block).
type Written = BTreeMap<u64, Option<BTreeMap<u32, Vec<u8>>>>;

/// Moves every row of a window before `until_s` into 1 s blocks, merged with what a block start
/// already holds (the clock stepped back, or a seal was redone); returns the starts written with
/// their minutes.
fn seal_rows(w: &WriteTransaction, until_s: u64) -> Result<Written, redb::Error> {
    let mut per: BTreeMap<u64, Gathered> = BTreeMap::new();
    {
        let mut rows = w.open_table(ROWS)?;
        for entry in rows.range(..until_s)? {
            let (_, row) = entry?;
            for (t_ms, values) in samples(row.value()) {
                let t = t_ms / 1000;
                let at = per.entry(t - t % S1.block).or_default();
                for (k, (id, v)) in values.enumerate() {
                    if v.is_finite() {
                        at.push(k, id, t, v);
                    }
                }
            }
        }
        rows.retain_in(..until_s, |_, _| false)?;
    }
    let mut table = w.open_table(S1.table)?;
    let mut written = Written::new();
    for (&start, gathered) in &mut per {
        let mut blocks = chunk::get_all(&table, start)?;
        let mut minutes = blocks.is_empty().then(BTreeMap::new);
        for (id, times, values) in std::mem::take(&mut gathered.cols) {
            let old = blocks.get(&id).and_then(|b| block::decode(b).ok());
            let (bytes, part) = if old.is_none() && times.windows(2).all(|w| w[0] < w[1]) {
                // The common case: one sample a second, nothing stored before.
                let singles = times.iter().zip(&values).map(|(&t, &v)| single(t, v));
                (
                    block::encode_singles(&times, &values),
                    minutes
                        .is_some()
                        .then(|| block::encode(&roll_up(singles, M1.step))),
                )
            } else {
                let mut points: Vec<(u64, Point)> = times
                    .into_iter()
                    .zip(values)
                    .map(|(t, v)| single(t, v))
                    .collect();
                points.extend(within(old.into_iter().flatten(), start, S1.block));
                let points = roll_up_owned(points, 1);
                (
                    block::encode(&points),
                    minutes
                        .is_some()
                        .then(|| block::encode(&roll_up(points.iter().copied(), M1.step))),
                )
            };
            match bytes {
                Ok(bytes) => {
                    blocks.insert(id, bytes);
                }
                // One series that cannot be kept must not stop the seal (and with it retention
                // and the size cap) for every other.
                Err(e) => {
                    tracing::warn!(id, start, error = %e, "history: a block left out");
                    continue;
                }
            }
            match (part, &mut minutes) {
                (Some(Ok(part)), Some(m)) => {
                    m.insert(id, part);
                }
                // The hour's part is then built from its stored block.
                (Some(Err(_)), _) => minutes = None,
                _ => {}
            }
        }
        chunk::put_all(&mut table, start, &blocks)?;
        written.insert(start, minutes);
    }
    Ok(written)
}

/// One sample `v` at second `t`, as a point.
fn single(t: u64, v: f64) -> (u64, Point) {
    let p = Point {
        min: v,
        mean: v,
        max: v,
        samples: 1,
    };
    (t, p)
}

/// The points of `points` inside the block `[start, start + span)` (a damaged block may hold
/// others).
fn within(
    points: impl IntoIterator<Item = (u64, Point)>,
    start: u64,
    span: u64,
) -> impl Iterator<Item = (u64, Point)> {
    points
        .into_iter()
        .filter(move |(t, _)| *t >= start && *t - start < span)
}

/// [`roll_up`] of `points` in any order; already one point a period (the seconds of a sampler
/// at 1 Hz or slower), they come back as they are, without a copy.
pub fn roll_up_owned(mut points: Vec<(u64, Point)>, step: u64) -> Vec<(u64, Point)> {
    let step = step.max(1);
    if !points.windows(2).all(|w| w[0].0 < w[1].0) {
        points.sort_by_key(|(t, _)| *t);
    }
    let alone = points.iter().all(|(t, p)| t % step == 0 && p.samples > 0)
        && points.windows(2).all(|w| w[0].0 / step < w[1].0 / step);
    if alone { points } else { roll_up(points, step) }
}

/// Builds again each block of `coarse` that holds one of `starts` (blocks of `fine` written
/// after `coarse` was built past them: an import of older logs); returns the coarse starts.
fn rebuild(
    w: &WriteTransaction,
    fine: Tier,
    coarse: Tier,
    starts: &BTreeSet<u64>,
) -> Result<BTreeSet<u64>, redb::Error> {
    let done = meta(w, &coarse.done_key())?.unwrap_or(0);
    let stale: BTreeSet<u64> = starts
        .iter()
        .map(|s| s - s % coarse.block)
        .filter(|s| *s < done)
        .collect();
    for &start in &stale {
        build_block(w, fine, coarse, (start, coarse.block), true)?;
    }
    if let Some(&first) = stale.first() {
        lower_start(w, coarse, first)?;
    }
    Ok(stale)
}

/// Sets `tier`'s oldest block start to `start` if that is older.
fn lower_start(w: &WriteTransaction, tier: Tier, start: u64) -> Result<(), redb::Error> {
    if meta(w, &tier.start_key())?.is_none_or(|s| start < s) {
        set_meta(w, &tier.start_key(), start)?;
    }
    Ok(())
}

/// `coarse`'s block at `start` covering `span` seconds (a whole block of `coarse`, or the part of
/// one that a block of `fine` covers), from every point `fine` holds in it. With `keep`, the block's
/// points of steps `fine` holds nothing of stay (an import of one hour of an older day keeps the
/// rest of that day); without, the block is what `fine` holds.
fn build_block(
    w: &WriteTransaction,
    fine: Tier,
    coarse: Tier,
    (start, span): (u64, u64),
    keep: bool,
) -> Result<(), redb::Error> {
    let mut per: BTreeMap<u32, Vec<(u64, Point)>> = BTreeMap::new();
    chunk::scan(
        &w.open_table(fine.table)?,
        start,
        start + span,
        |_| true,
        |_, id, bytes| {
            // Rolled up block by block (a coarse period never spans two fine blocks): an hour
            // of seconds is 60 points held, not 3,600 (a day of them was 43 MB for 377 series).
            if let Ok(points) = block::decode(bytes) {
                let points = within(points, start, span);
                let into = per.entry(id).or_default();
                if fine.step == coarse.step {
                    // Parts merged: their points as they are (a roll-up of one point can move
                    // its mean by an ulp).
                    into.extend(points);
                } else {
                    into.extend(roll_up(points, coarse.step));
                }
            }
        },
    )?;
    let mut table = w.open_table(coarse.table)?;
    let mut blocks = if keep {
        chunk::get_all(&table, start)?
    } else {
        BTreeMap::new()
    };
    for (id, points) in per {
        // Parts merged into their whole block are already one point a period: kept as they are.
        let mut points = roll_up_owned(points, coarse.step);
        if let Some(old) = blocks.get(&id).and_then(|b| block::decode(b).ok()) {
            let fresh: BTreeSet<u64> = points.iter().map(|(t, _)| *t).collect();
            points.extend(within(old, start, span).filter(|(t, _)| !fresh.contains(t)));
            points.sort_by_key(|(t, _)| *t);
        }
        if !points.is_empty() {
            match block::encode(&points) {
                Ok(bytes) => {
                    blocks.insert(id, bytes);
                }
                Err(e) => tracing::warn!(id, start, error = %e, "history: a block left out"),
            }
        }
    }
    chunk::put_all(&mut table, start, &blocks)
}

/// Builds `coarse`'s whole blocks, for each block of `coarse` that `fine` holds up to
/// `fine_done` (seconds) and that was not built yet, from its parts ([`derive_parts`] built
/// them first, up to `fine_done`): a day of minutes from its hours' minutes, not from 86,400
/// seconds again. The parts are deleted in the same step. Returns the starts built.
fn derive(
    w: &WriteTransaction,
    fine: Tier,
    coarse: Tier,
    fine_done: u64,
) -> Result<BTreeSet<u64>, redb::Error> {
    let done_key = coarse.done_key();
    let mut built = BTreeSet::new();
    let mut start = match meta(w, &done_key)? {
        Some(s) => s,
        None => match meta(w, &fine.start_key())? {
            Some(from) => from - from % coarse.block,
            None => return Ok(built),
        },
    };
    while start
        .checked_add(coarse.block)
        .is_some_and(|end| end <= fine_done)
    {
        built.insert(start);
        build_block(w, coarse, coarse, (start, coarse.block), false)?;
        // Its parts give way to it: the one at its start was just replaced.
        w.open_table(coarse.table)?
            .retain_in((start + 1, 0)..(start + coarse.block, 0), |_, _| false)?;
        lower_start(w, coarse, start)?;
        start += coarse.block;
        set_meta(w, &done_key, start)?;
    }
    Ok(built)
}

/// Builds `coarse`'s points past its whole blocks, a block of `fine` at a time, up to
/// `fine_done`: a day's minutes so far, hour by hour, and a week's hours so far, day by day. A
/// read of a long range then finds the coarse tier up to where `fine` is sealed, instead of
/// rolling up the finer one (a week's chart read an hour before midnight rolled up a day of
/// seconds; docs/history.md#durable). `fresh` holds the blocks of `fine` written again behind
/// where the parts reach (an import, a clock stepped back): their parts are built again; `built`
/// the parts already written (the minutes [`seal_rows`] rolled up from the seconds in hand).
/// Each part is stored at its own start and gives way to the whole block when that is built
/// ([`derive`]).
fn derive_parts(
    w: &WriteTransaction,
    fine: Tier,
    coarse: Tier,
    fine_done: u64,
    fresh: &BTreeSet<u64>,
    built: &BTreeSet<u64>,
) -> Result<(), redb::Error> {
    let whole = meta(w, &coarse.done_key())?;
    let part_key = coarse.part_key();
    let mut at = match (meta(w, &part_key)?, whole) {
        (Some(p), Some(d)) => p.max(d),
        (Some(p), None) => p,
        (None, Some(d)) => d,
        (None, None) => match meta(w, &fine.start_key())? {
            Some(from) => from - from % fine.block,
            None => return Ok(()),
        },
    };
    for &start in fresh.range(whole.unwrap_or(0)..at) {
        build_block(w, fine, coarse, (start, fine.block), false)?;
        lower_start(w, coarse, start)?;
    }
    while at
        .checked_add(fine.block)
        .is_some_and(|end| end <= fine_done)
    {
        if !built.contains(&at) {
            build_block(w, fine, coarse, (at, fine.block), false)?;
            lower_start(w, coarse, at)?;
        }
        at += fine.block;
    }
    set_meta(w, &part_key, at)
}

/// Drops `tier`'s blocks that end at or before `cutoff` (seconds); returns the chunks dropped.
fn drop_before(w: &WriteTransaction, tier: Tier, cutoff: u64) -> Result<usize, redb::Error> {
    // Block starts only: a cutoff or a start between two (a seal a few seconds past the hour)
    // must neither skip a block nor keep one forever.
    let from = meta(w, &tier.start_key())?.unwrap_or(0);
    let from = from - from % tier.block;
    let cutoff = cutoff - cutoff % tier.block;
    let Some(last_start) = cutoff.checked_sub(tier.block) else {
        return Ok(0);
    };
    if last_start < from {
        return Ok(0);
    }
    let mut dropped = 0;
    w.open_table(tier.table)?
        .retain_in((from, 0)..=(last_start, u32::MAX), |_, _| {
            dropped += 1;
            false
        })?;
    set_meta(w, &tier.start_key(), last_start + tier.block)?;
    Ok(dropped)
}

impl Store {
    /// Seals the rows of every 1 s block (an hour) that ended by `now_s`, builds the coarser tiers
    /// from them, and drops what the tiers no longer keep; one transaction.
    pub fn seal(&self, now_s: u64) -> Result<Sealed, StoreError> {
        let until = now_s - now_s % S1.block;
        let w = self.db.begin_write().map_err(redb::Error::from)?;
        let sealed = seal_in(&w, until, now_s).map_err(StoreError::Db)?;
        w.commit().map_err(redb::Error::from)?;
        Ok(sealed)
    }

    /// Drops the oldest blocks, finest tier first, an hour of it at a time, until the data
    /// stored is under `target` bytes (or nothing is left to drop); returns the chunks dropped.
    pub fn trim(&self, target: u64) -> Result<usize, StoreError> {
        let w = self.db.begin_write().map_err(redb::Error::from)?;
        let dropped = trim_in(&w, target).map_err(StoreError::Db)?;
        w.commit().map_err(redb::Error::from)?;
        Ok(dropped)
    }
}

fn seal_in(w: &WriteTransaction, until: u64, now_s: u64) -> Result<Sealed, redb::Error> {
    let written = seal_rows(w, until)?;
    let starts: BTreeSet<u64> = written.keys().copied().collect();
    let s1_done = meta(w, &S1.done_key())?.unwrap_or(0).max(until);
    if let Some(&first) = starts.first() {
        set_meta(w, &S1.done_key(), s1_done)?;
        lower_start(w, S1, first)?;
    }
    // Older seconds than the minutes already built (an import): those minutes, then hours, again.
    let minutes = rebuild(w, S1, M1, &starts)?;
    rebuild(w, M1, H1, &minutes)?;
    // The hours just sealed, in minutes, as parts of their day (unless the day is whole: an
    // import, rebuilt above).
    let whole = meta(w, &M1.done_key())?.unwrap_or(0);
    let (mut parts, mut again) = (BTreeSet::new(), BTreeSet::new());
    {
        let mut table = w.open_table(M1.table)?;
        for (start, minutes) in written.range(whole..) {
            match minutes {
                Some(blocks) => {
                    chunk::put_all(&mut table, *start, blocks)?;
                    parts.insert(*start);
                }
                None => {
                    again.insert(*start);
                }
            }
        }
    }
    if let Some(&first) = parts.first() {
        lower_start(w, M1, first)?;
    }
    derive_parts(w, S1, M1, s1_done, &again, &parts)?;
    let days = derive(w, S1, M1, s1_done)?;
    let m1_done = meta(w, &M1.done_key())?.unwrap_or(0);
    // Days made whole behind where the week's parts reach (an import older than the store's
    // first day) get their hours too, as days rebuilt do.
    let days: BTreeSet<u64> = minutes.union(&days).copied().collect();
    derive_parts(w, M1, H1, m1_done, &days, &BTreeSet::new())?;
    derive(w, M1, H1, m1_done)?;
    let mut dropped = 0;
    for tier in [S1, M1, H1] {
        // Never what the next tier has not been built from yet.
        let built = match tier.name {
            "s1" => m1_done,
            "m1" => meta(w, &H1.done_key())?.unwrap_or(0),
            _ => u64::MAX,
        };
        let cutoff = now_s.saturating_sub(tier.keep + tier.block).min(built);
        dropped += drop_before(w, tier, cutoff)?;
    }
    // Shapes and segments go with the minute tier.
    let cutoff_ms = now_s.saturating_sub(M1.keep + M1.block) * 1000;
    // A segment goes once it ended before the cutoff (a verdict held for a month stays).
    w.open_table(SEGMENTS)?.retain_in(..cutoff_ms, |_, json| {
        serde_json::from_slice::<super::read::Segment>(json).is_ok_and(|seg| seg.to_ms >= cutoff_ms)
    })?;
    // The shape in force at the cutoff stays: a host whose shape has not changed for a month
    // still has one.
    let mut at = w.open_table(SHAPE_AT)?;
    let in_force = at
        .range(..cutoff_ms)?
        .next_back()
        .transpose()?
        .map(|(k, _)| k.value());
    if let Some(keep) = in_force {
        at.retain_in(..keep, |_, _| false)?;
    }
    Ok(Sealed {
        blocks: starts.len(),
        dropped,
    })
}

/// The bytes of every block and row: the data, without redb's pages around it (its own
/// statistics count less than the blocks hold).
pub(super) fn stored(w: &WriteTransaction) -> Result<u64, redb::Error> {
    let mut bytes = 0u64;
    for tier in [S1, M1, H1] {
        for entry in w.open_table(tier.table)?.iter()? {
            bytes += entry?.1.value().len() as u64;
        }
    }
    for entry in w.open_table(ROWS)?.iter()? {
        bytes += entry?.1.value().len() as u64;
    }
    Ok(bytes)
}

fn trim_in(w: &WriteTransaction, target: u64) -> Result<usize, redb::Error> {
    // One reading of the size (it walks the file): the time to drop is worked out from each
    // tier's bytes per second, the oldest first.
    let mut excess = stored(w)?.saturating_sub(target);
    let mut dropped = 0;
    for (k, tier) in [S1, M1, H1].into_iter().enumerate() {
        if excess == 0 {
            break;
        }
        let Some(from) = meta(w, &tier.start_key())? else {
            continue;
        };
        // Never what the next tier has not been built from yet.
        let built = match [M1, H1].get(k) {
            Some(next) => meta(w, &next.done_key())?.unwrap_or(0),
            None => u64::MAX,
        };
        let done = meta(w, &tier.done_key())?.unwrap_or(0).min(built);
        if from >= done {
            continue;
        }
        let mut bytes = 0u64;
        for entry in w.open_table(tier.table)?.iter()? {
            bytes += entry?.1.value().len() as u64;
        }
        let span = done - from;
        // The seconds of this tier that hold `excess` bytes, at its mean rate.
        let secs = if bytes == 0 {
            span
        } else {
            u64::try_from(u128::from(excess) * u128::from(span) / u128::from(bytes) + 1)
                .unwrap_or(u64::MAX)
        };
        let cutoff = from
            .saturating_add(secs)
            .div_ceil(tier.block)
            .saturating_mul(tier.block)
            .min(done);
        dropped += drop_before(w, tier, cutoff)?;
        let freed = u128::from(bytes) * u128::from(cutoff - from) / u128::from(span.max(1));
        excess = excess.saturating_sub(u64::try_from(freed).unwrap_or(u64::MAX));
    }
    Ok(dropped)
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
