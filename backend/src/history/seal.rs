//! Sealing: batch rows into 1 s blocks, 1 s blocks into 1 min blocks, 1 min into 1 h, the
//! tiers' retention and the size cap (docs/history.md#the-store). Each step is a function of
//! what is stored, so a step a crash interrupted is simply done again at the next seal.

use super::block;
use super::store::{Store, StoreError};
use super::tables::{H1, ITEMS, M1, META, ROWS, S1, SEGMENTS, SHAPE_AT, Tier, samples};
use redb::{ReadableTable, WriteTransaction};
use shared::rollup::{Point, Roll};
use std::collections::{BTreeMap, BTreeSet};

/// What a seal did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sealed {
    /// 1 s blocks written.
    pub blocks: usize,
    /// Blocks dropped by retention or the size cap.
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

/// Every series id there is.
fn ids(w: &WriteTransaction) -> Result<Vec<u32>, redb::Error> {
    let mut out = Vec::new();
    for entry in w.open_table(ITEMS)?.iter()? {
        let (k, base) = entry?;
        if let Some((scope, _)) = super::tables::parse_item_key(k.value()) {
            let base = base.value();
            out.extend((0..scope.metrics().len() as u32).map(|i| base + i));
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Writes `points` into `tier`'s block starting at `start`, merged with what it holds.
fn merge_into(
    w: &WriteTransaction,
    tier: Tier,
    id: u32,
    start: u64,
    mut points: Vec<(u64, Point)>,
) -> Result<(), redb::Error> {
    let mut table = w.open_table(tier.table)?;
    if let Some(old) = table.get((id, start))? {
        // A block written before (the clock stepped back, or a seal was redone): merge.
        if let Ok(old) = block::decode(old.value()) {
            points.extend(old);
            points.sort_by_key(|(t, _)| *t);
            points = roll_up(points, tier.step);
        }
    }
    if points.is_empty() {
        return Ok(());
    }
    let bytes = block::encode(&points).map_err(|e| redb::Error::Corrupted(e.to_string()))?;
    table.insert((id, start), bytes.as_slice())?;
    Ok(())
}

/// Moves every row of a window before `until_s` into 1 s blocks; returns the starts of the
/// blocks written.
fn seal_rows(w: &WriteTransaction, until_s: u64) -> Result<BTreeSet<u64>, redb::Error> {
    let mut per: BTreeMap<(u32, u64), Vec<(u64, Point)>> = BTreeMap::new();
    {
        let mut rows = w.open_table(ROWS)?;
        for entry in rows.range(..until_s)? {
            let (_, row) = entry?;
            for (t_ms, values) in samples(row.value()) {
                let t = t_ms / 1000;
                for (id, v) in values {
                    if v.is_finite() {
                        per.entry((id, t - t % S1.block)).or_default().push((
                            t,
                            Point {
                                min: v,
                                mean: v,
                                max: v,
                                samples: 1,
                            },
                        ));
                    }
                }
            }
        }
        rows.retain_in(..until_s, |_, _| false)?;
    }
    let starts = per.keys().map(|(_, start)| *start).collect();
    for ((id, start), mut points) in per {
        points.sort_by_key(|(t, _)| *t);
        merge_into(w, S1, id, start, roll_up(points, 1))?;
    }
    Ok(starts)
}

/// Builds again each block of `coarse` that holds one of `starts` (blocks of `fine` written
/// after `coarse` was built past them: an import of older logs); returns the coarse starts.
fn rebuild(
    w: &WriteTransaction,
    fine: Tier,
    coarse: Tier,
    starts: &BTreeSet<u64>,
    ids: &[u32],
) -> Result<BTreeSet<u64>, redb::Error> {
    let done = meta(w, &coarse.done_key())?.unwrap_or(0);
    let stale: BTreeSet<u64> = starts
        .iter()
        .map(|s| s - s % coarse.block)
        .filter(|s| *s < done)
        .collect();
    for &start in &stale {
        build_block(w, fine, coarse, start, ids, true)?;
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

/// `coarse`'s block at `start`, from every point `fine` holds in it. With `keep`, the block's
/// points of steps `fine` holds nothing of stay (an import of one hour of an older day keeps the
/// rest of that day); without, the block is what `fine` holds.
fn build_block(
    w: &WriteTransaction,
    fine: Tier,
    coarse: Tier,
    start: u64,
    ids: &[u32],
    keep: bool,
) -> Result<(), redb::Error> {
    let end = start + coarse.block;
    for &id in ids {
        let mut points = Vec::new();
        {
            let table = w.open_table(fine.table)?;
            for entry in table.range((id, start)..(id, end))? {
                let (_, bytes) = entry?;
                if let Ok(p) = block::decode(bytes.value()) {
                    points.extend(p);
                }
            }
        }
        points.sort_by_key(|(t, _)| *t);
        let mut points = roll_up(points, coarse.step);
        let mut table = w.open_table(coarse.table)?;
        let old = match table.get((id, start))? {
            Some(old) if keep => block::decode(old.value()).ok(),
            _ => None,
        };
        if let Some(old) = old {
            let fresh: BTreeSet<u64> = points.iter().map(|(t, _)| *t).collect();
            points.extend(old.into_iter().filter(|(t, _)| !fresh.contains(t)));
            points.sort_by_key(|(t, _)| *t);
        }
        if points.is_empty() {
            if !keep {
                table.remove((id, start))?;
            }
            continue;
        }
        let bytes = block::encode(&points).map_err(|e| redb::Error::Corrupted(e.to_string()))?;
        table.insert((id, start), bytes.as_slice())?;
    }
    Ok(())
}

/// Builds `coarse`'s blocks from `fine`'s, for each whole block of `coarse` that `fine` holds
/// up to `fine_done` (seconds) and that was not built yet.
fn derive(
    w: &WriteTransaction,
    fine: Tier,
    coarse: Tier,
    fine_done: u64,
    ids: &[u32],
) -> Result<(), redb::Error> {
    let done_key = coarse.done_key();
    let mut start = match meta(w, &done_key)? {
        Some(s) => s,
        None => match meta(w, &fine.start_key())? {
            Some(from) => from - from % coarse.block,
            None => return Ok(()),
        },
    };
    while start + coarse.block <= fine_done {
        build_block(w, fine, coarse, start, ids, false)?;
        lower_start(w, coarse, start)?;
        start += coarse.block;
        set_meta(w, &done_key, start)?;
    }
    Ok(())
}

/// Drops `tier`'s blocks that end at or before `cutoff` (seconds); returns how many.
fn drop_before(
    w: &WriteTransaction,
    tier: Tier,
    cutoff: u64,
    ids: &[u32],
) -> Result<usize, redb::Error> {
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
    let mut table = w.open_table(tier.table)?;
    for &id in ids {
        table.retain_in((id, from)..=(id, last_start), |_, _| {
            dropped += 1;
            false
        })?;
    }
    drop(table);
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
    /// stored is under `target` bytes (or nothing is left to drop); returns blocks dropped.
    pub fn trim(&self, target: u64) -> Result<usize, StoreError> {
        let w = self.db.begin_write().map_err(redb::Error::from)?;
        let dropped = trim_in(&w, target).map_err(StoreError::Db)?;
        w.commit().map_err(redb::Error::from)?;
        Ok(dropped)
    }
}

fn seal_in(w: &WriteTransaction, until: u64, now_s: u64) -> Result<Sealed, redb::Error> {
    let starts = seal_rows(w, until)?;
    let s1_done = meta(w, &S1.done_key())?.unwrap_or(0).max(until);
    if let Some(&first) = starts.first() {
        set_meta(w, &S1.done_key(), s1_done)?;
        lower_start(w, S1, first)?;
    }
    let ids = ids(w)?;
    // Older seconds than the minutes already built (an import): those minutes, then hours, again.
    let minutes = rebuild(w, S1, M1, &starts, &ids)?;
    rebuild(w, M1, H1, &minutes, &ids)?;
    derive(w, S1, M1, s1_done, &ids)?;
    let m1_done = meta(w, &M1.done_key())?.unwrap_or(0);
    derive(w, M1, H1, m1_done, &ids)?;
    let mut dropped = 0;
    for tier in [S1, M1, H1] {
        // Never what the next tier has not been built from yet.
        let built = match tier.name {
            "s1" => m1_done,
            "m1" => meta(w, &H1.done_key())?.unwrap_or(0),
            _ => u64::MAX,
        };
        let cutoff = now_s.saturating_sub(tier.keep + tier.block).min(built);
        dropped += drop_before(w, tier, cutoff, &ids)?;
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
    let ids = ids(w)?;
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
        dropped += drop_before(w, tier, cutoff, &ids)?;
        let freed = u128::from(bytes) * u128::from(cutoff - from) / u128::from(span.max(1));
        excess = excess.saturating_sub(u64::try_from(freed).unwrap_or(u64::MAX));
    }
    Ok(dropped)
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
