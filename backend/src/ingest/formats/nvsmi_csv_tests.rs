//! Tests of the `--query-gpu` CSV importer against the real logs in
//! `tests/fixtures/imports/nvsmi-csv/` (facts in its SOURCES.md) and the synthetic variants.

use super::*;
use crate::ingest::clock;
use crate::ingest::formats::nvsmi_testkit::{hostile, run, sniffs_apart};
use crate::ingest::formats::nvsmi_values::MIB;
use crate::ingest::formats::{nvsmi_apps, nvsmi_dmon, nvsmi_pmon, nvsmi_table};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/imports/nvsmi-csv/",
            $name
        ))
    };
}

pub(crate) const ALL: [&str; 12] = [
    fixture!("vc-4xT4.csv"),
    fixture!("vc-1xT4-na.csv"),
    fixture!("vc-8xH100.csv"),
    fixture!("epoch-prefix-nounits.csv"),
    fixture!("rtx2070-repeated-header.csv"),
    fixture!("long-run-units.csv"),
    fixture!("h100nvl-cutoff.log"),
    fixture!("a6000x2-units.csv"),
    fixture!("a10-lms-units-excerpt.csv"),
    fixture!("synthetic-noheader-units.csv"),
    fixture!("synthetic-uuid-power-gap.csv"),
    fixture!("synthetic-date-prefix-noheader.csv"),
];

fn read(text: &str) -> (Vec<Sample>, Vec<Note>) {
    run(&mut importer(), text.as_bytes())
}

fn t(text: &str) -> Option<u64> {
    clock::parse(text)
}

fn gpus(samples: &[Sample]) -> Vec<usize> {
    samples.iter().map(|s| s.gpus.len()).collect()
}

