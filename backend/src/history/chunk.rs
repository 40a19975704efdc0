//! A tier's blocks packed into chunks of about one 64 KiB page each (docs/history.md#the-store).
//!
//! redb gives each B-tree leaf a power-of-two run of 4 KiB pages. Stored one per key, a day of
//! minutes (about 5 KB) took a leaf of 8 KiB and an hour of seconds (about 2.8 KB) one of 4 KiB:
//! the file came to twice the data. Here the blocks of one block start, every series of it, go into
//! chunks filled up to just under 64 KiB, keyed by `(block start, first series id)`; each chunk
//! opens with a directory, so a read decodes only the series it wants.
//!
//! Layout: a version byte, the block count (u32 LE), then `(id, length)` (u32 LE each) per
//! block in ascending ids, then the blocks one after another.

use super::block::BlockError;
use redb::{ReadableTable, Table, TableDefinition};
use std::collections::BTreeMap;

/// A tier's table: `(block start in seconds, first series id of the chunk)` to a chunk.
pub type ChunkTable = TableDefinition<'static, (u64, u32), &'static [u8]>;

const VERSION: u8 = 1;
/// A chunk's size at most: one 64 KiB leaf with room for redb's leaf header and the key.
pub const CHUNK_MAX: usize = 65_536 - 128;
const HEAD: usize = 5;
const ENTRY: usize = 8;

/// The blocks of a chunk, by series id (ascending).
pub fn unpack(bytes: &[u8]) -> Result<Vec<(u32, &[u8])>, BlockError> {
    let short = || BlockError::Malformed("chunk truncated");
    let head = bytes.get(..HEAD).ok_or_else(short)?;
    if head[0] != VERSION {
        return Err(BlockError::Malformed("unknown chunk version"));
    }
    let n = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let dir_end = n
        .checked_mul(ENTRY)
        .and_then(|d| d.checked_add(HEAD))
        .ok_or_else(short)?;
    let dir = bytes.get(HEAD..dir_end).ok_or_else(short)?;
    let mut at = dir_end;
    let mut out = Vec::with_capacity(n);
    for e in dir.chunks_exact(ENTRY) {
        let id = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let len = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
        let end = at.checked_add(len).ok_or_else(short)?;
        out.push((id, bytes.get(at..end).ok_or_else(short)?));
        at = end;
    }
    if at != bytes.len() {
        return Err(BlockError::Malformed("chunk longer than its blocks"));
    }
    Ok(out)
}

/// `blocks` (by id) as chunks, each with the first id it holds: filled in id order up to
/// [`CHUNK_MAX`]; a block bigger than that is a chunk of its own.
pub fn pack(blocks: &BTreeMap<u32, Vec<u8>>) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut open: Vec<(u32, &[u8])> = Vec::new();
    let mut size = HEAD;
    let close = |open: &mut Vec<(u32, &[u8])>, out: &mut Vec<(u32, Vec<u8>)>| {
        if let Some(&(first, _)) = open.first() {
            let mut bytes = Vec::with_capacity(CHUNK_MAX);
            bytes.push(VERSION);
            bytes.extend((open.len() as u32).to_le_bytes());
            for (id, b) in open.iter() {
                bytes.extend(id.to_le_bytes());
                bytes.extend((b.len() as u32).to_le_bytes());
            }
            for (_, b) in open.iter() {
                bytes.extend_from_slice(b);
            }
            out.push((first, bytes));
            open.clear();
        }
    };
    for (&id, b) in blocks {
        if !open.is_empty() && size + ENTRY + b.len() > CHUNK_MAX {
            close(&mut open, &mut out);
            size = HEAD;
        }
        open.push((id, b));
        size += ENTRY + b.len();
    }
    close(&mut open, &mut out);
    out
}

/// Every block of the chunks at `start`, by id. A damaged chunk is left out (a gap; the
/// [`put_all`] that follows drops it, and says so in the log).
pub fn get_all(
    table: &impl ReadableTable<(u64, u32), &'static [u8]>,
    start: u64,
) -> Result<BTreeMap<u32, Vec<u8>>, redb::Error> {
    let mut out = BTreeMap::new();
    for entry in table.range((start, 0)..=(start, u32::MAX))? {
        let (key, chunk) = entry?;
        match unpack(chunk.value()) {
            Ok(blocks) => out.extend(blocks.into_iter().map(|(id, b)| (id, b.to_vec()))),
            Err(e) => tracing::warn!(
                start,
                first_id = key.value().1,
                error = %e,
                "history: a damaged chunk dropped as its block start is written again"
            ),
        }
    }
    Ok(out)
}

/// Replaces every chunk at `start` by `blocks` packed (none: the start is gone).
pub fn put_all(
    table: &mut Table<'_, (u64, u32), &'static [u8]>,
    start: u64,
    blocks: &BTreeMap<u32, Vec<u8>>,
) -> Result<(), redb::Error> {
    table.retain_in((start, 0)..=(start, u32::MAX), |_, _| false)?;
    for (first, bytes) in pack(blocks) {
        table.insert((start, first), bytes.as_slice())?;
    }
    Ok(())
}

/// Calls `f(start, id, block)` for each block of the starts in `[first, end)` whose id `want`
/// takes, in start order.
pub fn scan(
    table: &impl ReadableTable<(u64, u32), &'static [u8]>,
    first: u64,
    end: u64,
    want: impl Fn(u32) -> bool,
    mut f: impl FnMut(u64, u32, &[u8]),
) -> Result<(), redb::Error> {
    if first >= end {
        return Ok(());
    }
    for entry in table.range((first, 0)..(end, 0))? {
        let (key, chunk) = entry?;
        let start = key.value().0;
        if let Ok(blocks) = unpack(chunk.value()) {
            for (id, b) in blocks {
                if want(id) {
                    f(start, id, b);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fill_up_to_a_page_and_unpack_to_the_blocks() {
        let blocks: BTreeMap<u32, Vec<u8>> = (0..100u32)
            .map(|id| (id * 3, vec![id as u8; 2000 + id as usize]))
            .collect();
        let chunks = pack(&blocks);
        assert!(chunks.len() > 1);
        let mut back = BTreeMap::new();
        for (i, (first, bytes)) in chunks.iter().enumerate() {
            assert!(bytes.len() <= CHUNK_MAX, "{}", bytes.len());
            if i + 1 < chunks.len() {
                // Full but for less than one more block.
                assert!(bytes.len() > CHUNK_MAX - 2200, "{}", bytes.len());
            }
            let got = unpack(bytes).expect("unpacks");
            assert_eq!(got[0].0, *first);
            back.extend(got.into_iter().map(|(id, b)| (id, b.to_vec())));
        }
        assert_eq!(back, blocks);
        // A block bigger than a chunk is a chunk of its own.
        let big: BTreeMap<u32, Vec<u8>> = [(1, vec![1; 10]), (2, vec![2; 70_000]), (3, vec![3])]
            .into_iter()
            .collect();
        let chunks = pack(&big);
        assert_eq!(
            chunks.iter().map(|c| c.0).collect::<Vec<_>>(),
            [1, 2, 3],
            "each after the big one starts anew"
        );
        assert!(pack(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn damaged_chunks_are_errors_not_panics() {
        let blocks: BTreeMap<u32, Vec<u8>> =
            [(7, vec![1, 2, 3]), (9, vec![4])].into_iter().collect();
        let (_, bytes) = pack(&blocks).remove(0);
        for cut in 0..bytes.len() {
            assert!(unpack(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(unpack(&long).is_err());
        let mut huge = bytes;
        huge[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(unpack(&huge).is_err());
    }
}
