//! Tests of the `--query-compute-apps` importer against the synthetic logs in
//! `tests/fixtures/imports/nvsmi-apps/` (no real log was found; SOURCES.md says where each
//! layout comes from).

use super::*;
use crate::ingest::formats::nvsmi_testkit::{Sniff, hostile, run, sniffs_apart};
use crate::ingest::formats::nvsmi_values::MIB;
use crate::ingest::formats::{nvsmi_csv, nvsmi_dmon, nvsmi_pmon, nvsmi_table};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/imports/nvsmi-apps/",
            $name
        ))
    };
}

pub(crate) const ALL: [&str; 3] = [
    fixture!("synthetic-header-units.csv"),
    fixture!("synthetic-noheader-nounits-bus-time.csv"),
    fixture!("synthetic-repeated-header-cutoff.csv"),
];

const UUID0: &str = "GPU-5c1e6a3e-1f0b-4c1a-9f3e-0a1b2c3d4e5f";

fn read(text: &str) -> (Vec<Sample>, Vec<Note>) {
    run(&mut importer(), text.as_bytes())
}

#[test]
fn header_with_units_two_calls_by_repeated_pids() {
    let (s, notes) = read(ALL[0]);
    assert_eq!(
        notes,
        [Note::file("no timestamps: samples are aligned by order")]
    );
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].line, s[1].line), (2, 4));
    assert_eq!(
        s[0].processes[0],
        ProcessRow {
            gpu_index: None,
            gpu_uuid: Some(UUID0.to_owned()),
            pid: 14221,
            name: Some("python".to_owned()),
            used_bytes: Some(30211 * MIB),
            mig: None,
        }
    );
    assert_eq!(s[1].processes[1].used_bytes, Some(4107 * MIB));
    assert_eq!(s[1].processes[1].name.as_deref(), Some("/usr/bin/python3"));
}

#[test]
fn noheader_nounits_inferred_from_the_values() {
    let (s, notes) = read(ALL[1]);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].t_ms, clock::parse("2024/05/01 10:00:00.101"));
    assert_eq!(s[0].processes.len(), 2);
    let p = &s[0].processes[0];
    assert_eq!((p.pid, p.used_bytes), (14221, Some(30211 * MIB)));
    assert_eq!(p.gpu_uuid, None);
    let hidden = &s[0].processes[1];
    assert_eq!(
        (hidden.pid, hidden.name.as_deref(), hidden.used_bytes),
        (14300, None, None)
    );
    assert_eq!(s[1].processes[0].used_bytes, Some(30301 * MIB));
    // The same file read by its field list.
    let fields = [
        "timestamp",
        "gpu_bus_id",
        "pid",
        "process_name",
        "used_memory",
    ];
    let mut imp = importer_with_fields(Some(fields.iter().map(|f| f.to_string()).collect()));
    let (again, notes) = run(&mut imp, ALL[1].as_bytes());
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(again, s);
}

#[test]
fn a_header_per_call_and_a_cut_off_last_line() {
    let (s, notes) = read(ALL[2]);
    assert_eq!(s.len(), 2);
    assert_eq!(s[1].t_ms, clock::parse("2024/05/01 10:00:01.109"));
    assert_eq!(s[1].processes[0].used_bytes, Some(30215 * MIB));
    assert_eq!(
        notes,
        [Note::at(
            6,
            "the last line is cut off (4 of 5 fields), dropped"
        )]
    );
}

#[test]
fn bad_rows_are_noted() {
    let text =
        "pid, process_name, used_gpu_memory [MiB]\n1, a, 5 MiB\nx, b, 5 MiB\n2, c\n3, d, -1 MiB\n";
    let (s, notes) = read(text);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].processes.len(), 2);
    assert_eq!(
        notes,
        [
            Note::at(3, "`x` is not a whole number in pid"),
            Note::at(3, "no pid"),
            Note::at(4, "expected 3 fields, found 2"),
            Note::at(5, "`-1 MiB` is negative in used_memory"),
            Note::file("no timestamps: samples are aligned by order"),
        ]
    );
}

#[test]
fn sniff_tells_the_formats_apart() {
    let others: [(&str, Sniff); 4] = [
        ("csv", nvsmi_csv::sniff),
        ("dmon", nvsmi_dmon::sniff),
        ("pmon", nvsmi_pmon::sniff),
        ("table", nvsmi_table::sniff),
    ];
    sniffs_apart(&ALL, sniff, &others);
    // And the GPU logs are not apps logs.
    for text in nvsmi_csv::tests::ALL {
        let h = crate::ingest::formats::nvsmi_testkit::head(text);
        assert!(sniff(&h).is_err(), "{:?}", h.first());
    }
}

#[test]
fn hostile_input_never_panics() {
    for text in ALL {
        hostile(text, &|| Box::new(importer()), &[sniff]);
    }
}