#[test]
fn vc_4x_t4_one_sample_told_apart_by_bus_id() {
    let (s, notes) = read(fixture!("vc-4xT4.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [4]);
    assert_eq!(s[0].t_ms, t("2023/01/11 00:06:01.255"));
    assert_eq!(s[0].line, 2);
    let g = &s[0].gpus;
    assert_eq!(g[0].pci_bus_id.as_deref(), Some("00000001:00:00.0"));
    assert_eq!(g[3].pci_bus_id.as_deref(), Some("00000004:00:00.0"));
    assert_eq!(g[0].index, None);
    assert_eq!(g[0].memory_used_bytes, Some(257 * MIB));
    assert_eq!(g[0].memory_free_bytes, Some(15670 * MIB));
    assert_eq!(g[0].memory_total_bytes, Some(16384 * MIB));
    assert!(g[1..].iter().all(|g| g.memory_used_bytes == Some(14 * MIB)));
    assert_eq!(g[0].driver_version.as_deref(), Some("510.108.03"));
    assert_eq!(g[0].temperature_c, Some(48.0));
    assert_eq!(g[0].power_w, None);
}

#[test]
fn vc_1x_t4_na_and_bracketed_na_are_absent() {
    let (s, notes) = read(fixture!("vc-1xT4-na.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [1]);
    let g = &s[0].gpus[0];
    assert_eq!(g.index, Some(0));
    assert_eq!(g.name.as_deref(), Some("Tesla T4"));
    assert_eq!(g.driver_version.as_deref(), Some("550.54.15"));
    assert_eq!(g.memory_total_bytes, Some(15360 * MIB));
    assert_eq!(g.memory_free_bytes, Some(14917 * MIB));
    assert_eq!(g.memory_used_bytes, Some(100 * MIB));
    // power.draw.average is `[N/A]`: the instant reading is used.
    assert_eq!(g.power_w, Some(9.31));
    assert_eq!(g.util_gpu_pct, Some(2.0));
    assert_eq!(g.util_mem_pct, Some(3.0));
}

#[test]
fn vc_8x_h100_keyed_by_index_despite_repeated_bus_ids() {
    let (s, notes) = read(fixture!("vc-8xH100.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [8]);
    let g = &s[0].gpus;
    let idx: Vec<_> = g.iter().map(|g| g.index).collect();
    assert_eq!(idx, (0..8).map(Some).collect::<Vec<_>>());
    for g in g {
        assert_eq!(g.memory_total_bytes, Some(81559 * MIB));
        assert_eq!(g.memory_free_bytes, Some(81007 * MIB));
        assert_eq!(g.memory_used_bytes, Some(0));
    }
    // Both power.draw.instant (70.68) and .average (70.89): the instant one.
    assert_eq!(g[0].power_w, Some(70.68));
    assert_eq!(g[0].temperature_c, Some(26.0));
    assert_eq!(g[0].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
}

#[test]
fn epoch_prefix_with_a_hand_written_header() {
    let (s, notes) = read(fixture!("epoch-prefix-nounits.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(s.len(), 90);
    assert!(s.iter().all(|s| s.gpus.len() == 1));
    let first = &s[0].gpus[0];
    assert_eq!(s[0].t_ms, Some(1_764_189_075_000));
    assert_eq!(first.memory_used_bytes, Some(MIB));
    assert_eq!(first.memory_total_bytes, Some(24576 * MIB));
    assert_eq!(first.util_gpu_pct, Some(0.0));
    assert_eq!(s[3].t_ms, Some(1_764_189_255_000));
    assert_eq!(s[3].gpus[0].memory_used_bytes, Some(10544 * MIB));
    assert_eq!(s[3].gpus[0].util_gpu_pct, Some(93.0));
    assert_eq!(s[89].t_ms, Some(1_764_194_422_000));
    assert_eq!(s[89].gpus[0].memory_used_bytes, Some(10904 * MIB));
    assert_eq!(s[89].gpus[0].util_gpu_pct, Some(59.0));
    assert_eq!(s[89].line, 91);
}

#[test]
fn rtx2070_a_header_before_every_row() {
    let (s, notes) = read(fixture!("rtx2070-repeated-header.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [1; 10]);
    let g = &s[0].gpus[0];
    assert_eq!(s[0].t_ms, t("2023/06/22 18:56:56.252"));
    assert_eq!(s[1].line, 4);
    assert_eq!(g.index, Some(0));
    assert_eq!(g.name.as_deref(), Some("NVIDIA GeForce RTX 2070"));
    assert_eq!(g.pci_bus_id.as_deref(), Some("00000000:01:00.0"));
    assert_eq!(g.memory_used_bytes, Some(841 * MIB));
    assert_eq!(g.memory_free_bytes, Some(7140 * MIB));
    assert_eq!(g.util_gpu_pct, Some(22.0));
    assert_eq!(s[9].t_ms, t("2023/06/22 18:57:05.514"));
    assert_eq!(s[9].gpus[0].memory_used_bytes, Some(856 * MIB));
    assert_eq!(s[9].gpus[0].util_gpu_pct, Some(34.0));
}

#[test]
fn long_run_two_fields_units_in_values() {
    let (s, notes) = read(fixture!("long-run-units.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [1; 45]);
    assert_eq!(s[0].t_ms, t("2026/02/02 01:07:37.100"));
    assert_eq!(s[0].gpus[0].memory_used_bytes, Some(17092 * MIB));
    assert_eq!(s[42].t_ms, t("2026/02/02 01:18:07.148"));
    assert_eq!(s[42].gpus[0].memory_used_bytes, Some(66048 * MIB));
    assert_eq!(s[42].gpus[0].util_gpu_pct, Some(9.0));
    assert_eq!(s[43].gpus[0].memory_used_bytes, Some(71158 * MIB));
    assert_eq!(s[44].gpus[0].memory_used_bytes, Some(19846 * MIB));
    assert_eq!(s[44].gpus[0].util_gpu_pct, Some(13.0));
    assert_eq!(s[44].gpus[0].name, None);
}

#[test]
fn h100nvl_the_cut_off_last_line_is_dropped_with_a_note() {
    let (s, notes) = read(fixture!("h100nvl-cutoff.log"));
    assert_eq!(gpus(&s), [1; 104]);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].line, Some(106));
    assert!(notes[0].message.contains("cut off"), "{notes:?}");
    assert_eq!(s[0].gpus[0].memory_used_bytes, Some(MIB));
    assert_eq!(s[0].t_ms, t("2026/02/25 10:04:37.416"));
    let at = s
        .iter()
        .find(|s| s.t_ms == t("2026/02/25 10:05:21.432"))
        .expect("the 10:05:21.432 sample");
    assert_eq!(at.gpus[0].util_gpu_pct, Some(100.0));
    assert_eq!(at.gpus[0].memory_used_bytes, Some(47122 * MIB));
    let last = &s[103];
    assert_eq!(last.t_ms, t("2026/02/25 10:06:20.442"));
    assert_eq!(last.gpus[0].util_gpu_pct, Some(99.0));
    assert_eq!(last.gpus[0].memory_used_bytes, Some(90098 * MIB));
    assert_eq!(last.gpus[0].name.as_deref(), Some("NVIDIA H100 NVL"));
}

#[test]
fn a6000x2_rows_a_millisecond_apart_are_one_sample() {
    let (s, notes) = read(fixture!("a6000x2-units.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [2; 10]);
    assert_eq!(s[0].t_ms, t("2024/11/23 12:23:29.950"));
    let (g0, g1) = (&s[0].gpus[0], &s[0].gpus[1]);
    assert_eq!((g0.index, g1.index), (Some(0), Some(1)));
    assert_eq!(g0.util_gpu_pct, Some(92.0));
    assert_eq!(g0.memory_used_bytes, Some(25073 * MIB));
    assert_eq!(g0.memory_free_bytes, Some(23498 * MIB));
    assert_eq!(g1.util_gpu_pct, Some(0.0));
    assert_eq!(g1.memory_used_bytes, Some(15 * MIB));
}

#[test]
fn a10_lms_samples_milliseconds_apart() {
    let (s, notes) = read(fixture!("a10-lms-units-excerpt.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [1; 5]);
    assert_eq!(s[0].t_ms, t("2024/01/16 14:44:16.977"));
    assert_eq!(s[4].t_ms, t("2024/01/16 14:44:17.095"));
    let g = &s[0].gpus[0];
    assert_eq!(g.memory_used_bytes, Some(21 * MIB));
    assert_eq!(g.memory_free_bytes, Some(22494 * MIB));
    assert_eq!(g.memory_total_bytes, Some(23028 * MIB));
    assert_eq!(g.temperature_c, Some(25.0));
    assert!(
        s[1..4]
            .iter()
            .all(|s| s.gpus[0].memory_used_bytes == Some(7 * MIB))
    );
}

#[test]
fn noheader_needs_the_field_list() {
    let text = fixture!("synthetic-noheader-units.csv");
    let (s, notes) = read(text);
    assert!(s.is_empty());
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].line, Some(1));
    assert!(notes[0].message.contains("--fields"), "{notes:?}");
    let fields = ["timestamp", "index", "memory.used", "utilization.gpu"];
    let mut imp = importer_with_fields(Some(fields.iter().map(|f| f.to_string()).collect()));
    let (s, notes) = run(&mut imp, text.as_bytes());
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [2; 3]);
    assert_eq!(s[2].t_ms, t("2024/05/01 10:00:02.115"));
    assert_eq!(s[2].gpus[0].util_gpu_pct, Some(97.0));
    assert_eq!(s[2].gpus[1].memory_used_bytes, Some(8 * MIB));
}

#[test]
fn uuid_keys_power_fields_and_a_gap_kept() {
    let (s, notes) = read(fixture!("synthetic-uuid-power-gap.csv"));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(gpus(&s), [2; 3]);
    let g = &s[0].gpus;
    assert_eq!(
        g[0].uuid.as_deref(),
        Some("GPU-5c1e6a3e-1f0b-4c1a-9f3e-0a1b2c3d4e5f")
    );
    assert_eq!(g[0].power_w, Some(251.37));
    assert_eq!(g[0].power_limit_w, Some(280.0), "enforced.power.limit wins");
    assert_eq!(g[1].power_w, None, "[Not Supported]");
    assert_eq!(g[0].memory_reserved_bytes, Some(519 * MIB));
    assert_eq!(g[0].temperature_c, Some(61.0));
    // 10:00:05 then 10:00:20: the gap stays a gap.
    assert_eq!(s[1].t_ms, t("2024/05/01 10:00:05.115"));
    assert_eq!(s[2].t_ms, t("2024/05/01 10:00:20.130"));
}

#[test]
fn a_date_prefix_before_noheader_fields_is_the_time() {
    let text = fixture!("synthetic-date-prefix-noheader.csv");
    let fields = vec!["index".to_owned(), "memory.used".to_owned()];
    let (s, notes) = run(&mut importer_with_fields(Some(fields)), text.as_bytes());
    assert_eq!(gpus(&s), [1; 4]);
    assert_eq!(s[0].t_ms, t("2024-05-01 10:00:00"));
    assert_eq!(s[3].t_ms, t("2024-05-01 10:00:30"));
    assert_eq!(s[2].gpus[0].memory_used_bytes, None);
    assert_eq!(notes, [Note::at(3, "`abc` is not a number in memory.used")]);
}

#[test]
fn bad_lines_are_noted_and_the_rest_imports() {
    let text = "timestamp, index, memory.used [MiB]\n\
                2024/05/01 10:00:00.000, 0, 10 MiB\n\
                2024/05/01 10:00:01.000, 0\n\
                garbage\n\
                2024/05/01 10:00:02.000, 0, -3 MiB\n\
                2024/05/01 10:00:03.000, 0, 12 MiB\n";
    let (s, notes) = read(text);
    assert_eq!(gpus(&s), [1, 1, 1]);
    assert_eq!(
        notes,
        [
            Note::at(3, "expected 3 fields, found 2"),
            Note::at(4, "expected 3 fields, found 1"),
            Note::at(5, "`-3 MiB` is negative in memory.used"),
        ]
    );
}

#[test]
fn without_timestamps_one_file_note() {
    let text = "index, memory.used [MiB]\n0, 1 MiB\n1, 2 MiB\n0, 3 MiB\n1, 4 MiB\n";
    let (s, notes) = read(text);
    assert_eq!(gpus(&s), [2, 2]);
    assert!(s.iter().all(|s| s.t_ms.is_none()));
    assert_eq!(
        notes,
        [Note::file("no timestamps: samples are aligned by order")]
    );
}

#[test]
fn a_last_sample_missing_a_gpu_is_dropped() {
    let text = "timestamp, index, memory.used [MiB]\n\
                2024/05/01 10:00:00.000, 0, 1 MiB\n\
                2024/05/01 10:00:00.003, 1, 1 MiB\n\
                2024/05/01 10:00:01.000, 0, 2 MiB\n";
    let (s, notes) = read(text);
    assert_eq!(gpus(&s), [2]);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].line, Some(4));
}

#[test]
fn sniff_tells_the_formats_apart() {
    let others: [(&str, super::super::nvsmi_testkit::Sniff); 4] = [
        ("apps", nvsmi_apps::sniff),
        ("dmon", nvsmi_dmon::sniff),
        ("pmon", nvsmi_pmon::sniff),
        ("table", nvsmi_table::sniff),
    ];
    // The date-prefixed noheader log is accepted only with --format (nothing in it is
    // nvidia-smi's own).
    sniffs_apart(&ALL[..11], sniff, &others);
    let h = super::super::nvsmi_testkit::head(ALL[11]);
    assert!(sniff(&h).is_err());
    assert!(sniff(&[]).is_err());
    assert!(sniff(&["pid, process_name, used_gpu_memory [MiB]"]).is_err());
}

#[test]
fn hostile_input_never_panics() {
    for text in ALL {
        hostile(text, &|| Box::new(importer()), &[sniff]);
    }
    // With a field list too, over the header-less logs (where it is used).
    for text in &ALL[9..] {
        let fields = || Some(vec!["index".to_owned(), "memory.used".to_owned()]);
        hostile(text, &|| Box::new(importer_with_fields(fields())), &[sniff]);
    }
}
