//! Fuzz target `history_store`: what the history reads back from its file, which a damaged disk
//! or another program may have changed: a chunk of blocks (`chunk::unpack`, and a chunk that
//! unpacks packs again to the same bytes), a block of one series (`block::decode`, and a block
//! that decodes encodes again to the same points), a batch row (`tables::samples`), an item key
//! (`tables::parse_item_key`); and what a request names: `only=` (`parse_only`) and a time of
//! `vramio history export` (`parse_time`). None may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramio::history::{block, chunk, parse_only, tables};

fuzz_target!(|data: &[u8]| {
    if let Ok(blocks) = chunk::unpack(data) {
        let ids: Vec<u32> = blocks.iter().map(|(id, _)| *id).collect();
        // Packed again when the ids ascend without repeats (what `pack` writes) and fit one chunk.
        if ids.windows(2).all(|w| w[0] < w[1]) && data.len() <= chunk::CHUNK_MAX {
            let map = blocks.iter().map(|(id, b)| (*id, b.to_vec())).collect();
            let again = chunk::pack(&map);
            if !ids.is_empty() {
                assert_eq!(again.len(), 1);
                assert_eq!(again[0].1, data);
            }
        }
    }
    if let Ok(points) = block::decode(data)
        && !points.is_empty()
        && points.iter().all(|(_, p)| p.mean.is_finite() && p.min.is_finite() && p.max.is_finite())
    {
        let again = block::encode(&points).expect("decoded points encode");
        assert_eq!(block::decode(&again).expect("and decode"), points);
    }
    for (_, values) in tables::samples(data) {
        for _ in values {}
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = tables::parse_item_key(text);
    let _ = parse_only(text);
    let _ = vramio::cli::history::parse_time(text, 1_764_504_200_000);
});
