//! Tests of the default-table importer against the real tables in
//! `tests/fixtures/imports/nvsmi-table/` (facts in its SOURCES.md) and the synthetic layouts.

use super::*;
use crate::ingest::formats::nvsmi_testkit::{Sniff, hostile, run, sniffs_apart};
use crate::ingest::formats::nvsmi_values::MIB;
use crate::ingest::formats::{nvsmi_apps, nvsmi_csv, nvsmi_dmon, nvsmi_pmon};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/imports/nvsmi-table/",
            $name
        ))
    };
}

pub(crate) const ALL: [&str; 12] = [
    fixture!("p100x8-440-procs-excerpt.txt"),
    fixture!("p100-470-noproc.txt"),
    fixture!("rtx3090-535-empty-procs.txt"),
    fixture!("a100-550-noproc.txt"),
    fixture!("h200x8-570-noproc.txt"),
    fixture!("l40s-580-proc.txt"),
    fixture!("gh200x4-590-noproc.txt"),
    fixture!("win-rtx5060-576-wddm.txt"),
    fixture!("synthetic-a100-mig-470.txt"),
    fixture!("synthetic-win-t4-tcc-462.txt"),
    fixture!("synthetic-v100x2-418-appended-cutoff.txt"),
    fixture!("synthetic-v100-418-nodate.txt"),
];

fn read(text: &str) -> (Vec<Sample>, Vec<Note>) {
    run(&mut importer(), text.as_bytes())
}

/// One snapshot, no notes.
fn one(text: &str) -> Sample {
    let (mut s, notes) = read(text);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(s.len(), 1);
    s.remove(0)
}

fn t(text: &str) -> Option<u64> {
    clock::parse(text)
}

#[test]
fn p100x8_440_old_layout_with_processes() {
    let s = one(ALL[0]);
    assert_eq!(s.t_ms, t("Fri Jun  4 01:26:14 2021"));
    assert_eq!(s.line, 1);
    assert_eq!(s.gpus.len(), 8);
    let g0 = &s.gpus[0];
    assert_eq!(g0.index, Some(0));
    assert_eq!(g0.name.as_deref(), Some("Tesla P100-SXM2..."));
    assert_eq!(g0.pci_bus_id.as_deref(), Some("00000000:04:00.0"));
    assert_eq!(g0.driver_version.as_deref(), Some("440.33.01"));
    assert_eq!(g0.memory_used_bytes, Some(10 * MIB));
    assert_eq!(g0.memory_total_bytes, Some(16280 * MIB));
    assert_eq!((g0.power_w, g0.power_limit_w), (Some(33.0), Some(300.0)));
    assert_eq!(g0.temperature_c, Some(25.0));
    assert_eq!(g0.util_gpu_pct, Some(0.0));
    assert_eq!(s.gpus[4].memory_used_bytes, Some(10253 * MIB));
    assert_eq!(s.gpus[7].memory_used_bytes, Some(13684 * MIB));
    assert_eq!(s.gpus[7].power_w, Some(52.0));
    let p: Vec<_> = s
        .processes
        .iter()
        .map(|p| (p.gpu_index, p.pid, p.used_bytes))
        .collect();
    assert_eq!(
        p,
        [
            (Some(4), 32263, Some(10243 * MIB)),
            (Some(5), 32264, Some(10243 * MIB)),
            (Some(6), 33062, Some(10235 * MIB)),
            (Some(7), 33063, Some(10235 * MIB)),
            (Some(7), 35147, Some(3439 * MIB)),
        ]
    );
    assert_eq!(
        s.processes[0].name.as_deref(),
        Some("...L.CA/u12345/venv-ivadomed/bin/python3.6")
    );
}

#[test]
fn p100_470_three_lines_per_gpu_no_processes() {
    let s = one(ALL[1]);
    assert_eq!(s.gpus.len(), 1);
    let g = &s.gpus[0];
    assert_eq!(g.name.as_deref(), Some("Tesla P100-PCIE..."));
    assert_eq!(g.driver_version.as_deref(), Some("470.82.01"));
    assert_eq!(g.memory_used_bytes, Some(0));
    assert_eq!(g.memory_total_bytes, Some(12198 * MIB));
    assert_eq!((g.power_w, g.power_limit_w), (Some(23.0), Some(250.0)));
    assert_eq!(g.temperature_c, Some(24.0));
    assert!(s.processes.is_empty());
}

#[test]
fn rtx3090_535_processes_header_without_rows() {
    let s = one(ALL[2]);
    let g = &s.gpus[0];
    assert_eq!(g.name.as_deref(), Some("NVIDIA GeForce RTX 3090"));
    assert_eq!(g.pci_bus_id.as_deref(), Some("00000000:C1:00.0"));
    assert_eq!(g.driver_version.as_deref(), Some("535.161.07"));
    assert_eq!(g.temperature_c, Some(26.0));
    assert_eq!((g.power_w, g.power_limit_w), (Some(30.0), Some(320.0)));
    assert_eq!(g.memory_used_bytes, Some(404 * MIB));
    assert_eq!(g.memory_total_bytes, Some(24576 * MIB));
    assert!(s.processes.is_empty());
}

