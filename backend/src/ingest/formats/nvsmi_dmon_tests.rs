//! Tests of the `dmon` importer against the real log in `tests/fixtures/imports/nvsmi-dmon/`
//! (facts in its SOURCES.md) and the synthetic layouts.

use super::*;
use crate::ingest::formats::nvsmi_testkit::{Sniff, hostile, run, sniffs_apart};
use crate::ingest::formats::nvsmi_values::MIB;
use crate::ingest::formats::{nvsmi_apps, nvsmi_csv, nvsmi_pmon, nvsmi_table};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/imports/nvsmi-dmon/",
            $name
        ))
    };
}

pub(crate) const ALL: [&str; 4] = [
    fixture!("a10-TD-s-mutc-excerpt.txt"),
    fixture!("synthetic-classic-2gpu.txt"),
    fixture!("synthetic-525-o-T.txt"),
    fixture!("synthetic-old-temp-o-DT-cutoff.txt"),
];

fn read(text: &str) -> (Vec<Sample>, Vec<Note>) {
    run(&mut importer(), text.as_bytes())
}

#[test]
fn a10_o_td_s_mutc() {
    let (s, notes) = read(ALL[0]);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(s.len(), 6);
    assert!(s.iter().all(|s| s.gpus.len() == 1));
    assert_eq!(s[0].t_ms, clock::parse("2024-01-04 13:54:35"));
    assert_eq!(s[5].t_ms, clock::parse("2024-01-04 13:54:40"));
    assert_eq!((s[0].line, s[1].line), (3, 5), "the blank line is skipped");
    let g = &s[0].gpus[0];
    assert_eq!(g.index, Some(0));
    assert_eq!(g.memory_used_bytes, Some(239 * MIB));
    assert_eq!(g.util_gpu_pct, Some(6.0));
    assert_eq!(g.util_mem_pct, Some(1.0));
    assert_eq!(g.power_w, None, "no `p` in -s mutc");
    assert_eq!(s[1].gpus[0].memory_used_bytes, Some(74 * MIB));
    assert_eq!(s[3].gpus[0].memory_used_bytes, Some(478 * MIB));
    assert_eq!(s[3].gpus[0].util_gpu_pct, Some(13.0));
}

#[test]
fn classic_header_two_gpus_repeated_header() {
    let (s, notes) = read(ALL[1]);
    assert_eq!(
        notes,
        [Note::file("no timestamps: samples are aligned by order")]
    );
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|s| s.gpus.len() == 2 && s.t_ms.is_none()));
    let g = &s[1].gpus[0];
    assert_eq!(g.power_w, Some(143.0));
    assert_eq!(g.temperature_c, Some(47.0));
    assert_eq!(g.util_gpu_pct, Some(88.0));
    assert_eq!(g.util_mem_pct, Some(41.0));
    assert_eq!(g.memory_used_bytes, None);
    assert_eq!(s[2].gpus[1].index, Some(1));
    assert_eq!(s[2].line, 9);
}

#[test]
fn o_t_has_no_date() {
    let (s, notes) = read(ALL[2]);
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|s| s.t_ms.is_none()));
    assert_eq!(s[1].gpus[0].power_w, Some(291.0));
    assert_eq!(s[1].gpus[0].util_gpu_pct, Some(98.0));
    assert_eq!(notes.len(), 1);
    assert!(notes[0].message.contains("-o T"), "{notes:?}");
}

#[test]
fn old_temp_column_and_a_cut_off_last_line() {
    let (s, notes) = read(ALL[3]);
    assert_eq!(s.len(), 2);
    assert!(s.iter().all(|s| s.gpus.len() == 2));
    assert_eq!(s[1].t_ms, clock::parse("2019-09-18 16:20:02"));
    assert_eq!(s[1].gpus[0].temperature_c, Some(44.0));
    assert_eq!(s[1].gpus[0].power_w, Some(211.0));
    assert_eq!(
        notes,
        [Note::at(
            7,
            "the last line is cut off (5 of 11 fields), dropped"
        )]
    );
}

#[test]
fn bad_values_and_rows_are_noted() {
    let text = "# gpu   pwr gtemp    sm\n    0   abc    40    10\n    0    50\n    0    51    41   101\n    1 2 3 4 5\n";
    let (s, notes) = read(text);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].gpus[0].power_w, None);
    assert_eq!(s[1].gpus[0].util_gpu_pct, None);
    assert_eq!(
        notes,
        [
            Note::at(2, "`abc` is not a number in pwr"),
            Note::at(3, "expected 4 fields, found 2"),
            Note::at(4, "`101` is over 100% in sm"),
            Note::at(5, "expected 4 fields, found 5"),
            Note::file("no timestamps: samples are aligned by order"),
        ]
    );
}

#[test]
fn sniff_tells_the_formats_apart() {
    let others: [(&str, Sniff); 4] = [
        ("csv", nvsmi_csv::sniff),
        ("apps", nvsmi_apps::sniff),
        ("pmon", nvsmi_pmon::sniff),
        ("table", nvsmi_table::sniff),
    ];
    sniffs_apart(&ALL, sniff, &others);
    assert!(sniff(&[]).is_err());
}

#[test]
fn hostile_input_never_panics() {
    for text in ALL {
        hostile(text, &|| Box::new(importer()), &[sniff]);
    }
}
