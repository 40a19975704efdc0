//! The df importer against the real fixtures (values from SOURCES.md), the synthetic variants,
//! hostile input, and sniffing against the iostat formats.

use super::*;
use crate::ingest::formats::df_layout::block_size;
use crate::ingest::formats::hostile::{self, Run};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/imports/df/",
            $name
        ))
    };
}

pub(crate) const FIXTURES: [(&str, &str); 7] = [
    ("centos7-plain.txt", fixture!("centos7-plain.txt")),
    ("centos7-h.txt", fixture!("centos7-h.txt")),
    (
        "synthetic-T-wrapped-rhel6.txt",
        fixture!("synthetic-T-wrapped-rhel6.txt"),
    ),
    (
        "synthetic-date-B1-snapshots.txt",
        fixture!("synthetic-date-B1-snapshots.txt"),
    ),
    ("synthetic-i.txt", fixture!("synthetic-i.txt")),
    ("synthetic-P-m.txt", fixture!("synthetic-P-m.txt")),
    ("synthetic-H.txt", fixture!("synthetic-H.txt")),
];

const K: u64 = 1024;
const G: f64 = 1024.0 * 1024.0 * 1024.0;
/// 2023-01-05 12:00:01 UTC.
const T: u64 = 1_672_920_001_000;

fn import(text: &str) -> Run {
    hostile::run(&mut importer(), text.as_bytes())
}

fn mount<'a>(s: &'a Sample, at: &str) -> &'a MountRow {
    s.mounts
        .iter()
        .find(|m| m.mount_point == at)
        .unwrap_or_else(|| panic!("no {at} in {:?}", s.mounts))
}

fn notes_with(run: &Run, words: &str) -> usize {
    run.notes
        .iter()
        .filter(|n| n.message.contains(words))
        .count()
}

#[test]
fn plain_one_k_blocks() {
    let run = import(FIXTURES[0].1);
    assert_eq!(run.samples.len(), 1);
    let s = &run.samples[0];
    assert_eq!((s.line, s.t_ms, s.mounts.len()), (1, None, 7));
    let root = mount(s, "/");
    assert_eq!(root.source, "/dev/mapper/centos-root");
    assert_eq!(root.size_bytes, Some(17_811_456 * K));
    assert_eq!(root.used_bytes, Some(1_805_580 * K));
    assert_eq!(root.avail_bytes, Some(16_005_876 * K));
    assert_eq!(root.fs_type, None);
    let boot = mount(s, "/boot");
    assert_eq!(
        (boot.size_bytes, boot.used_bytes),
        (Some(1_038_336 * K), Some(237_600 * K))
    );
    assert_eq!(mount(s, "/run/user/1000").size_bytes, Some(386_136 * K));
    assert_eq!(mount(s, "/dev").used_bytes, Some(0));
    assert_eq!(run.notes.len(), 1, "{:?}", run.notes);
    assert_eq!(notes_with(&run, "no timestamps"), 1);
}

#[test]
fn human_sizes_are_approximate_powers_of_1024() {
    let run = import(FIXTURES[1].1);
    assert_eq!(run.samples.len(), 1);
    let s = &run.samples[0];
    assert_eq!(s.mounts.len(), 7);
    let root = mount(s, "/");
    assert_eq!(root.size_bytes, Some((17.0 * G) as u64));
    assert_eq!(root.used_bytes, Some((1.8 * G).round() as u64));
    assert_eq!(mount(s, "/boot").size_bytes, Some(1014 * K * K));
    let dev = mount(s, "/dev");
    assert_eq!((dev.used_bytes, dev.source.as_str()), (Some(0), "devtmpfs"));
    assert_eq!(notes_with(&run, "powers of 1024"), 1);
    // The plain snapshot and the -h one agree to the rounding.
    let exact = 17_811_456.0 * 1024.0;
    let approx = root.size_bytes.map_or(0.0, |b| b as f64);
    assert!((approx - exact).abs() / exact < 0.05);
}

#[test]
fn si_sizes_when_told() {
    let run = hostile::run(&mut importer_with(HumanBase::Si), FIXTURES[6].1.as_bytes());
    let s = &run.samples[0];
    assert_eq!(mount(s, "/").size_bytes, Some(99_000_000_000));
    assert_eq!(mount(s, "/run/user/1000").used_bytes, Some(12_000));
    assert_eq!(mount(s, "/dev/shm").used_bytes, Some(1_200_000));
    assert_eq!(notes_with(&run, "powers of 1000"), 1);
}

#[test]
fn a_wrapped_long_name_is_joined_and_the_type_kept() {
    let run = import(FIXTURES[2].1);
    assert_eq!(run.samples.len(), 1, "{:?}", run.notes);
    let s = &run.samples[0];
    assert_eq!(s.mounts.len(), 4);
    let root = mount(s, "/");
    assert_eq!(root.source, "/dev/mapper/VolGroup-lv_root");
    assert_eq!(root.fs_type.as_deref(), Some("ext4"));
    assert_eq!(root.avail_bytes, Some(44_958_604 * K));
    assert_eq!(mount(s, "/dev/shm").fs_type.as_deref(), Some("tmpfs"));
    assert_eq!(mount(s, "/home").used_bytes, Some(81_234_516 * K));
}

