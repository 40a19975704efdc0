//! Fuzz target `state_files`: the files of the state directory, which a person or another program
//! may have edited: `shares.json` with its `share-key` (`access::shares::check_files`, the
//! checks `Shares::open` makes), `server.json` (`access::server_file::ServerFile`, decoded as
//! `ServerFile::read` does; one that decodes is written as `ServerFile::write` does and decoded
//! again, equal) and a token file (`access::token::well_formed`, on the trimmed text as
//! `Token::from_file` reads it).
//!
//! The input is each file whole; an input with a NUL is also read as `share-key` before the NUL
//! and `shares.json` after it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramio::access::server_file::ServerFile;
use vramio::access::shares::check_files;
use vramio::access::token::well_formed;

/// The `share-key` the seed stores are signed with.
const SEED_KEY: &[u8] = b"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";

fuzz_target!(|data: &[u8]| {
    let _ = check_files(Some(SEED_KEY), Some(data));
    let _ = check_files(None, Some(data));
    let _ = check_files(Some(data), None);
    if let Some(nul) = data.iter().position(|b| *b == 0) {
        let _ = check_files(Some(&data[..nul]), Some(&data[nul + 1..]));
    }

    if let Ok(file) = serde_json::from_slice::<ServerFile>(data) {
        let written = serde_json::to_vec_pretty(&file).expect("a server file encodes");
        let again: ServerFile =
            serde_json::from_slice(&written).expect("a written server file decodes");
        assert_eq!(again, file);
    }

    if let Ok(text) = std::str::from_utf8(data) {
        let token = text.trim();
        if well_formed(token).is_ok() {
            assert!((32..=256).contains(&token.len()), "{token:?}");
            assert!(
                token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "{token:?}"
            );
        }
    }
});
