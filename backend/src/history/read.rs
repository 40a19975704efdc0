//! Reading a range: each series' points at the tier that fits the points asked for, stitched
//! from the finer tiers where the chosen one is not built yet and from coarser ones where it is
//! no longer kept, then the verdict segments and events of the range (docs/api.md#history).

use super::block;
use super::seal::roll_up;
use super::store::{Store, StoreError};
use super::tables::{
    EVENTS, ITEMS, META, ROW_SECONDS, ROWS, SEGMENTS, SHAPE_AT, SHAPES, TIERS, Tier,
    parse_item_key, samples,
};
use redb::{ReadTransaction, ReadableDatabase, ReadableTable};
use shared::rollup::Point;
use shared::series::Scope;
use std::collections::{HashMap, HashSet};

pub use shared::stored::{Answer, Piece, Segment, SeriesPoints};

/// Which series a read takes (every series by default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Wanted<'a> {
    /// Only these `scope:metric`s (`only=`).
    pub only: Option<&'a [(Scope, String)]>,
    /// Of the jobs' series, only this job's (`job=KEY`, [`shared::series::kept_for_job`]).
    pub job: Option<&'a str>,
}

/// Where a part of the range is read from.
#[derive(Clone, Copy)]
enum Source {
    Tier(Tier),
    /// The batch rows not sealed yet.
    Rows,
}

impl Source {
    fn step(self) -> u64 {
        match self {
            Source::Tier(t) => t.step,
            Source::Rows => 1,
        }
    }
}

fn meta(r: &ReadTransaction, key: &str) -> Result<Option<u64>, redb::Error> {
    match r.open_table(META) {
        Ok(t) => Ok(t.get(key)?.map(|v| v.value())),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The parts of `[from, to)` (seconds) and where each is read from, for points of `step`.
fn plan(
    r: &ReadTransaction,
    from: u64,
    to: u64,
    step: u64,
) -> Result<Vec<(Source, u64, u64)>, redb::Error> {
    // Each tier holds [from, done), its parts of a block not yet whole included; the rows hold
    // everything after the 1 s tier's done.
    let mut spans = Vec::new();
    // A tier's parts never reach past the whole blocks of the finer one they are built from (a
    // damaged or hand-made key must not hide newer data).
    let mut finer_done = u64::MAX;
    for tier in TIERS {
        let whole = meta(r, &tier.done_key())?.unwrap_or(0);
        let done = whole.max(meta(r, &tier.part_key())?.unwrap_or(0).min(finer_done));
        finer_done = whole;
        let start = meta(r, &tier.start_key())?.unwrap_or(done);
        spans.push((Source::Tier(tier), start, done));
    }
    let rows_from = spans[0].2;
    let target = TIERS.iter().rposition(|t| t.step <= step).unwrap_or(0);
    let mut parts = Vec::new();
    let mut push = |source: Source, a: u64, b: u64| {
        let (a, b) = (a.max(from), b.min(to));
        if a < b {
            parts.push((source, a, b));
        }
    };
    // Before the target tier's oldest block: the coarser tiers, newest first.
    let mut before = spans[target].1;
    for &(source, start, done) in &spans[target + 1..] {
        push(source, start, before.min(done));
        before = before.min(start);
    }
    // The target tier, then the finer ones after where it is built to, then the rows.
    let mut after = spans[target].1;
    for &(source, start, done) in spans[..=target].iter().rev() {
        push(source, start.max(after), done);
        after = after.max(done);
    }
    push(Source::Rows, rows_from.max(after), u64::MAX);
    parts.sort_by_key(|p| p.1);
    Ok(parts)
}

/// The points of `tier` in `[from, to)` of the series `want` takes, by id, each block rolled up
/// to `width` as it is decoded (so a read holds the answer's points, not every second of the
/// range; the answer's own roll-up merges a period that two blocks share). Decoding is most of a
/// long read's time, so blocks are copied out in batches of at most [`DECODE_BATCH_BYTES`] and
/// each batch is decoded on a few threads ([`decode_batch`]).
fn read_tier(
    r: &ReadTransaction,
    tier: Tier,
    from: u64,
    to: u64,
    want: &HashSet<u32>,
    width: u64,
) -> Result<HashMap<u32, Vec<(u64, Point)>>, redb::Error> {
    let mut out: HashMap<u32, Vec<(u64, Point)>> = HashMap::new();
    let table = match r.open_table(tier.table) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(out),
        Err(e) => return Err(e.into()),
    };
    let first = from - from % tier.block;
    let decode = |bytes: &[u8]| -> Vec<(u64, Point)> {
        // A damaged block is a gap, not a failed answer.
        block::decode(bytes).map_or_else(
            |_| Vec::new(),
            |points| {
                roll_up(
                    points.into_iter().filter(|(t, _)| *t >= from && *t < to),
                    width,
                )
            },
        )
    };
    // Blocks come in start order; each batch is decoded before the next is read, so every
    // series' points stay in time order and a read copies at most one batch.
    let mut batch: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut batch_bytes = 0;
    let flush = |batch: &mut Vec<(u32, Vec<u8>)>, out: &mut HashMap<u32, Vec<(u64, Point)>>| {
        for (id, points) in decode_batch(std::mem::take(batch), &decode) {
            out.entry(id).or_default().extend(points);
        }
    };
    super::chunk::scan(
        &table,
        first,
        to,
        |id| want.contains(&id),
        |_, id, bytes| {
            batch.push((id, bytes.to_vec()));
            batch_bytes += bytes.len();
            if batch_bytes >= DECODE_BATCH_BYTES {
                flush(&mut batch, &mut out);
                batch_bytes = 0;
            }
        },
    )?;
    flush(&mut batch, &mut out);
    Ok(out)
}

/// Bytes of blocks copied out of the store at once by a read.
const DECODE_BATCH_BYTES: usize = 4 << 20;
/// Threads one batch is decoded on at most (the calling thread among them).
const DECODE_THREADS: usize = 8;
/// Helper threads all reads together may have at once: past it a batch is decoded on fewer,
/// down to the calling thread alone, so concurrent reads never multiply threads.
const DECODE_HELPERS: usize = 8;
/// Bytes of blocks below which the calling thread decodes them all (a thread costs tens of
/// µs). The tests split at any size and on any core count, so every read of theirs with two
/// series or more takes the threaded path.
const DECODE_SPLIT_BYTES: usize = if cfg!(test) { 1 } else { 256 << 10 };

/// Helper threads in use by all reads.
static HELPERS_IN_USE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Up to `want` helper threads taken from [`DECODE_HELPERS`], given back on drop.
struct Helpers(usize);

impl Helpers {
    fn take(want: usize) -> Helpers {
        use std::sync::atomic::Ordering;
        let mut got = 0;
        let _ = HELPERS_IN_USE.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            got = want.min(DECODE_HELPERS.saturating_sub(used));
            Some(used + got)
        });
        Helpers(got)
    }
}

