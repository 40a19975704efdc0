//! The iostat text importer against every real fixture (counts and values from SOURCES.md), the
//! synthetic variants, hostile input, and sniffing.

use super::*;
use crate::ingest::formats::hostile::{self, Run};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/imports/iostat/",
            $name
        ))
    };
}

pub(crate) const FIXTURES: [(&str, &str); 11] = [
    ("plain-tps-sandisk.txt", fixture!("plain-tps-sandisk.txt")),
    ("x-old-armv7.txt", fixture!("x-old-armv7.txt")),
    (
        "x-old-bcache-excerpt.txt",
        fixture!("x-old-bcache-excerpt.txt"),
    ),
    ("mx-old-centos7.txt", fixture!("mx-old-centos7.txt")),
    ("x-v12-dgroup-mb.txt", fixture!("x-v12-dgroup-mb.txt")),
    ("x-v12-fgroup-mb.log", fixture!("x-v12-fgroup-mb.log")),
    (
        "x-v12-fgroup-kb-ubuntu.txt",
        fixture!("x-v12-fgroup-kb-ubuntu.txt"),
    ),
    (
        "xd-v12-fgroup-multidev-excerpt.log",
        fixture!("xd-v12-fgroup-multidev-excerpt.log"),
    ),
    (
        "synthetic-t-us-x-sectors.txt",
        fixture!("synthetic-t-us-x-sectors.txt"),
    ),
    (
        "synthetic-t-iso-d-x-v12.txt",
        fixture!("synthetic-t-iso-d-x-v12.txt"),
    ),
    (
        "synthetic-t-h-x-v12.txt",
        fixture!("synthetic-t-h-x-v12.txt"),
    ),
];

const KB: f64 = 1024.0;
const MB: f64 = 1024.0 * 1024.0;
/// 2023-01-05 12:00:01 UTC.
const T: u64 = 1_672_920_001_000;

fn import(text: &str) -> Run {
    hostile::run(&mut importer(), text.as_bytes())
}

fn disk<'a>(s: &'a Sample, name: &str) -> &'a DiskRow {
    s.disks
        .iter()
        .find(|d| d.device == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", s.disks))
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6 * b.abs().max(1.0))
}

fn has_note(run: &Run, line: Option<usize>, words: &str) -> bool {
    run.notes
        .iter()
        .any(|n| n.line == line && n.message.contains(words))
}

const SKIPPED: &str = "the first report (line";
const ONLY_ONE: &str = "only one report";
const UNTIMED: &str = "no timestamps";

#[test]
fn plain_tps_one_report_is_kept_as_a_since_boot_average() {
    let run = import(FIXTURES[0].1);
    assert_eq!(run.samples.len(), 1);
    let s = &run.samples[0];
    assert_eq!((s.line, s.t_ms, s.disks.len()), (3, None, 1));
    let sda = disk(s, "sda");
    assert!(close(sda.read_bytes_per_sec, 96965.71 * KB));
    assert!(close(sda.write_bytes_per_sec, 71463.89 * KB));
    assert_eq!(
        (sda.read_iops, sda.util_pct, sda.await_ms),
        (None, None, None)
    );
    assert!(close(s.cpu.as_ref().and_then(|c| c.iowait_pct), 24.26));
    assert!(has_note(&run, None, ONLY_ONE) && has_note(&run, None, UNTIMED));
    assert_eq!(run.notes.len(), 2, "{:?}", run.notes);
}

#[test]
fn old_layout_kb_one_report() {
    let run = import(FIXTURES[1].1);
    assert_eq!(run.samples.len(), 1);
    let sda = disk(&run.samples[0], "sda");
    assert!(close(sda.write_iops, 0.16));
    assert!(close(sda.write_bytes_per_sec, 4.08 * KB));
    assert!(close(sda.await_ms, 16.18));
    assert!(close(sda.r_await_ms, 4.18) && close(sda.w_await_ms, 17.63));
    assert!(close(sda.util_pct, 0.06) && close(sda.avg_queue_size, 0.0));
    assert_eq!(run.notes.len(), 2, "{:?}", run.notes);
}

