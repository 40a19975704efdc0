//! The layout of `df` output: the header's columns (by name, with the block size of
//! `N-blocks`) and the `date` lines that may stamp each snapshot.

use crate::ingest::clock;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Col {
    Source,
    Type,
    /// `Size` (human) or `N-blocks` (the header's block size).
    Size,
    Used,
    Avail,
    Inodes,
    IUsed,
    IFree,
    Other,
}

#[derive(Debug)]
pub(super) struct Header {
    pub cols: Vec<Col>,
    pub block: Option<u64>,
    pub name: Vec<String>,
}

/// `1K-blocks`, `1024-blocks`, `1M-blocks`, `1B-blocks`, `1kB-blocks`: bytes per block.
pub(super) fn block_size(name: &str) -> Option<u64> {
    let spec = name.strip_suffix("-blocks")?;
    let digits_end = spec
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(spec.len());
    let (n, unit) = spec.split_at(digits_end);
    let n: u64 = if n.is_empty() { 1 } else { n.parse().ok()? };
    let (letter, rest) = match unit.chars().next() {
        Some(c) => (Some(c.to_ascii_uppercase()), unit.get(1..).unwrap_or("")),
        None => (None, ""),
    };
    let base: u64 = match rest {
        "" | "iB" => 1024,
        "B" => 1000,
        _ => return None,
    };
    let exp = match letter {
        None | Some('B') if rest.is_empty() => 0,
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        Some('T') => 4,
        Some('P') => 5,
        Some('E') => 6,
        _ => return None,
    };
    n.checked_mul(base.checked_pow(exp)?)
}

pub(super) fn header(line: &str) -> Option<Header> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.first() != Some(&"Filesystem") {
        return None;
    }
    let end = match words.as_slice() {
        [.., "Mounted", "on"] => words.len() - 2,
        [.., "Mounted"] => words.len() - 1,
        _ => return None,
    };
    let mut block = None;
    let cols = words
        .get(..end)
        .unwrap_or(&[])
        .iter()
        .map(|w| match *w {
            "Filesystem" => Col::Source,
            "Type" => Col::Type,
            "Size" => Col::Size,
            "Used" => Col::Used,
            "Avail" | "Available" => Col::Avail,
            "Inodes" => Col::Inodes,
            "IUsed" | "iused" => Col::IUsed,
            "IFree" | "ifree" => Col::IFree,
            w => match block_size(w) {
                Some(b) => {
                    block = Some(b);
                    Col::Size
                }
                None => Col::Other,
            },
        })
        .collect();
    Some(Header {
        cols,
        block,
        name: words.iter().map(|w| (*w).to_owned()).collect(),
    })
}

/// A `date` line (`Thu Jan  5 12:00:01 UTC 2023`, ISO, epoch): its time, and the zone name it
/// carried if that name is not UTC (read as UTC anyway).
pub(super) fn stamp(line: &str) -> Option<(u64, Option<String>)> {
    if let Some(ms) = clock::parse(line) {
        return Some((ms, None));
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    if let [day, mon, d, time, zone, year] = words.as_slice()
        && zone.chars().all(|c| c.is_ascii_alphabetic())
    {
        let ms = clock::parse(&format!("{day} {mon} {d} {time} {year}"))?;
        let known = matches!(*zone, "UTC" | "GMT" | "Z");
        return Some((ms, (!known).then(|| (*zone).to_owned())));
    }
    None
}