#[test]
fn a100_550_wide_bus_id_field() {
    let s = one(ALL[3]);
    let g = &s.gpus[0];
    assert_eq!(g.name.as_deref(), Some("NVIDIA A100-SXM4-40GB"));
    assert_eq!(g.pci_bus_id.as_deref(), Some("00000000:81:00.0"));
    assert_eq!(g.driver_version.as_deref(), Some("550.144.03"));
    assert_eq!((g.power_w, g.power_limit_w), (Some(52.0), Some(400.0)));
    assert_eq!(g.memory_used_bytes, Some(MIB));
    assert_eq!(g.memory_total_bytes, Some(40960 * MIB));
    assert_eq!(s.t_ms, t("Wed Feb  5 14:07:58 2025"));
}

#[test]
fn h200x8_570_six_digit_totals() {
    let s = one(ALL[4]);
    assert_eq!(s.gpus.len(), 8);
    assert!(
        s.gpus
            .iter()
            .all(|g| g.memory_total_bytes == Some(143_771 * MIB)
                && g.memory_used_bytes == Some(0)
                && g.power_limit_w == Some(700.0))
    );
    assert_eq!(s.gpus[0].power_w, Some(76.0));
    assert_eq!(s.gpus[0].temperature_c, Some(29.0));
    assert_eq!(s.gpus[6].power_w, Some(75.0));
    assert_eq!(s.gpus[7].power_w, Some(74.0));
    assert_eq!(s.gpus[7].index, Some(7));
}

#[test]
fn l40s_580_one_process_with_gi_ci_na() {
    let s = one(ALL[5]);
    let g = &s.gpus[0];
    assert_eq!(g.name.as_deref(), Some("NVIDIA L40S"));
    assert_eq!(g.temperature_c, Some(39.0));
    assert_eq!((g.power_w, g.power_limit_w), (Some(104.0), Some(325.0)));
    assert_eq!(g.memory_used_bytes, Some(803 * MIB));
    assert_eq!(g.memory_total_bytes, Some(46068 * MIB));
    assert_eq!(
        s.processes,
        [ProcessRow {
            gpu_index: Some(0),
            gpu_uuid: None,
            pid: 5997,
            name: Some("python".to_owned()),
            used_bytes: Some(794 * MIB),
            mig: None,
        }]
    );
}

#[test]
fn gh200x4_590_non_zero_pci_domains() {
    let s = one(ALL[6]);
    let bus: Vec<_> = s.gpus.iter().map(|g| g.pci_bus_id.as_deref()).collect();
    assert_eq!(
        bus,
        [
            Some("00000009:01:00.0"),
            Some("00000019:01:00.0"),
            Some("00000029:01:00.0"),
            Some("00000039:01:00.0")
        ]
    );
    assert_eq!(s.gpus[0].memory_used_bytes, Some(3 * MIB));
    assert_eq!(s.gpus[0].memory_total_bytes, Some(97871 * MIB));
    assert_eq!(s.gpus[0].power_w, Some(92.0));
    assert_eq!(s.gpus[2].power_w, Some(100.0));
    assert_eq!(s.gpus[3].memory_used_bytes, Some(4 * MIB));
    assert!(s.gpus.iter().all(|g| g.power_limit_w == Some(900.0)));
}

#[test]
fn windows_wddm_processes_without_memory() {
    let s = one(ALL[7]);
    let g = &s.gpus[0];
    assert_eq!(g.name.as_deref(), Some("NVIDIA GeForce RTX 5060"));
    assert_eq!(g.driver_version.as_deref(), Some("576.88"));
    assert_eq!(g.temperature_c, Some(45.0));
    assert_eq!((g.power_w, g.power_limit_w), (Some(32.0), Some(145.0)));
    assert_eq!(g.memory_used_bytes, Some(2590 * MIB));
    assert_eq!(g.memory_total_bytes, Some(8151 * MIB));
    assert_eq!(g.util_gpu_pct, Some(1.0));
    assert_eq!(s.processes.len(), 27);
    assert!(s.processes.iter().all(|p| p.used_bytes.is_none()));
    let dwm = s.processes.iter().find(|p| p.pid == 1904).expect("dwm");
    assert_eq!(dwm.name.as_deref(), Some(r"C:\Windows\System32\dwm.exe"));
    let steam = s.processes.iter().find(|p| p.pid == 27824).expect("steam");
    assert_eq!(
        steam.name.as_deref(),
        Some(r"...0-rc.13_win_x64 3\Steam++.exe"),
        "a space inside a name is kept"
    );
}