#[test]
fn old_layout_three_reports_skip_the_since_boot_one() {
    let run = import(FIXTURES[2].1);
    assert_eq!(run.samples.len(), 2);
    assert!(run.samples.iter().all(|s| s.disks.len() == 11));
    let (r2, r3) = (&run.samples[0], &run.samples[1]);
    assert_eq!((r2.line, r3.line), (19, 35));
    let nvme = disk(r2, "nvme0n1");
    assert!(close(nvme.write_iops, 922.0) && close(nvme.util_pct, 48.30));
    assert!(close(nvme.write_bytes_per_sec, 4185.0 * KB));
    let nvme = disk(r3, "nvme0n1");
    assert!(close(nvme.write_iops, 1779.0) && close(nvme.util_pct, 91.90));
    assert!(close(nvme.write_bytes_per_sec, 7117.5 * KB));
    let sdb = disk(r3, "sdb");
    assert!(close(sdb.read_iops, 575.0) && close(sdb.avg_queue_size, 59.13));
    let names: Vec<&str> = r2.disks.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(names[..3], ["nvme0n1", "sda", "dm-0"]);
    assert!(has_note(&run, None, SKIPPED) && has_note(&run, None, "iostat -y"));
    assert_eq!(run.notes.len(), 2, "{:?}", run.notes);
}

#[test]
fn minus_y_keeps_the_first_report() {
    let run = hostile::run(&mut importer_with(false), FIXTURES[2].1.as_bytes());
    assert_eq!(run.samples.len(), 3);
    let sdb = disk(&run.samples[0], "sdb");
    assert!(close(sdb.avg_queue_size, 27.56) && close(sdb.w_await_ms, 176.60));
    assert!(close(disk(&run.samples[0], "nvme0n1").read_iops, 21632.98));
    assert!(!has_note(&run, None, SKIPPED) && !has_note(&run, None, ONLY_ONE));
}

#[test]
fn old_layout_megabytes_without_a_final_blank_line() {
    let run = import(FIXTURES[3].1);
    assert_eq!(run.samples.len(), 1);
    let s = &run.samples[0];
    assert_eq!(s.disks.len(), 3);
    let sda = disk(s, "sda");
    assert!(close(sda.read_iops, 0.13) && close(sda.write_iops, 0.11));
    assert!(close(sda.read_bytes_per_sec, 0.01 * MB));
    assert!(close(sda.await_ms, 0.88) && close(sda.util_pct, 0.01));
    assert!(has_note(&run, None, ONLY_ONE));
}

#[test]
fn new_layout_d_group_megabytes_nineteen_reports() {
    let run = import(FIXTURES[4].1);
    assert_eq!(run.samples.len(), 18);
    assert!(
        run.samples
            .iter()
            .all(|s| s.disks.len() == 1 && s.cpu.is_some())
    );
    let first = &run.samples[0];
    let sdb = disk(first, "sdb");
    assert!(close(sdb.read_iops, 371.22) && close(sdb.util_pct, 67.47));
    assert!(close(sdb.read_bytes_per_sec, 43.91 * MB));
    assert!(close(sdb.r_await_ms, 0.66) && close(sdb.avg_queue_size, 0.01));
    assert_eq!(sdb.await_ms, None);
    assert!(close(first.cpu.as_ref().and_then(|c| c.user_pct), 42.88));
    let last = disk(&run.samples[17], "sdb");
    assert!(close(last.read_iops, 376.08) && close(last.util_pct, 57.83));
    assert!(close(last.read_bytes_per_sec, 41.01 * MB));
    assert!(has_note(&run, None, SKIPPED));
}

#[test]
fn new_layout_f_group_megabytes() {
    let run = import(FIXTURES[5].1);
    assert_eq!(run.samples.len(), 3);
    let sda = disk(&run.samples[0], "sda");
    assert!(close(sda.write_iops, 10.0) && close(sda.util_pct, 0.90));
    assert!(close(sda.write_bytes_per_sec, 0.20 * MB) && close(sda.w_await_ms, 0.80));
    assert!(
        run.samples[1..]
            .iter()
            .all(|s| disk(s, "sda").util_pct == Some(0.0))
    );
    let kept = hostile::run(&mut importer_with(false), FIXTURES[5].1.as_bytes());
    assert!(close(disk(&kept.samples[0], "sda").util_pct, 0.34));
}

