//! Tests of the `pmon` importer against the real log in `tests/fixtures/imports/nvsmi-pmon/`
//! (facts in its SOURCES.md) and the synthetic layouts.

use super::*;
use crate::ingest::clock;
use crate::ingest::formats::nvsmi_testkit::{Sniff, hostile, run, sniffs_apart};
use crate::ingest::formats::nvsmi_values::MIB;
use crate::ingest::formats::{nvsmi_apps, nvsmi_csv, nvsmi_dmon, nvsmi_table};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/imports/nvsmi-pmon/",
            $name
        ))
    };
}

pub(crate) const ALL: [&str; 3] = [
    fixture!("blackwell4-595-s-um.txt"),
    fixture!("synthetic-old-columns-2gpu.txt"),
    fixture!("synthetic-o-DT-fb.txt"),
];

fn read(text: &str) -> (Vec<Sample>, Vec<Note>) {
    run(&mut importer(), text.as_bytes())
}

fn p(gpu: u32, pid: u32, name: &str, fb_mib: Option<u64>) -> ProcessRow {
    ProcessRow {
        gpu_index: Some(gpu),
        gpu_uuid: None,
        pid,
        name: Some(name.to_owned()),
        used_bytes: fb_mib.map(|m| m * MIB),
        mig: None,
    }
}

#[test]
fn blackwell_one_cycle_of_six_processes() {
    let (s, notes) = read(ALL[0]);
    assert_eq!(
        notes,
        [Note::file("no timestamps: samples are aligned by order")]
    );
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].line, 3);
    assert_eq!(
        s[0].processes,
        [
            p(0, 2_094_147, "sglang::schedul", Some(90480)),
            p(1, 2_094_383, "sglang::schedul", Some(90478)),
            p(2, 377_306, "python3", Some(550)),
            p(2, 377_813, "sgl_diffusion::", Some(47594)),
            p(3, 377_306, "python3", Some(550)),
            p(3, 377_814, "sgl_diffusion::", Some(47560)),
        ]
    );
}

#[test]
fn old_columns_cycles_and_idle_gpus() {
    let (s, notes) = read(ALL[1]);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let per: Vec<Vec<(u32, u32)>> = s
        .iter()
        .map(|s| {
            s.processes
                .iter()
                .map(|p| (p.gpu_index.unwrap_or(99), p.pid))
                .collect()
        })
        .collect();
    assert_eq!(
        per,
        [vec![(0, 14221)], vec![(0, 14221), (0, 15002)], vec![]]
    );
    assert_eq!(s[1].processes[1].name.as_deref(), Some("Xorg"));
    assert_eq!(s[1].processes[1].used_bytes, None, "no fb column");
    assert_eq!((s[0].line, s[1].line, s[2].line), (3, 5, 8));
}

#[test]
fn o_dt_with_fb_and_a_command_with_a_space() {
    let (s, notes) = read(ALL[2]);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].t_ms, clock::parse("2024-01-04 13:54:35"));
    assert_eq!(
        s[0].processes,
        [
            p(0, 3811, "Web Content", Some(239)),
            p(0, 3990, "python3", Some(74))
        ]
    );
    assert_eq!(s[1].processes, [p(0, 3811, "Web Content", Some(478))]);
}

#[test]
fn bad_rows_are_noted() {
    let text = "# gpu pid type sm command\n0 12 C 5 a\n0 x C 5 b\n0\n1 13 C 5\n";
    let (s, notes) = read(text);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].processes.len(), 2);
    assert_eq!(s[0].processes[1].name, None);
    assert_eq!(
        notes,
        [
            Note::at(3, "`x` is not a whole number in pid"),
            Note::at(4, "expected at least 4 fields, found 1"),
            Note::file("no timestamps: samples are aligned by order"),
        ]
    );
}

#[test]
fn sniff_tells_the_formats_apart() {
    let others: [(&str, Sniff); 4] = [
        ("csv", nvsmi_csv::sniff),
        ("apps", nvsmi_apps::sniff),
        ("dmon", nvsmi_dmon::sniff),
        ("table", nvsmi_table::sniff),
    ];
    sniffs_apart(&ALL, sniff, &others);
}

#[test]
fn hostile_input_never_panics() {
    for text in ALL {
        hostile(text, &|| Box::new(importer()), &[sniff]);
    }
}