impl Drop for Helpers {
    fn drop(&mut self) {
        HELPERS_IN_USE.fetch_sub(self.0, std::sync::atomic::Ordering::AcqRel);
    }
}

/// `blocks` (in start order) decoded by `decode`, by id, each series' points in block order:
/// on the calling thread and as many helpers as the batch's size, the cores and
/// [`DECODE_HELPERS`] allow, each taking whole series. A helper that cannot be started leaves
/// its part to the calling thread.
fn decode_batch(
    mut blocks: Vec<(u32, Vec<u8>)>,
    decode: &(impl Fn(&[u8]) -> Vec<(u64, Point)> + Sync),
) -> HashMap<u32, Vec<(u64, Point)>> {
    let decode_part = |part: &[(u32, Vec<u8>)]| {
        let mut out: HashMap<u32, Vec<(u64, Point)>> = HashMap::new();
        for (id, bytes) in part {
            out.entry(*id).or_default().extend(decode(bytes));
        }
        out
    };
    let bytes: usize = blocks.iter().map(|(_, b)| b.len()).sum();
    let cores = if cfg!(test) {
        DECODE_THREADS
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
    let wanted = cores
        .min(DECODE_THREADS)
        .min(bytes / DECODE_SPLIT_BYTES)
        .max(1);
    let helpers = Helpers::take(wanted - 1);
    if helpers.0 == 0 {
        return decode_part(&blocks);
    }
    // Stable: each series' blocks stay in start order.
    blocks.sort_by_key(|(id, _)| *id);
    let parts = split_by_series(&blocks, helpers.0 + 1);
    let mut out = HashMap::new();
    std::thread::scope(|s| {
        let mut running = Vec::new();
        let mut here = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let started = (i > 0)
                .then(|| {
                    std::thread::Builder::new()
                        .name("vramio-decode".into())
                        .spawn_scoped(s, || decode_part(part))
                        .ok()
                })
                .flatten();
            match started {
                Some(h) => running.push(h),
                None => here.push(*part),
            }
        }
        for part in here {
            out.extend(decode_part(part));
        }
        for h in running {
            // A panic is passed on as if decoded here (decode returns errors; it should not).
            out.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
    });
    drop(helpers);
    out
}

/// `blocks` (sorted by id) cut into at most `n` runs of about equal bytes, never inside a
/// series.
fn split_by_series(blocks: &[(u32, Vec<u8>)], n: usize) -> Vec<&[(u32, Vec<u8>)]> {
    let total: usize = blocks.iter().map(|(_, b)| b.len()).sum();
    let share = total.div_ceil(n.max(1)).max(1);
    let mut out = Vec::with_capacity(n);
    let (mut start, mut acc) = (0, 0);
    for i in 0..blocks.len() {
        acc += blocks[i].1.len();
        let last_of_series = blocks.get(i + 1).is_none_or(|next| next.0 != blocks[i].0);
        if acc >= share && last_of_series && out.len() + 1 < n {
            out.push(&blocks[start..=i]);
            start = i + 1;
            acc = 0;
        }
    }
    if start < blocks.len() {
        out.push(&blocks[start..]);
    }
    out
}

/// The rows' samples in `[from, to)` of the series `want` takes, by id, as 1 s points.
fn read_rows(
    r: &ReadTransaction,
    from: u64,
    to: u64,
    want: &HashSet<u32>,
) -> Result<HashMap<u32, Vec<(u64, Point)>>, redb::Error> {
    let mut out: HashMap<u32, Vec<(u64, Point)>> = HashMap::new();
    let table = match r.open_table(ROWS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(out),
        Err(e) => return Err(e.into()),
    };
    let first = from - from % ROW_SECONDS;
    for entry in table.range(first..to)? {
        let (_, row) = entry?;
        for (t_ms, values) in samples(row.value()) {
            let t = t_ms / 1000;
            if t < from || t >= to {
                continue;
            }
            for (id, v) in values {
                if v.is_finite() && want.contains(&id) {
                    out.entry(id).or_default().push((
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
    for points in out.values_mut() {
        points.sort_by_key(|(t, _)| *t);
    }
    Ok(out)
}

impl Store {
    /// Every series with a point in `[from_ms, to_ms)`, at most about `points` points each.
    pub fn read(&self, from_ms: u64, to_ms: u64, points: usize) -> Result<Answer, StoreError> {
        self.read_only(from_ms, to_ms, points, Wanted::default(), true)
    }

    /// [`Store::read`] of the series `wanted` takes; the segments' findings only with
    /// `findings` (left unparsed otherwise: a week of them is megabytes).
    pub fn read_only(
        &self,
        from_ms: u64,
        to_ms: u64,
        points: usize,
        wanted: Wanted<'_>,
        findings: bool,
    ) -> Result<Answer, StoreError> {
        let r = self.db.begin_read().map_err(redb::Error::from)?;
        read_in(
            &r,
            from_ms,
            to_ms.max(from_ms + 1),
            points.clamp(1, 20_000),
            wanted,
            findings,
        )
        .map_err(StoreError::Db)
    }
}

fn read_in(
    r: &ReadTransaction,
    from_ms: u64,
    to_ms: u64,
    points: usize,
    Wanted { only, job }: Wanted<'_>,
    findings: bool,
) -> Result<Answer, redb::Error> {
    let (from, to) = (from_ms / 1000, to_ms.div_ceil(1000));
    let wanted = ((to - from) / points as u64).max(1);
    let parts = plan(r, from, to, wanted)?;
    let step = parts
        .iter()
        .filter(|(s, _, _)| !matches!(s, Source::Rows))
        .map(|(s, _, _)| s.step())
        .min()
        .unwrap_or(1);
    // Points as wide as asked, in whole multiples of the finest tier read.
    let width = wanted.div_ceil(step).max(1) * step;
    let items = match r.open_table(ITEMS) {
        Ok(t) => {
            let mut v = Vec::new();
            for entry in t.iter()? {
                let (k, base) = entry?;
                if let Some((scope, item)) = parse_item_key(k.value())
                    && shared::series::kept_for_job(job, scope, &item)
                {
                    v.push((scope, item, base.value()));
                }
            }
            v
        }
        Err(redb::TableError::TableDoesNotExist(_)) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let wanted_metric = |scope: Scope, name: &str| {
        only.is_none_or(|o| o.iter().any(|(s, m)| *s == scope && m == name))
    };
    let want: HashSet<u32> = items
        .iter()
        .flat_map(|(scope, _, base)| {
            scope
                .metrics()
                .iter()
                .enumerate()
                .filter(|(_, m)| wanted_metric(*scope, m.name))
                .map(move |(i, _)| base.saturating_add(i as u32))
        })
        .collect();
    let mut rows = if parts.iter().any(|p| matches!(p.0, Source::Rows)) {
        let (_, a, b) = parts
            .iter()
            .find(|p| matches!(p.0, Source::Rows))
            .copied()
            .unwrap_or((Source::Rows, 0, 0));
        read_rows(r, a, b, &want)?
    } else {
        HashMap::new()
    };
    let mut series = Vec::new();
    // Each tier's part read once for every series wanted.
    let mut from_tiers = Vec::new();
    for &(source, a, b) in &parts {
        from_tiers.push(match source {
            Source::Tier(tier) => Some(read_tier(r, tier, a, b, &want, width)?),
            Source::Rows => None,
        });
    }
    for (scope, item, base) in items {
        for (i, metric) in scope.metrics().iter().enumerate() {
            if !wanted_metric(scope, metric.name) {
                continue;
            }
            let id = base.saturating_add(i as u32);
            let mut pts: Vec<(u64, Point)> = Vec::new();
            for read in &mut from_tiers {
                // Each series is taken once: moved, not copied.
                let part = match read {
                    Some(by_id) => by_id.remove(&id),
                    None => rows.remove(&id),
                };
                match part {
                    Some(part) if pts.is_empty() => pts = part,
                    Some(part) => pts.extend(part),
                    None => {}
                }
            }
            if pts.is_empty() {
                continue;
            }
            series.push(SeriesPoints {
                scope,
                item: item.clone(),
                metric: metric.name.to_owned(),
                unit: metric.unit,
                points: roll_up(pts, width)
                    .into_iter()
                    .map(|(t, p)| (t.saturating_mul(1000), p.min, p.mean, p.max))
                    .collect(),
            });
        }
    }
    series.sort_by(|a, b| (a.scope, &a.item, &a.metric).cmp(&(b.scope, &b.item, &b.metric)));
    Ok(Answer {
        from_ms,
        to_ms,
        step_ms: width * 1000,
        tiers: parts
            .iter()
            .map(|&(s, a, b)| Piece {
                from_ms: a.saturating_mul(1000),
                to_ms: b.min(to).saturating_mul(1000),
                step_ms: s.step() * 1000,
            })
            .collect(),
        series,
        segments: segments(r, from_ms, to_ms, findings)?,
        events: events(r, from_ms, to_ms)?,
        notices: Vec::new(),
    })
}

/// Shapes read at most for [`Store::users`].
const MAX_SHAPES_READ: usize = 1000;

impl Store {
    /// The users named by the shapes in force during `[from_ms, to_ms)` (to hide them from a
    /// share link that does not show users).
    pub fn users(&self, from_ms: u64, to_ms: u64) -> Result<Vec<String>, StoreError> {
        let r = self.db.begin_read().map_err(redb::Error::from)?;
        users_in(&r, from_ms, to_ms).map_err(StoreError::Db)
    }
}

fn users_in(r: &ReadTransaction, from_ms: u64, to_ms: u64) -> Result<Vec<String>, redb::Error> {
    let (at, shapes) = match (r.open_table(SHAPE_AT), r.open_table(SHAPES)) {
        (Ok(a), Ok(s)) => (a, s),
        (Err(redb::TableError::TableDoesNotExist(_)), _)
        | (_, Err(redb::TableError::TableDoesNotExist(_))) => return Ok(Vec::new()),
        (Err(e), _) | (_, Err(e)) => return Err(e.into()),
    };
    let mut hashes = Vec::new();
    if let Some(entry) = at.range(..from_ms)?.next_back() {
        hashes.push(entry?.1.value());
    }
    for entry in at.range(from_ms..to_ms)?.take(MAX_SHAPES_READ) {
        hashes.push(entry?.1.value());
    }
    hashes.sort_unstable();
    hashes.dedup();
    let mut users = Vec::new();
    for h in hashes {
        if let Some(json) = shapes.get(h)?
            && let Ok(frame) = serde_json::from_slice::<shared::Frame>(json.value())
        {
            users.extend(frame.users().map(str::to_owned));
        }
    }
    users.sort_unstable();
    users.dedup();
    Ok(users)
}

/// A segment without its findings, read without building them.
#[derive(serde::Deserialize)]
struct SegmentHead {
    from_ms: u64,
    to_ms: u64,
    verdict: shared::diagnosis::Verdict,
    severity: shared::diagnosis::Severity,
}

/// The segments that overlap `[from_ms, to_ms)`, with their findings where `findings`.
fn segments(
    r: &ReadTransaction,
    from_ms: u64,
    to_ms: u64,
    findings: bool,
) -> Result<Vec<Segment>, redb::Error> {
    let table = match r.open_table(SEGMENTS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for entry in table.range(..to_ms)?.rev() {
        let (_, json) = entry?;
        let seg = if findings {
            serde_json::from_slice::<Segment>(json.value()).ok()
        } else {
            serde_json::from_slice::<SegmentHead>(json.value())
                .ok()
                .map(|h| Segment {
                    from_ms: h.from_ms,
                    to_ms: h.to_ms,
                    verdict: h.verdict,
                    severity: h.severity,
                    findings: Vec::new(),
                })
        };
        let Some(seg) = seg else {
            continue;
        };
        if seg.to_ms < from_ms {
            break;
        }
        out.push(seg);
    }
    out.reverse();
    Ok(out)
}

fn events(
    r: &ReadTransaction,
    from_ms: u64,
    to_ms: u64,
) -> Result<Vec<serde_json::Value>, redb::Error> {
    let table = match r.open_table(EVENTS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for entry in table.range((from_ms, 0)..(to_ms, 0))? {
        let (_, json) = entry?;
        if let Ok(v) = serde_json::from_slice(json.value()) {
            out.push(v);
        }
        if out.len() >= 10_000 {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of about equal bytes, as many as asked at most, never cutting a series, and
    /// together the blocks in their order.
    #[test]
    fn blocks_are_split_by_whole_series() {
        let blocks: Vec<(u32, Vec<u8>)> =
            [(1, 10), (1, 10), (2, 50), (3, 5), (3, 5), (3, 5), (7, 30)]
                .into_iter()
                .map(|(id, n)| (id, vec![0u8; n]))
                .collect();
        for n in 1..=8 {
            let parts = split_by_series(&blocks, n);
            assert!(
                !parts.is_empty() && parts.len() <= n,
                "{n}: {}",
                parts.len()
            );
            let joined: Vec<_> = parts.iter().flat_map(|p| p.iter()).cloned().collect();
            assert_eq!(joined, blocks, "{n}");
            for w in parts.windows(2) {
                assert_ne!(
                    w[0].last().map(|b| b.0),
                    w[1].first().map(|b| b.0),
                    "{n}: a series cut"
                );
            }
        }
        assert_eq!(split_by_series(&blocks, 2).len(), 2);
        assert!(split_by_series(&[], 4).is_empty());
    }

    /// Decoded on helpers, a batch gives what one thread gives: every series, its points in
    /// block order; a damaged block is a gap.
    #[test]
    fn a_batch_decodes_on_helpers_as_on_one_thread() {
        let point = |v: f64| Point {
            min: v,
            mean: v,
            max: v,
            samples: 1,
        };
        let mut blocks = Vec::new();
        for start in 0..4u64 {
            for id in [3u32, 1, 9, 4, 7] {
                let points: Vec<(u64, Point)> = (0..60)
                    .map(|i| {
                        (
                            start * 60 + i,
                            point((id as u64 * 1000 + start * 60 + i) as f64),
                        )
                    })
                    .collect();
                blocks.push((id, block::encode(&points).expect("encodes")));
            }
        }
        blocks.push((4, b"damaged".to_vec()));
        let decode = |bytes: &[u8]| block::decode(bytes).unwrap_or_default();
        let mut one: HashMap<u32, Vec<(u64, Point)>> = HashMap::new();
        for (id, bytes) in &blocks {
            one.entry(*id).or_default().extend(decode(bytes));
        }
        let many = decode_batch(blocks, &decode);
        assert_eq!(many, one);
        assert!(
            many.values()
                .all(|p| p.len() == 240 && p.windows(2).all(|w| w[0].0 < w[1].0))
        );
    }
}
