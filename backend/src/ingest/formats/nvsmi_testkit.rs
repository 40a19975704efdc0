//! Test helpers for the importers: run one over bytes, take a file's sniff head, and the
//! hostile-input battery (every prefix, NUL bytes, huge and negative numbers, duplicated and
//! shuffled lines, binary junk, a 10 MB line) that no importer or sniff may panic on.

use crate::ingest::lines::feed;
use crate::ingest::model::{Emit, Importer, Note, Sample};

/// A `sniff` function of a format module.
pub(crate) type Sniff = fn(&[&str]) -> Result<(), String>;

/// Everything `importer` makes of `input`, read the way `vramio import` reads a file.
pub(crate) fn run(importer: &mut dyn Importer, input: &[u8]) -> (Vec<Sample>, Vec<Note>) {
    let mut out = Emit::default();
    let (mut samples, mut notes) = (Vec::new(), Vec::new());
    feed(&mut &input[..], importer, &mut out, &mut |e| {
        samples.append(&mut e.samples);
        notes.append(&mut e.notes);
    })
    .expect("reading from memory cannot fail");
    (samples, notes)
}

/// The first non-empty lines (at most 30), what `sniff` is given.
pub(crate) fn head(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(30)
        .collect()
}

/// Deterministic bytes from a seed (xorshift64).
fn junk(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Every digit run replaced by `with`.
fn replace_numbers(text: &str, with: &str) -> String {
    let mut s = String::with_capacity(text.len() * 2);
    let mut in_run = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_run {
                s.push_str(with);
            }
            in_run = true;
        } else {
            in_run = false;
            s.push(c);
        }
    }
    s
}

/// The variants of `text` the battery feeds (besides its prefixes).
fn variants(text: &str) -> Vec<Vec<u8>> {
    let lines: Vec<&str> = text.lines().collect();
    // A fixed, uneven permutation: odd lines, then even ones reversed.
    let odd = lines.iter().skip(1).step_by(2);
    let even = lines.iter().step_by(2).rev();
    let shuffled: Vec<&str> = odd.chain(even).copied().collect();
    let doubled: Vec<&str> = lines.iter().flat_map(|l| [*l, *l]).collect();
    let with_nul: Vec<u8> = text
        .bytes()
        .enumerate()
        .flat_map(|(i, b)| if i % 7 == 3 { vec![0, b] } else { vec![b] })
        .collect();
    vec![
        with_nul,
        replace_numbers(text, &"9".repeat(40)).into_bytes(),
        replace_numbers(text, "-7").into_bytes(),
        replace_numbers(text, "1e400").into_bytes(),
        replace_numbers(text, "NaN").into_bytes(),
        replace_numbers(text, "").into_bytes(),
        shuffled.join("\n").into_bytes(),
        doubled.join("\n").into_bytes(),
        lines
            .iter()
            .rev()
            .copied()
            .collect::<Vec<_>>()
            .join("\r\n")
            .into_bytes(),
        text.replace(' ', "").into_bytes(),
        text.replace(',', ",,").into_bytes(),
        text.replace('|', "").into_bytes(),
        junk(text.len() as u64, 64 * 1024),
        [text.as_bytes(), &junk(7, 4096), text.as_bytes()].concat(),
    ]
}

/// Feeds `input` to a fresh importer and every sniff to its head; panics are the failure.
fn survive(input: &[u8], make: &dyn Fn() -> Box<dyn Importer>, sniffs: &[Sniff]) {
    let mut importer = make();
    let _ = run(importer.as_mut(), input);
    let text = String::from_utf8_lossy(input);
    let h = head(&text);
    for sniff in sniffs {
        let _ = sniff(&h);
    }
}

/// The hostile-input battery over one fixture: nothing may panic.
pub(crate) fn hostile(text: &str, make: &dyn Fn() -> Box<dyn Importer>, sniffs: &[Sniff]) {
    let bytes = text.as_bytes();
    let cuts: Vec<usize> = if bytes.len() <= 8 * 1024 {
        (0..=bytes.len()).collect()
    } else {
        (0..500).map(|i| i * 7919 % bytes.len()).collect()
    };
    for cut in cuts {
        survive(&bytes[..cut], make, sniffs);
    }
    for v in variants(text) {
        survive(&v, make, sniffs);
    }
    // A 10 MB line alone: the reader skips it with one note; the importer sees nothing.
    let huge = vec![b'7'; 10 << 20];
    let (samples, notes) = run(make().as_mut(), &huge);
    assert!(samples.is_empty());
    assert_eq!(notes.len(), 1, "{notes:?}");
}

/// `ok` accepts every head in `mine`; each of `others` rejects them, with a reason.
pub(crate) fn sniffs_apart(mine: &[&str], ok: Sniff, others: &[(&str, Sniff)]) {
    for text in mine {
        let h = head(text);
        assert_eq!(ok(&h), Ok(()), "{:?}", h.first());
        for (name, other) in others {
            let why = other(&h).expect_err(&format!("{name} accepted {:?}", h.first()));
            assert!(!why.is_empty());
        }
    }
}
