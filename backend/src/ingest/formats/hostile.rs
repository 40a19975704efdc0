//! Test support for the importers: run one over bytes through the real line reader, take a
//! file's head as `sniff` sees it, and throw hostile variants of a fixture at both (every
//! prefix, NUL bytes, digits blown up to 40 nines, lines doubled and shuffled, junk bytes) and a
//! 10 MB line.

use crate::ingest::lines;
use crate::ingest::model::{Emit, Importer, Note, Sample};

/// Everything one importer made of `input`.
#[derive(Debug, Default)]
pub struct Run {
    pub samples: Vec<Sample>,
    pub notes: Vec<Note>,
}

pub fn run(importer: &mut dyn Importer, input: &[u8]) -> Run {
    let mut out = Emit::default();
    let mut got = Run::default();
    lines::feed(&mut &input[..], importer, &mut out, &mut |e: &mut Emit| {
        got.samples.append(&mut e.samples);
        got.notes.append(&mut e.notes);
    })
    .expect("reading from memory cannot fail");
    got
}

/// The file's first non-empty lines, at most 30, as the format chooser passes them to `sniff`.
pub fn head(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(30)
        .collect()
}

pub type Sniff = fn(&[&str]) -> Result<(), String>;

fn both(input: &[u8], make: &dyn Fn() -> Box<dyn Importer>, sniff: Sniff) {
    let mut importer = make();
    let _ = run(importer.as_mut(), input);
    let text = String::from_utf8_lossy(input);
    let _ = sniff(&head(&text));
}

/// A deterministic shuffle (an LCG), so a failure reproduces.
fn shuffled<T>(mut items: Vec<T>) -> Vec<T> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..items.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = usize::try_from(state >> 33).unwrap_or(0) % (i + 1);
        items.swap(i, j);
    }
    items
}

/// Every hostile variant of `fixture`; none may panic (the test fails if one does).
pub fn torture(fixture: &[u8], make: &dyn Fn() -> Box<dyn Importer>, sniff: Sniff) {
    // Every prefix (every 500th-ish point for a large file).
    let step = if fixture.len() <= 8 * 1024 {
        1
    } else {
        fixture.len() / 500 + 1
    };
    for cut in (0..=fixture.len()).step_by(step) {
        both(&fixture[..cut], make, sniff);
    }
    // NUL bytes inserted.
    let mut nuls = Vec::with_capacity(fixture.len() * 2);
    for (i, b) in fixture.iter().enumerate() {
        nuls.push(*b);
        if i % 7 == 3 {
            nuls.push(0);
        }
    }
    both(&nuls, make, sniff);
    // Every digit a run of 40 nines (numbers far past u64 and f64 precision).
    let mut nines = Vec::new();
    for b in fixture {
        if b.is_ascii_digit() {
            nines.extend_from_slice(&[b'9'; 40]);
        } else {
            nines.push(*b);
        }
    }
    both(&nines, make, sniff);
    // Lines doubled, reversed, shuffled.
    let text = String::from_utf8_lossy(fixture);
    let lines: Vec<&str> = text.lines().collect();
    let doubled: Vec<&str> = lines.iter().flat_map(|l| [*l, *l]).collect();
    both(doubled.join("\n").as_bytes(), make, sniff);
    let reversed: Vec<&str> = lines.iter().rev().copied().collect();
    both(reversed.join("\n").as_bytes(), make, sniff);
    both(shuffled(lines.clone()).join("\n").as_bytes(), make, sniff);
    // Numbers out of range, negative, binary junk, mixed encodings.
    let odd = text
        .replace("0.00", "1e400")
        .replace("1.", "-1.")
        .replace('a', "\u{fffd}\u{0}\u{7f}");
    both(odd.as_bytes(), make, sniff);
    let mut junk = fixture.to_vec();
    junk.extend((0u8..=255).cycle().take(5000));
    both(&junk, make, sniff);
}

/// A 10 MB line alone gives the reader's one note and nothing else (once per importer: it is
/// the slow case).
pub fn huge_line(make: &dyn Fn() -> Box<dyn Importer>, sniff: Sniff) {
    let mut importer = make();
    let huge = vec![b'7'; 10 << 20];
    let got = run(importer.as_mut(), &huge);
    assert!(got.samples.is_empty());
    assert_eq!(got.notes.len(), 1, "{:?}", got.notes);
    let huge_text = String::from_utf8_lossy(&huge);
    let _ = sniff(&head(&huge_text));
}
