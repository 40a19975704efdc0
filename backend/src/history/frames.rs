//! Stored moments as frames again (docs/history.md#rewind-and-export): each point time of a range
//! rebuilt from the shape in force then and every series' value
//! ([`shared::series::rebuild`]), for a rewind (the diagnosis at a moment) and for an NDJSON or
//! CSV export.

use super::read::Answer;
use super::store::{Store, StoreError};
use super::tables::{SHAPE_AT, SHAPES};
use redb::ReadableDatabase;
use shared::Frame;
use shared::series::{Scope, rebuild};
use std::collections::{BTreeMap, HashMap};

/// The most points a rebuild or an export reads per series.
pub const MAX_POINTS: usize = 200_000;

/// The shapes in force over `[from_ms, to_ms)`: from when each held.
fn shapes(store: &Store, from_ms: u64, to_ms: u64) -> Result<Vec<(u64, Frame)>, StoreError> {
    let r = store.db.begin_read().map_err(redb::Error::from)?;
    let (at, shapes) = match (r.open_table(SHAPE_AT), r.open_table(SHAPES)) {
        (Ok(a), Ok(s)) => (a, s),
        _ => return Ok(Vec::new()),
    };
    let mut starts: Vec<(u64, u64)> = Vec::new();
    let before = at.range(..=from_ms).map_err(redb::Error::from)?.next_back();
    if let Some(entry) = before {
        let (k, v) = entry.map_err(redb::Error::from)?;
        starts.push((k.value(), v.value()));
    }
    for entry in at.range(from_ms + 1..to_ms).map_err(redb::Error::from)? {
        let (k, v) = entry.map_err(redb::Error::from)?;
        starts.push((k.value(), v.value()));
    }
    let mut parsed: HashMap<u64, Option<Frame>> = HashMap::new();
    let mut out = Vec::new();
    for (t, hash) in starts {
        if let std::collections::hash_map::Entry::Vacant(e) = parsed.entry(hash) {
            let frame = shapes
                .get(hash)
                .map_err(redb::Error::from)?
                .and_then(|json| serde_json::from_slice::<Frame>(json.value()).ok());
            e.insert(frame);
        }
        if let Some(Some(frame)) = parsed.get(&hash) {
            out.push((t, frame.clone()));
        }
    }
    Ok(out)
}

/// Each point time of `answer` with every series' mean there.
fn by_time(answer: &Answer) -> BTreeMap<u64, HashMap<(Scope, &str, usize), f64>> {
    let mut out: BTreeMap<u64, HashMap<(Scope, &str, usize), f64>> = BTreeMap::new();
    for s in &answer.series {
        let Some(i) = s.scope.metric(&s.metric) else {
            continue;
        };
        for &(t, _, mean, _) in &s.points {
            out.entry(t)
                .or_default()
                .insert((s.scope, s.item.as_str(), i), mean);
        }
    }
    out
}

/// The frames of `[from_ms, to_ms)` at the finest resolution kept, at most `max` of them (the
/// newest), and the width of one in ms. A moment before the first shape has no frame.
pub fn frames(
    store: &Store,
    from_ms: u64,
    to_ms: u64,
    max: usize,
) -> Result<(Vec<Frame>, u64), StoreError> {
    let points = usize::try_from(to_ms.saturating_sub(from_ms) / 1000)
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_POINTS);
    let answer = store.read(from_ms, to_ms, points)?;
    let shapes = shapes(store, from_ms, to_ms)?;
    let values = by_time(&answer);
    let skip = values.len().saturating_sub(max);
    let mut frames = Vec::with_capacity(values.len() - skip);
    for (t, v) in values.into_iter().skip(skip) {
        let at = shapes.partition_point(|(s, _)| *s <= t);
        let Some((_, shape)) = at.checked_sub(1).and_then(|i| shapes.get(i)) else {
            continue;
        };
        let mut f = rebuild(shape, t, |scope, item, i| v.get(&(scope, item, i)).copied());
        f.seq = frames.len() as u64 + 1;
        f.interval_ms = answer.step_ms;
        frames.push(f);
    }
    Ok((frames, answer.step_ms))
}

/// `[from_ms, to_ms)` as CSV: `t_ms`, the time in RFC 3339, then one column per series
/// (`scope:item:metric`, its unit in brackets) holding its mean; empty where it has no value.
pub fn csv(store: &Store, from_ms: u64, to_ms: u64) -> Result<String, StoreError> {
    let points = usize::try_from(to_ms.saturating_sub(from_ms) / 1000)
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_POINTS);
    let answer = store.read(from_ms, to_ms, points)?;
    let mut out = String::from("t_ms,time");
    for s in &answer.series {
        let unit = serde_json::to_value(s.unit)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        out.push(',');
        out.push_str(&csv_field(&format!(
            "{}:{}:{} [{unit}]",
            s.scope.id(),
            s.item,
            s.metric
        )));
    }
    out.push('\n');
    let mut times: Vec<u64> = answer
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    times.sort_unstable();
    times.dedup();
    let mut cursors = vec![0usize; answer.series.len()];
    for t in times {
        out.push_str(&t.to_string());
        out.push(',');
        out.push_str(
            &humantime::format_rfc3339_millis(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(t),
            )
            .to_string(),
        );
        for (s, c) in answer.series.iter().zip(cursors.iter_mut()) {
            out.push(',');
            if let Some(p) = s.points.get(*c).filter(|p| p.0 == t) {
                out.push_str(&p.2.to_string());
                *c += 1;
            }
        }
        out.push('\n');
    }
    Ok(out)
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// `[from_ms, to_ms)` as NDJSON frames (what `vramio record` writes, which `vramio replay` and
/// `check --from` read).
pub fn ndjson(store: &Store, from_ms: u64, to_ms: u64) -> Result<String, StoreError> {
    let (frames, _) = frames(store, from_ms, to_ms, MAX_POINTS)?;
    let mut out = String::new();
    for f in frames {
        if let Ok(line) = serde_json::to_string(&f) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    Ok(out)
}
