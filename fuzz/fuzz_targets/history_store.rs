//! Fuzz target `history_store`: what the history reads back from its file, which a damaged disk
//! or another program may have changed: a block of one series (`block::decode`, and a block that
//! decodes encodes again to the same points), a batch row (`tables::samples`), an item key
//! (`tables::parse_item_key`); and what a request names: `only=` (`parse_only`) and a time of
//! `vramio history export` (`parse_time`). None may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramio::history::{block, parse_only, tables};

fuzz_target!(|data: &[u8]| {
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
