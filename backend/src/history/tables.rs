//! The history file's tables, its tiers, and the encoding of a batch row
//! (docs/history.md#the-store).

use redb::TableDefinition;

/// The store's format; a file with a higher one was written by a newer vramio, one with a lower
/// one by an earlier build (format 1 kept one block per key, before [`super::chunk`]).
pub const FORMAT: u64 = 2;

/// `format`, and how far each tier is built (`s1_done`, `m1_done`, `h1_done`: the end, in
/// seconds, of what its whole blocks hold; `m1_part`, `h1_part`: how far the parts of the block
/// not yet whole reach; `*_from`: the start of its oldest block kept).
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// `["scope","item"]` (JSON) to the id of its first metric; metric `i` is id `base + i`.
pub const ITEMS: TableDefinition<&str, u32> = TableDefinition::new("items");
/// Samples not yet sealed into 1 s blocks, by the 10 s window (start, in seconds) they fall in.
pub const ROWS: TableDefinition<u64, &[u8]> = TableDefinition::new("rows");
/// A frame's shape (JSON), by [`shared::series::shape_hash`].
pub const SHAPES: TableDefinition<u64, &[u8]> = TableDefinition::new("shapes");
/// From when (ms) a shape held.
pub const SHAPE_AT: TableDefinition<u64, u64> = TableDefinition::new("shape_at");
/// Verdict segments (JSON), by start (ms).
pub const SEGMENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("segments");
/// Events (JSON), by time (ms) and a number within that millisecond.
pub const EVENTS: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("events");

/// One resolution of the history.
#[derive(Clone, Copy)]
pub struct Tier {
    pub name: &'static str,
    /// Seconds a point covers.
    pub step: u64,
    /// Seconds a block covers (whole blocks start at multiples of it; the parts of one not yet
    /// whole start at the finer tier's blocks).
    pub block: u64,
    /// Seconds it is kept at least.
    pub keep: u64,
    /// Its blocks, packed in chunks ([`super::chunk`]).
    pub table: super::chunk::ChunkTable,
}

const DAY: u64 = 86_400;

/// 1 s points in 1-hour blocks, kept 48 h.
pub const S1: Tier = Tier {
    name: "s1",
    step: 1,
    block: 3600,
    keep: 2 * DAY,
    table: TableDefinition::new("s1"),
};
/// 1 min points in 1-day blocks, kept 30 days.
pub const M1: Tier = Tier {
    name: "m1",
    step: 60,
    block: DAY,
    keep: 30 * DAY,
    table: TableDefinition::new("m1"),
};
/// 1 h points in 7-day blocks, kept a year.
pub const H1: Tier = Tier {
    name: "h1",
    step: 3600,
    block: 7 * DAY,
    keep: 366 * DAY,
    table: TableDefinition::new("h1"),
};
/// Finest first.
pub const TIERS: [Tier; 3] = [S1, M1, H1];
/// Seconds a batch row covers.
pub const ROW_SECONDS: u64 = 10;

impl Tier {
    pub fn done_key(&self) -> String {
        format!("{}_done", self.name)
    }
    pub fn start_key(&self) -> String {
        format!("{}_from", self.name)
    }
    /// Where this tier's parts of a block not yet whole reach (`seal::derive_parts`).
    pub fn part_key(&self) -> String {
        format!("{}_part", self.name)
    }
}

/// The key of an item in [`ITEMS`].
pub fn item_key(scope: shared::series::Scope, item: &str) -> String {
    serde_json::to_string(&(scope.id(), item)).unwrap_or_default()
}

/// The scope and item of an [`ITEMS`] key.
pub fn parse_item_key(key: &str) -> Option<(shared::series::Scope, String)> {
    let (scope, item): (String, String) = serde_json::from_str(key).ok()?;
    Some((shared::series::Scope::from_id(&scope)?, item))
}

/// Appends one sample (its time and its measured values by series id) to a row.
pub fn push_sample(row: &mut Vec<u8>, t_ms: u64, values: &[(u32, f64)]) {
    row.extend(t_ms.to_le_bytes());
    row.extend((values.len() as u32).to_le_bytes());
    for (id, v) in values {
        row.extend(id.to_le_bytes());
        row.extend(v.to_le_bytes());
    }
}

/// The samples of a row, each as its time and `(id, value)`s; a damaged tail ends the list.
pub fn samples(row: &[u8]) -> impl Iterator<Item = (u64, impl Iterator<Item = (u32, f64)> + '_)> {
    let mut rest = row;
    std::iter::from_fn(move || {
        if rest.len() < 12 {
            return None;
        }
        let t_ms = u64::from_le_bytes(rest[..8].try_into().ok()?);
        let n = u32::from_le_bytes(rest[8..12].try_into().ok()?) as usize;
        let body = rest.get(12..12 + n.checked_mul(12)?)?;
        rest = &rest[12 + n * 12..];
        Some((
            t_ms,
            body.chunks_exact(12).map(|c| {
                (
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                    f64::from_le_bytes([c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11]]),
                )
            }),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_and_a_cut_row_ends_early() {
        let mut row = Vec::new();
        push_sample(&mut row, 1000, &[(1, 2.5), (7, -1.0)]);
        push_sample(&mut row, 2000, &[]);
        push_sample(&mut row, 3000, &[(3, f64::MAX)]);
        let all: Vec<(u64, Vec<(u32, f64)>)> =
            samples(&row).map(|(t, v)| (t, v.collect())).collect();
        assert_eq!(
            all,
            vec![
                (1000, vec![(1, 2.5), (7, -1.0)]),
                (2000, vec![]),
                (3000, vec![(3, f64::MAX)])
            ]
        );
        for cut in 0..row.len() {
            assert!(samples(&row[..cut]).count() <= 3);
        }
        let mut huge = Vec::new();
        huge.extend(5u64.to_le_bytes());
        huge.extend(u32::MAX.to_le_bytes());
        assert_eq!(samples(&huge).count(), 0);
    }

    #[test]
    fn item_keys_round_trip_whatever_the_item_holds() {
        use shared::series::Scope;
        for item in ["", "0", "/mnt/a \"b\"", "slurm:1:0@0 (MIG 1/0)", "\u{1f}x"] {
            let key = item_key(Scope::Mount, item);
            assert_eq!(parse_item_key(&key), Some((Scope::Mount, item.to_owned())));
        }
        assert_eq!(parse_item_key("[\"nope\",\"x\"]"), None);
    }
}
