//! The iostat JSON importer against the real fixtures (values from SOURCES.md), the synthetic
//! variants (11.x keys, one line), bounded memory, hostile input, and sniffing against the
//! text formats.

use super::*;
use crate::ingest::formats::hostile::{self, Run};
use crate::ingest::formats::{df, iostat};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/imports/iostat-json/",
            $name
        ))
    };
}

const FIXTURES: [(&str, &str); 4] = [
    ("aks-xd-single.json", fixture!("aks-xd-single.json")),
    (
        "go-test-d-tps-excerpt.json",
        fixture!("go-test-d-tps-excerpt.json"),
    ),
    (
        "synthetic-tx-11x-native.json",
        fixture!("synthetic-tx-11x-native.json"),
    ),
    (
        "synthetic-txdm-v12-oneline.json",
        fixture!("synthetic-txdm-v12-oneline.json"),
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

fn notes_with(run: &Run, words: &str) -> usize {
    run.notes
        .iter()
        .filter(|n| n.message.contains(words))
        .count()
}

#[test]
fn aks_extended_single_entry_with_a_timestamp() {
    let run = import(FIXTURES[0].1);
    assert_eq!(run.samples.len(), 1);
    let s = &run.samples[0];
    assert_eq!((s.line, s.t_ms), (12, Some(1_593_051_393_000)));
    let names: Vec<&str> = s.disks.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(names, ["loop0", "sda", "sdb", "sdc", "sdd", "sr0"]);
    let cpu = s
        .cpu
        .as_ref()
        .map(|c| (c.user_pct, c.system_pct, c.idle_pct));
    assert_eq!(cpu, Some((Some(1.52), Some(1.26), Some(97.22))));
    let sda = disk(s, "sda");
    assert_eq!(
        (
            sda.read_iops,
            sda.read_bytes_per_sec,
            sda.r_await_ms,
            sda.util_pct
        ),
        (Some(0.0), Some(0.0), Some(0.0), Some(0.0))
    );
    assert_eq!((sda.avg_queue_size, sda.await_ms), (Some(0.0), None));
    assert_eq!(notes_with(&run, "only one report"), 1);
    assert_eq!(run.notes.len(), 1, "{:?}", run.notes);
}

#[test]
fn plain_tps_entry_without_a_timestamp() {
    let run = import(FIXTURES[1].1);
    assert_eq!(run.samples.len(), 1);
    let s = &run.samples[0];
    assert_eq!((s.t_ms, s.disks.len()), (None, 3));
    let nvme = disk(s, "nvme0n1");
    assert!(close(nvme.read_bytes_per_sec, 68.44 * KB));
    assert!(close(nvme.write_bytes_per_sec, 1832.81 * KB));
    assert_eq!((nvme.read_iops, nvme.util_pct), (None, None));
    assert_eq!(disk(s, "loop0").read_bytes_per_sec, Some(0.0));
    let cpu = s
        .cpu
        .as_ref()
        .map(|c| (c.user_pct, c.iowait_pct, c.idle_pct));
    assert_eq!(cpu, Some((Some(10.67), Some(0.26), Some(84.05))));
    assert_eq!(notes_with(&run, "no timestamps"), 1);
    assert_eq!(notes_with(&run, "only one report"), 1);
}

#[test]
fn old_keys_native_layout_skip_the_since_boot_entry() {
    let run = import(FIXTURES[2].1);
    assert_eq!(run.samples.len(), 2);
    let (a, b) = (&run.samples[0], &run.samples[1]);
    assert_eq!((a.t_ms, b.t_ms), (Some(T), Some(T + 10_000)));
    assert_eq!(a.line, 19);
    let sda = disk(a, "sda");
    assert!(close(sda.read_iops, 812.0) && close(sda.read_bytes_per_sec, 103_936.0 * KB));
    assert!(close(sda.avg_queue_size, 7.25) && close(sda.await_ms, 8.51));
    assert!(close(sda.r_await_ms, 8.80) && close(sda.util_pct, 99.10));
    assert!(close(a.cpu.as_ref().and_then(|c| c.iowait_pct), 35.25));
    assert!(close(disk(b, "sdb").read_iops, 1.0));
    assert_eq!(
        notes_with(&run, "the first report (line 11) was skipped"),
        1
    );
    assert_eq!(run.notes.len(), 1, "{:?}", run.notes);
    let all = hostile::run(&mut importer_with(false), FIXTURES[2].1.as_bytes());
    assert_eq!(all.samples.len(), 3);
    assert_eq!(all.samples[0].t_ms, Some(T - 10_000));
}

#[test]
fn one_line_megabytes_disks_only() {
    let run = import(FIXTURES[3].1);
    assert_eq!(run.samples.len(), 2);
    assert_eq!(run.samples[0].t_ms, Some(T + 1000));
    assert!(run.samples.iter().all(|s| s.cpu.is_none() && s.line == 1));
    let nvme = disk(&run.samples[0], "nvme0n1");
    assert!(close(nvme.read_bytes_per_sec, 390.0 * MB) && close(nvme.util_pct, 98.5));
    assert!(close(nvme.avg_queue_size, 1.35) && close(nvme.read_iops, 3120.0));
}

#[test]
fn an_interrupted_run_keeps_its_whole_entries_and_drops_the_cut_one() {
    let text = FIXTURES[2].1;
    let cut = text.rfind("\"util\": 0.04").unwrap_or(0);
    let run = import(&text[..cut]);
    assert_eq!(run.samples.len(), 1, "{:?}", run.notes);
    assert_eq!(notes_with(&run, "the last statistics entry is cut off"), 1);
    // Stopped between entries (Ctrl-C after a report): nothing is cut.
    let between = text.rfind(",\n\t\t\t\t{").unwrap_or(0);
    let run = import(&text[..between]);
    assert_eq!(run.samples.len(), 1);
    assert_eq!(notes_with(&run, "cut off"), 0);
}

#[test]
fn bad_values_and_bad_entries_are_noted() {
    let text = r#"{"sysstat": {"hosts": [{"date": "01/05/2023", "statistics": [
        {"disk": [{"disk_device": "sda", "r/s": 1.0}]},
        {"disk": [{"disk_device": "sda", "r/s": -1.0, "w/s": "x", "util": 5.0}, {"nope": 1}]},
        {"disk": [{"disk_device": "sda", "r/s": 1e400}]},
        {"timestamp": "yesterday", "avg-cpu": {"user": 1.0}},
        {"other": 1}
    ]}]}}"#;
    let run = import(text);
    assert_eq!(run.samples.len(), 2, "{:?}", run.notes);
    let sda = disk(&run.samples[0], "sda");
    assert_eq!(
        (sda.read_iops, sda.write_iops, sda.util_pct),
        (None, None, Some(5.0))
    );
    assert!(run.notes.iter().any(|n| {
        n.line == Some(3)
            && n.message
                .contains("`-1.0` is out of range in r/s (and 2 more")
    }));
    assert!(
        run.notes
            .iter()
            .any(|n| n.line == Some(4) && n.message.contains("not valid JSON"))
    );
    assert!(
        run.notes
            .iter()
            .any(|n| n.line == Some(5) && n.message.contains("`yesterday`"))
    );
    assert!(
        run.notes
            .iter()
            .any(|n| n.line == Some(6) && n.message.contains("neither"))
    );
}

