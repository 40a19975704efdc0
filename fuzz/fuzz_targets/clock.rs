//! Fuzz target `clock`: log timestamps (`ingest::clock::parse`, every form the importers read)
//! and the civil-date arithmetic under it (`ingest::clock::civil_ms`, fed from the input's bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramio::ingest::clock::{civil_ms, parse};

/// Known, not fixed here (`clock.rs` is being changed on main): `civil_ms` overflows `i64` for
/// years beyond about 2.9e11 either way (`days * 86_400`), a panic where overflow checks are on
/// and a wrong time where they are off. Years given to it here stay inside that...
const YEARS_WITHOUT_OVERFLOW: i64 = 1 << 37;

/// ...and `parse` is not given the one form with a year of any length, `date`'s
/// (`u Jan 5 2:0:1 927151279151`, in `regressions/clock/`), with a year of 12 digits or more.
fn known_year_overflow(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.len() == 5 && words[4].len() >= 12 && words[4].bytes().all(|b| b.is_ascii_digit())
}

/// Known, being fixed on main (the iostat timestamp zone): a zone whose four "digits" are not
/// one byte each (`+0\u{820}`) panics in `clock::zone` (`&digits[..2]` cuts a character). The
/// fuzzer finds it in seconds; inputs that could reach it are skipped (this test is wider than
/// the bug) until that fix is merged.
fn known_zone_panic(text: &str) -> bool {
    text.match_indices(['+', '-']).any(|(i, _)| {
        let word = text[i + 1..].split_whitespace().next().unwrap_or("");
        let digit_bytes: usize = word.chars().filter(|c| *c != ':').map(char::len_utf8).sum();
        !word.is_ascii() && digit_bytes == 4
    })
}

/// `N` bytes of `data` from `at`, zero past its end.
fn bytes<const N: usize>(data: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = data.get(at + i).copied().unwrap_or(0);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && !known_zone_panic(text)
        && !known_year_overflow(text)
    {
        let _ = parse(text);
    }
    // Every argument from the bytes: years up to about 1.4e11 either way, days 0..=255 of
    // months 0..=255, leap seconds.
    let y = i64::from_le_bytes(bytes(data, 0)) % YEARS_WITHOUT_OVERFLOW;
    let [m, d, h, mi, s] = bytes::<5>(data, 8).map(u32::from);
    let ms = u32::from(u16::from_le_bytes(bytes(data, 13)));
    if let Some(t) = civil_ms(y, m, d, h, mi, s, ms) {
        // The same moment one second on is 1000 ms later.
        if s < 59 {
            assert_eq!(civil_ms(y, m, d, h, mi, s + 1, ms), t.checked_add(1000));
        }
    }
});