#[test]
fn mig_devices_and_the_processes_instances_are_read() {
    let slot = |gi, ci| {
        Some(shared::MigSlot {
            gpu_instance_id: gi,
            compute_instance_id: ci,
        })
    };
    let s = one(ALL[8]);
    assert_eq!(s.gpus.len(), 1);
    let g = &s.gpus[0];
    assert_eq!(g.name.as_deref(), Some("NVIDIA A100-SXM..."));
    assert_eq!(g.memory_used_bytes, Some(10 * MIB));
    assert_eq!(g.util_gpu_pct, None, "GPU-Util is N/A with MIG on");
    let p: Vec<_> = s
        .processes
        .iter()
        .map(|p| (p.pid, p.used_bytes, p.mig))
        .collect();
    assert_eq!(
        p,
        [
            (28543, Some(3745 * MIB), slot(1, 0)),
            (28650, Some(3745 * MIB), slot(2, 0))
        ]
    );
    assert_eq!(
        s.mig,
        [
            MigRow {
                gpu_index: Some(0),
                slot: slot(1, 0),
                device: Some(0),
                memory_used_bytes: Some(3751 * MIB),
                memory_total_bytes: Some(20096 * MIB),
            },
            MigRow {
                gpu_index: Some(0),
                slot: slot(2, 0),
                device: Some(1),
                memory_used_bytes: Some(3751 * MIB),
                memory_total_bytes: Some(20096 * MIB),
            }
        ]
    );
    // Without MIG the GI and CI columns say N/A: no instance.
    let l40s = one(ALL[5]);
    assert_eq!(l40s.processes[0].mig, None);
    assert!(l40s.mig.is_empty());
}

#[test]
fn a_mangled_mig_row_is_a_note_naming_it() {
    let text = ALL[8].replace(
        "|  0    2   0   1  |   3751MiB / 20096MiB |",
        "|  0    2   x   1  |   3751MiB / 20096MiB |",
    );
    let (samples, notes) = read(&text);
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].mig.len(), 1, "the good row stays");
    assert!(
        notes
            .iter()
            .any(|n| n.message.contains("`x` is not a whole number in CI ID")),
        "{notes:?}"
    );
}

#[test]
fn windows_tcc() {
    let s = one(ALL[9]);
    let g = &s.gpus[0];
    assert_eq!(g.name.as_deref(), Some("Tesla T4"));
    assert_eq!(g.pci_bus_id.as_deref(), Some("00000001:00:00.0"));
    assert_eq!(g.memory_used_bytes, Some(1480 * MIB));
    assert_eq!(s.processes[0].pid, 4312);
    assert_eq!(
        s.processes[0].name.as_deref(),
        Some(r"...\Python39\python.exe")
    );
}

#[test]
fn appended_snapshots_and_a_cut_off_last_one() {
    let (s, notes) = read(ALL[10]);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].t_ms, t("Wed Sep 18 16:20:01 2019"));
    assert_eq!(s[1].t_ms, t("Wed Sep 18 16:20:06 2019"));
    assert_eq!((s[0].line, s[1].line), (1, 21));
    assert_eq!(s[0].gpus[0].memory_used_bytes, Some(4213 * MIB));
    assert_eq!(s[1].gpus[0].memory_used_bytes, Some(8405 * MIB));
    assert_eq!(s[1].processes[0].used_bytes, Some(8394 * MIB));
    assert_eq!(s[1].gpus[1].index, Some(1));
    assert_eq!(
        notes,
        [Note::at(
            41,
            "a table cut off at the end of the file, dropped"
        )]
    );
}

#[test]
fn tables_without_date_lines() {
    let (s, notes) = read(ALL[11]);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].line, s[1].line), (1, 17));
    assert!(s.iter().all(|s| s.t_ms.is_none()));
    assert_eq!(
        notes,
        [Note::file(
            "no timestamps (no date lines): samples are aligned by order"
        )]
    );
}

#[test]
fn bad_rows_are_noted() {
    let text = ALL[5]
        .replace("    803MiB", "    8x3MiB")
        .replace("   5997  ", "   59x7  ");
    let (s, notes) = read(&text);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].gpus[0].memory_used_bytes, None);
    assert!(s[0].processes.is_empty());
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0].line, Some(10));
    assert_eq!(notes[1].line, Some(19));
}

#[test]
fn sniff_tells_the_formats_apart() {
    let others: [(&str, Sniff); 4] = [
        ("csv", nvsmi_csv::sniff),
        ("apps", nvsmi_apps::sniff),
        ("dmon", nvsmi_dmon::sniff),
        ("pmon", nvsmi_pmon::sniff),
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

/// Found by the `clock` fuzz target (`regressions/clock/civil-ms-year-overflow.txt`), and it
/// reaches this importer, which hands every line outside a table to `clock::parse`: a `date`
/// line with a 12-digit year overflows `i64` in `clock::civil_ms` (a panic where overflow checks
/// are on, a wrong time where they are off).
#[test]
fn a_date_line_with_a_twelve_digit_year_is_no_time() {
    let (samples, _) = read("u Jan 5 2:0:1 927151279151\n");
    assert!(samples.is_empty());
    assert_eq!(t("u Jan 5 2:0:1 927151279151"), None);
}