#[test]
fn an_entry_past_the_cap_is_skipped_and_memory_stays_bounded() {
    let mut text = String::from("{\"sysstat\": {\"hosts\": [{\"statistics\": [\n{\"disk\": [\n");
    let row = "{\"disk_device\": \"sda\", \"r/s\": 1.00, \"w/s\": 2.00, \"util\": 3.00},\n";
    while text.len() < MAX_ENTRY_BYTES + 1000 {
        text.push_str(row);
    }
    text.push_str("{\"disk_device\": \"sda\"}]},\n{\"disk\": [{\"disk_device\": \"sdb\", \"util\": 1.0}]}\n]}]}}\n");
    let run = hostile::run(&mut importer_with(false), text.as_bytes());
    assert_eq!(notes_with(&run, "larger than"), 1);
    assert_eq!(run.samples.len(), 1);
    assert_eq!(run.samples[0].disks[0].device, "sdb");
}

#[test]
fn deep_nesting_and_not_iostat_json() {
    let run = import(&"[".repeat(100));
    assert_eq!(notes_with(&run, "nesting deeper"), 1);
    assert!(run.samples.is_empty());
    let run = import("{\"a\": 1}");
    assert_eq!(notes_with(&run, "no `statistics` array"), 1);
}

#[test]
fn hostile_input_never_panics() {
    for (_, text) in FIXTURES {
        hostile::torture(text.as_bytes(), &|| Box::new(importer()), sniff);
    }
    hostile::huge_line(&|| Box::new(importer()), sniff);
}

#[test]
fn sniff_accepts_its_own_and_the_formats_reject_each_other() {
    for (name, text) in FIXTURES {
        let head = hostile::head(text);
        assert_eq!(sniff(&head), Ok(()), "{name}");
        assert!(
            iostat::sniff(&head).is_err_and(|e| e.contains("`{")),
            "{name}"
        );
        assert!(
            df::sniff(&head).is_err_and(|e| e.contains("not df's")),
            "{name}"
        );
    }
    for (name, text) in iostat::tests::FIXTURES.iter().chain(&df::tests::FIXTURES) {
        let err = sniff(&hostile::head(text));
        assert!(
            err.is_err_and(|e| e.contains("does not open a JSON object")),
            "{name}"
        );
    }
    assert!(sniff(&["{\"a\": 1}"]).is_err_and(|e| e.contains("no `\"sysstat\"`")));
    assert!(sniff(&[]).is_err());
}
