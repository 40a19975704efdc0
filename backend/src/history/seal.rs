//! Sealing: batch rows into 1 s blocks, 1 s blocks into 1 min blocks, 1 min into 1 h, the
//! tiers' retention and the size cap (docs/history.md#the-store). Each step is a function of
//! what is stored, so a step a crash interrupted is simply done again at the next seal.

use super::block;
use super::store::{Store, StoreError};
use super::tables::{H1, ITEMS, M1, META, ROWS, S1, SEGMENTS, SHAPE_AT, Tier, samples};
use redb::{ReadableTable, WriteTransaction};
use shared::rollup::{Point, Roll};
use std::collections::BTreeMap;

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

/// Moves every row of a window before `until_s` into 1 s blocks.
fn seal_rows(w: &WriteTransaction, until_s: u64) -> Result<usize, redb::Error> {
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
    let blocks = per.len();
    for ((id, start), mut points) in per {
        points.sort_by_key(|(t, _)| *t);
        merge_into(w, S1, id, start, roll_up(points, 1))?;
    }
    Ok(blocks)
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
            if !points.is_empty() {
                merge_into(w, coarse, id, start, roll_up(points, coarse.step))?;
            }
        }
        if meta(w, &coarse.start_key())?.is_none() {
            set_meta(w, &coarse.start_key(), start)?;
        }
        start = end;
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
    let from = meta(w, &tier.start_key())?.unwrap_or(0);
    let last_start = cutoff.saturating_sub(tier.block);
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
    /// Seals the rows of every 10-minute block that ended by `now_s`, builds the coarser tiers
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
    let first_row = w.open_table(ROWS)?.first()?.map(|(k, _)| k.value());
    let blocks = seal_rows(w, until)?;
    let s1_done = meta(w, &S1.done_key())?.unwrap_or(0).max(until);
    if blocks > 0 {
        set_meta(w, &S1.done_key(), s1_done)?;
        if meta(w, &S1.start_key())?.is_none()
            && let Some(first) = first_row
        {
            set_meta(w, &S1.start_key(), first - first % S1.block)?;
        }
    }
    let ids = ids(w)?;
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
    w.open_table(SEGMENTS)?
        .retain_in(..cutoff_ms, |_, _| false)?;
    w.open_table(SHAPE_AT)?
        .retain_in(..cutoff_ms, |_, _| false)?;
    Ok(Sealed { blocks, dropped })
}

fn stored(w: &WriteTransaction) -> Result<u64, redb::Error> {
    let s = w.stats()?;
    // Live data only: pages freed by a drop are reused by the next writes.
    Ok(s.stored_bytes() + s.metadata_bytes())
}

fn trim_in(w: &WriteTransaction, target: u64) -> Result<usize, redb::Error> {
    let ids = ids(w)?;
    let mut dropped = 0;
    for tier in [S1, M1, H1] {
        while stored(w)? > target {
            let Some(from) = meta(w, &tier.start_key())? else {
                break;
            };
            let done = meta(w, &tier.done_key())?.unwrap_or(0);
            if from >= done {
                break;
            }
            let cutoff = (from + 3600).max(from + tier.block).min(done);
            dropped += drop_before(w, tier, cutoff, &ids)?;
        }
    }
    Ok(dropped)
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