#[test]
fn snapshots_after_date_lines_with_bytes_and_a_spaced_mount_point() {
    let run = import(FIXTURES[3].1);
    assert_eq!(run.samples.len(), 3);
    let times: Vec<Option<u64>> = run.samples.iter().map(|s| s.t_ms).collect();
    assert_eq!(times, [Some(T), Some(T + 60_000), Some(T + 120_000)]);
    let lines: Vec<usize> = run.samples.iter().map(|s| s.line).collect();
    assert_eq!(lines, [1, 5, 9]);
    let passport = mount(&run.samples[1], "/media/user/My Passport");
    assert_eq!(passport.source, "/dev/sdb1");
    assert_eq!(passport.size_bytes, Some(4_000_650_883_072));
    assert_eq!(
        mount(&run.samples[2], "/").used_bytes,
        Some(425_201_762_304)
    );
    assert!(run.notes.is_empty(), "{:?}", run.notes);
}

#[test]
fn inodes_with_a_dash_for_none() {
    let run = import(FIXTURES[4].1);
    let s = &run.samples[0];
    assert_eq!(s.mounts.len(), 3);
    let root = mount(s, "/");
    assert_eq!(
        (root.inodes_total, root.inodes_used, root.inodes_free),
        (Some(6_111_232), Some(384_112), Some(5_727_120))
    );
    assert_eq!(root.size_bytes, None);
    assert_eq!(mount(s, "/boot/efi").inodes_total, Some(0));
}

#[test]
fn posix_megabyte_blocks() {
    let run = import(FIXTURES[5].1);
    let root = mount(&run.samples[0], "/");
    assert_eq!(root.size_bytes, Some(93_922 * K * K));
    assert_eq!(root.avail_bytes, Some(68_104 * K * K));
}

#[test]
fn block_sizes_of_every_header() {
    for (name, want) in [
        ("1K-blocks", Some(1024)),
        ("1024-blocks", Some(1024)),
        ("512-blocks", Some(512)),
        ("1M-blocks", Some(1 << 20)),
        ("1048576-blocks", Some(1 << 20)),
        ("1B-blocks", Some(1)),
        ("1kB-blocks", Some(1000)),
        ("1MB-blocks", Some(1_000_000)),
        ("1G-blocks", Some(1 << 30)),
        ("1KiB-blocks", Some(1024)),
        ("99999999999999999999E-blocks", None),
        ("1X-blocks", None),
        ("Size", None),
    ] {
        assert_eq!(block_size(name), want, "{name}");
    }
}

#[test]
fn bad_lines_are_noted_and_a_cut_last_line_drops_its_snapshot() {
    let text = "Filesystem 1K-blocks Used Available Use% Mounted on\n\
        /dev/a 100 abc 50 50% /a\n\
        /dev/b 100 99999999999999999999 50 50% /b\n\
        /dev/c 100 50\n\
        /dev/d 100 50 50 50% /d\n";
    let run = import(text);
    let s = &run.samples[0];
    assert_eq!(s.mounts.len(), 3);
    assert_eq!(mount(s, "/a").used_bytes, None);
    assert_eq!(mount(s, "/a").avail_bytes, Some(50 * K));
    assert!(
        run.notes
            .iter()
            .any(|n| n.line == Some(2) && n.message.contains("`abc`"))
    );
    assert!(
        run.notes
            .iter()
            .any(|n| n.line == Some(3) && n.message.contains("in Used"))
    );
    assert!(
        run.notes
            .iter()
            .any(|n| n.line == Some(4) && n.message.contains("found 3"))
    );
    let cut = import(
        "Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/a 100 50 50 50% /a\n/dev/b 10",
    );
    assert!(cut.samples.is_empty());
    assert_eq!(notes_with(&cut, "is cut off: dropped"), 1);
    let wrapped = import("Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/mapper/long");
    assert!(wrapped.samples.is_empty());
    assert_eq!(notes_with(&wrapped, "cut off"), 1);
}

#[test]
fn a_date_zone_other_than_utc_is_read_as_utc_and_said() {
    let run = import(
        "Thu Jan  5 12:00:01 CET 2023\nFilesystem 1K-blocks Used Available Use% Mounted on\n/dev/a 1 1 0 100% /\n",
    );
    assert_eq!(run.samples[0].t_ms, Some(T));
    assert_eq!(notes_with(&run, "`CET`"), 1);
}

#[test]
fn hostile_input_never_panics() {
    for (_, text) in FIXTURES {
        hostile::torture(text.as_bytes(), &|| Box::new(importer()), sniff);
    }
    hostile::huge_line(&|| Box::new(importer()), sniff);
}

#[test]
fn sniff_accepts_its_own_and_rejects_iostat() {
    for (name, text) in FIXTURES {
        assert_eq!(sniff(&hostile::head(text)), Ok(()), "{name}");
        let other = super::super::iostat::sniff(&hostile::head(text));
        assert!(
            other.is_err_and(|e| e.contains("`Filesystem") || e.contains("`Thu")),
            "{name}"
        );
    }
    for (name, text) in super::super::iostat::tests::FIXTURES {
        let err = sniff(&hostile::head(text));
        assert!(err.is_err_and(|e| e.contains("not df's")), "{name}");
    }
    assert!(sniff(&[]).is_err());
}