#[test]
fn new_layout_f_group_kilobytes_fourteen_devices() {
    let run = import(FIXTURES[6].1);
    assert_eq!(run.samples.len(), 1);
    let s = &run.samples[0];
    assert_eq!(s.disks.len(), 14);
    let sda = disk(s, "sda");
    assert!(close(sda.read_iops, 2.67) && close(sda.util_pct, 0.41));
    assert!(close(sda.read_bytes_per_sec, 100.76 * KB));
    assert!(close(sda.write_bytes_per_sec, 129.44 * KB));
    assert!(close(disk(s, "dm-0").read_iops, 2.38));
    assert!(has_note(&run, None, ONLY_ONE));
}

#[test]
fn disks_only_multidevice() {
    let run = import(FIXTURES[7].1);
    assert_eq!(run.samples.len(), 2);
    assert!(
        run.samples
            .iter()
            .all(|s| s.disks.len() == 4 && s.cpu.is_none())
    );
    let nvme = disk(&run.samples[0], "nvme0n1");
    assert!(close(nvme.write_iops, 15.0) && close(nvme.util_pct, 0.85));
    let nvme = disk(&run.samples[1], "nvme0n1");
    assert!(close(nvme.w_await_ms, 44.50) && close(nvme.util_pct, 3.05));
    let boot = hostile::run(&mut importer_with(false), FIXTURES[7].1.as_bytes());
    assert!(close(disk(&boot.samples[0], "mmcblk0").r_await_ms, 1133.0));
    assert!(close(disk(&boot.samples[0], "nvme0n1").read_iops, 222.97));
}

#[test]
fn synthetic_us_times_and_sectors_without_split_awaits() {
    let run = import(FIXTURES[8].1);
    assert_eq!(run.samples.len(), 2);
    let (a, b) = (&run.samples[0], &run.samples[1]);
    assert_eq!((a.t_ms, b.t_ms), (Some(T - 1000), Some(T + 4000)));
    assert_eq!(a.line, 11);
    let sda = disk(a, "sda");
    assert!(close(sda.read_iops, 150.0) && close(sda.read_bytes_per_sec, 38400.0 * 512.0));
    assert!(close(sda.await_ms, 20.0) && close(sda.util_pct, 98.60));
    assert_eq!((sda.r_await_ms, sda.w_await_ms), (None, None));
    assert!(close(a.cpu.as_ref().and_then(|c| c.iowait_pct), 40.10));
    assert!(!has_note(&run, None, UNTIMED));
    assert_eq!(run.notes.len(), 1, "{:?}", run.notes);
}

#[test]
fn synthetic_iso_times_disks_only_and_long_names() {
    let run = import(FIXTURES[9].1);
    assert_eq!(run.samples.len(), 2);
    assert_eq!(run.samples[0].t_ms, Some(T + 1000));
    assert_eq!(run.samples[1].t_ms, Some(T + 2000));
    let lv = disk(&run.samples[0], "ubuntu--vg-ubuntu--lv");
    assert!(close(lv.read_bytes_per_sec, 642560.0 * KB) && close(lv.util_pct, 99.20));
    assert!(close(disk(&run.samples[1], "nvme0n1").read_iops, 2488.0));
    assert_eq!(run.notes.len(), 1, "{:?}", run.notes);
}

#[test]
fn synthetic_human_units_with_names_on_their_own_line() {
    let run = import(FIXTURES[10].1);
    assert_eq!(run.samples.len(), 1, "{:?}", run.notes);
    let s = &run.samples[0];
    assert_eq!((s.t_ms, s.disks.len()), (Some(T + 1000), 2));
    let sda = disk(s, "sda");
    assert!(close(sda.write_iops, 1857.0) && close(sda.util_pct, 100.0));
    assert!(close(sda.write_bytes_per_sec, 463.5 * MB) && close(sda.w_await_ms, 73.49));
    assert!(close(s.cpu.as_ref().and_then(|c| c.iowait_pct), 12.6));
    assert_eq!(run.notes.len(), 1, "{:?}", run.notes);
}

