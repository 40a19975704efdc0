//! Fuzz target `recording`: a recording's text through `ndjson::parse` (what `check --from` and
//! `import` read), each frame that parses written back with `ndjson::write_frame` and parsed
//! again (it must come back equal), and the frames through `ndjson::last_window` and the
//! diagnosis `check --from` runs on them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::diagnosis::{Thresholds, diagnose};
use std::time::Duration;
use vramio::ndjson::{last_window, parse, write_frame};

/// Frames diagnosed per input: enough for every rule's window, few enough to stay fast.
const DIAGNOSE_AT_MOST: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse(text);
    for frame in &parsed.frames {
        let mut line = Vec::new();
        write_frame(&mut line, frame).expect("writing to memory does not fail");
        let again = parse(std::str::from_utf8(&line).expect("a frame is written as UTF-8"));
        assert!(again.bad_lines.is_empty(), "{:?}", again.bad_lines);
        assert_eq!(again.frames.as_slice(), std::slice::from_ref(frame));
    }
    let frames = last_window(parsed.frames, Duration::from_secs(900));
    let newest = frames.len().saturating_sub(DIAGNOSE_AT_MOST);
    let _ = diagnose(&frames[newest..], &Thresholds::default(), None);
});
