//! Fuzz target `config_files`: the files and flags a person writes for a hub and a check: the
//! peers file (`peers::spec::parse_peers_file`), each of its lines as a `--peer`
//! (`PeerSpec::parse`) and the thresholds file (`cli::thresholds_file::parse_thresholds`, TOML or
//! JSON). Round trips: a peer that parses, printed, parses back equal, and so does a peers line;
//! thresholds that parse, as JSON, parse back equal. Parsed thresholds then drive a diagnosis of
//! a fixed window, as `--thresholds` does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::Frame;
use shared::diagnosis::diagnose;
use std::sync::OnceLock;
use vramio::cli::thresholds_file::parse_thresholds;
use vramio::peers::spec::{PeerSpec, parse_peers_file};

/// A minute of one host: the golden `frame` message's frame, once a second.
fn window() -> &'static [Frame] {
    static WINDOW: OnceLock<Vec<Frame>> = OnceLock::new();
    WINDOW.get_or_init(|| {
        let msg: serde_json::Value = serde_json::from_str(include_str!(
            "../../tests/fixtures/protocol/server-frame.json"
        ))
        .expect("the golden frame message is JSON");
        let frame: Frame =
            serde_json::from_value(msg["frame"].clone()).expect("the golden frame decodes");
        (0..60)
            .map(|i| Frame {
                seq: frame.seq + i,
                t_ms: frame.t_ms + i * 1000,
                ..frame.clone()
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(lines) = parse_peers_file(text) {
        for line in lines {
            let mut printed = line.spec.to_string();
            if let Some(f) = &line.token_file {
                printed.push_str(&format!(" token-file={}", f.display()));
            }
            let again = parse_peers_file(&printed).expect("a printed peers line parses");
            assert_eq!(again, vec![line], "{printed}");
        }
    }
    for line in text.lines() {
        if let Ok(spec) = PeerSpec::parse(line) {
            let _ = spec.name();
            let printed = spec.to_string();
            assert_eq!(PeerSpec::parse(&printed), Ok(spec), "{printed}");
        }
    }
    if let Ok(t) = parse_thresholds(text) {
        let json = serde_json::to_string(&t).expect("thresholds encode");
        // JSON has no NaN or infinity (they encode as null), which TOML can write.
        if !json.contains("null") {
            assert_eq!(parse_thresholds(&json), Ok(t.clone()), "{json}");
        }
        let _ = diagnose(window(), &t, None);
    }
});