#[test]
fn times_of_day_alone_take_the_banner_date() {
    let text = "Linux 5.4.0 (h) \t01/05/2023 \t_x86_64_\t(8 CPU)\n\n\
        11:59:59 PM\nDevice r/s w/s %util\nsda 1.00 2.00 3.00\n\n\
        00:00:04\nDevice r/s w/s %util\nsda 4.00 5.00 6.00\n\n\
        00:00:09\nDevice r/s w/s %util\nsda 7.00 8.00 9.00\n";
    let run = import(text);
    let day = T - 43_201_000;
    let times: Vec<Option<u64>> = run.samples.iter().map(|s| s.t_ms).collect();
    assert_eq!(
        times,
        [Some(day + 86_404_000), Some(day + 86_409_000)],
        "{:?}",
        run.notes
    );
}

#[test]
fn comma_decimals_of_a_german_locale() {
    let text = "Linux 5.17.1 (vm2) \t07.04.2022 \t_x86_64_\t(16 CPU)\n\n\
        Device            r/s     w/s     rMB/s     wMB/s  %util\n\
        nvme1n1         12,08   48,47      0,07      0,19   0,35\n";
    let run = import(text);
    let nvme = disk(&run.samples[0], "nvme1n1");
    assert!(close(nvme.read_iops, 12.08) && close(nvme.write_bytes_per_sec, 0.19 * MB));
}

#[test]
fn bad_lines_are_noted_and_the_rest_imports() {
    let text = "Linux 5.4.0 (h) \t01/05/2023 \t_x86_64_\t(8 CPU)\n\n\
        Device r/s w/s %util\nsda 1.00 2.00 3.00\n\nDevice r/s w/s %util\n\
        sda 1.00 abc -2.00\n\
        nvme0n1p1234567890.00 1.00 2.00\n\
        sdb 1.00 N/A 1e400\n\
        sdc 9.00 9.00 9.00\n\n";
    let run = import(text);
    assert_eq!(run.samples.len(), 1);
    let s = &run.samples[0];
    assert_eq!(s.disks.len(), 3);
    let sda = disk(s, "sda");
    assert_eq!(
        (sda.read_iops, sda.write_iops, sda.util_pct),
        (Some(1.0), None, None)
    );
    assert!(has_note(
        &run,
        Some(7),
        "`abc` is not a number in w/s (and 1 more"
    ));
    assert!(has_note(&run, Some(8), "expected 4 fields, found 3"));
    assert!(has_note(&run, Some(9), "`N/A` is not a number in w/s"));
    assert_eq!(disk(s, "sdc").util_pct, Some(9.0));
}

#[test]
fn a_report_cut_off_at_the_end_is_dropped() {
    let text = FIXTURES[4].1;
    let cut = text.len() - 30;
    let run = import(&text[..cut]);
    assert_eq!(run.samples.len(), 17);
    let last_line = text[..cut].lines().count();
    assert!(
        has_note(&run, Some(last_line), "is cut off: dropped"),
        "{:?}",
        run.notes
    );
    // A report that stops after its avg-cpu block is cut off too.
    let upto = text.rfind("Device").unwrap_or(0);
    let run = import(&text[..upto]);
    assert_eq!(run.samples.len(), 17);
    assert!(run.notes.iter().any(|n| n.message.contains("is cut off")));
}

#[test]
fn hostile_input_never_panics() {
    for (_, text) in FIXTURES {
        hostile::torture(text.as_bytes(), &|| Box::new(importer()), sniff);
    }
    hostile::huge_line(&|| Box::new(importer()), sniff);
}

#[test]
fn sniff_accepts_its_own_and_says_why_not() {
    for (name, text) in FIXTURES {
        assert_eq!(sniff(&hostile::head(text)), Ok(()), "{name}");
    }
    let err = sniff(&["Filesystem 1K-blocks Used Available Use% Mounted on"]);
    assert!(err.is_err_and(|e| e.contains("`Filesystem 1K-blocks")));
    let err = sniff(&["Linux 5.4.0 (h) \t01/05/2023 \t_x86_64_\t(8 CPU)", "hello"]);
    assert!(err.is_err_and(|e| e.contains("no `avg-cpu:` or `Device` header")));
    assert!(sniff(&[]).is_err());
}
