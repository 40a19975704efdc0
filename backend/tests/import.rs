//! `vramio import` and `vramio check --from` on logs the test writes as the tools print them
//! (nvidia-smi `--query-gpu` CSV, `iostat -x -t`): a GPU at 96% gives gpu_memory_pressure, a
//! starved GPU beside a disk with high await gives input_bound_disk, a CSV without memory fields
//! gives unknown naming what is missing; a recording imported again gives the same frames; a
//! file of no known format is refused with what was tried.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use shared::Frame;
use std::fmt::Write;
use vramio_bin::{TempDir, run};

/// nvidia-smi's timestamp for second `s` after 2023-01-05 12:00:00.
fn stamp(s: u32) -> String {
    let (m, sec) = (s / 60, s % 60);
    format!("2023/01/05 12:{m:02}:{sec:02}.{:03}", 100 + s % 7)
}

/// `nvidia-smi --query-gpu=timestamp,index,name,memory.total,memory.used,utilization.gpu
/// --format=csv -l 1` for one GPU over `n` seconds.
fn gpu_csv(n: u32, used_mib: impl Fn(u32) -> u32, util: impl Fn(u32) -> u32) -> String {
    let mut out = String::from(
        "timestamp, index, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%]\n",
    );
    for s in 0..n {
        let _ = writeln!(
            out,
            "{}, 0, NVIDIA H100 80GB HBM3, 81559 MiB, {} MiB, {} %",
            stamp(s),
            used_mib(s),
            util(s)
        );
    }
    out
}

/// `iostat -x -t 1` (sysstat 12) over `n` seconds, after its since-boot first report: `nvme0n1`
/// reading 200 MB/s, its r_await `await_ms(s)` and queue 8.
fn iostat_log(n: u32, await_ms: impl Fn(u32) -> f64) -> String {
    let mut out =
        String::from("Linux 5.15.0-91-generic (gpu7) \t01/05/2023 \t_x86_64_\t(64 CPU)\n\n");
    let header = "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util";
    let report = |out: &mut String, time: String, await_ms: f64, queue: f64| {
        let _ = write!(
            out,
            "{time}\navg-cpu:  %user   %nice %system %iowait  %steal   %idle\n           8.00    0.00    2.00   25.00    0.00   65.00\n\n{header}\nnvme0n1       1600.00 204800.00     0.00   0.00 {await_ms:7.2}   128.00    1.00      4.00     0.00   0.00    1.00     4.00    0.00      0.00     0.00   0.00    0.00     0.00    0.00    0.00 {queue:7.2}  99.50\n\n"
        );
    };
    // The since-boot report, which an importer must skip.
    report(&mut out, "01/05/2023 11:59:59 AM".into(), 0.5, 0.1);
    for s in 0..n {
        let (m, sec) = (s / 60, s % 60);
        report(
            &mut out,
            format!("01/05/2023 12:{m:02}:{sec:02} PM"),
            await_ms(s),
            8.0,
        );
    }
    out
}

fn write(dir: &TempDir, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a log");
    path.to_string_lossy().into_owned()
}

/// `vramio check --json --from FILES...`: (exit code, the report).
fn check(files: &[&str]) -> (i32, serde_json::Value, String) {
    let mut args = vec!["check", "--json"];
    for f in files {
        args.extend(["--from", f]);
    }
    let r = run(&args);
    let json = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}): {r:?}"));
    (r.status.code().unwrap_or(-1), json, r.stderr)
}

#[test]
fn a_gpu_csv_at_96_percent_is_gpu_memory_pressure() {
    let dir = TempDir::new("import-pressure");
    let csv = write(&dir, "gpu.csv", &gpu_csv(60, |_| 78_300, |_| 97));
    let (code, report, stderr) = check(&[&csv]);
    assert_eq!(
        report["verdict"], "gpu_memory_pressure",
        "{report:#}\n{stderr}"
    );
    assert_eq!(code, 2, "critical: {report:#}");
    assert_eq!(report["frames"], 60);
}

#[test]
fn a_starved_gpu_and_a_slow_disk_are_input_bound_on_disk() {
    let dir = TempDir::new("import-disk");
    // A job holds 30 GB and the GPU waits: 10-35% busy.
    let csv = write(
        &dir,
        "gpu.csv",
        &gpu_csv(60, |_| 30_000, |s| 10 + (s * 7) % 25),
    );
    // The disk's own baseline for the first 8 s, then 15x its latency with a queue of 8.
    let io = write(
        &dir,
        "io.txt",
        &iostat_log(60, |s| if s < 8 { 2.5 } else { 38.0 + f64::from(s % 5) }),
    );
    let (code, report, stderr) = check(&[&csv, &io]);
    assert_eq!(
        report["verdict"], "input_bound_disk",
        "{report:#}\n{stderr}"
    );
    assert!(code == 1 || code == 2, "{code}: {report:#}");
    let notes = report["notes"].to_string();
    assert!(notes.contains("read as"), "{notes}");
    assert!(
        notes.contains("since boot"),
        "the first report is skipped: {notes}"
    );
}

#[test]
fn a_csv_without_memory_fields_is_unknown_and_says_what_is_missing() {
    let dir = TempDir::new("import-nomem");
    let mut csv = String::from("timestamp, index, utilization.gpu [%], temperature.gpu\n");
    for s in 0..30 {
        let _ = writeln!(csv, "{}, 0, 55 %, 60", stamp(s));
    }
    let csv = write(&dir, "util.csv", &csv);
    let (code, report, stderr) = check(&[&csv]);
    assert_eq!(code, 3, "{report:#}\n{stderr}");
    assert_eq!(report["verdict"], "no_data", "{report:#}");
    assert_eq!(report["severity"], "unknown");
    let why = report["no_data"].to_string();
    assert!(
        why.contains("memory.used"),
        "the missing metric is named: {why}"
    );
}

#[test]
fn import_writes_a_recording_that_check_reads_and_a_recording_round_trips() {
    let dir = TempDir::new("import-roundtrip");
    let csv = write(&dir, "gpu.csv", &gpu_csv(20, |s| 10_000 + 100 * s, |_| 80));
    let out = dir.join("run.ndjson");
    let out_s = out.to_string_lossy().into_owned();
    let r = run(&["import", &csv, "--out", &out_s]);
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains("20 frames"), "{r:?}");
    let frames: Vec<Frame> = std::fs::read_to_string(&out)
        .expect("the recording")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a frame per line"))
        .collect();
    assert_eq!(frames.len(), 20);
    let g = &frames[3].gpus[0];
    assert_eq!(g.memory.map(|m| m.used_bytes.0), Some(10_300 << 20));
    assert_eq!(g.utilization_gpu_pct.map(|p| p.0), Some(80.0));
    assert_eq!(g.temperature_c, None, "not in the log: absent, never 0");
    // The log's own times (nvidia-smi's milliseconds wander a little).
    assert!(
        frames
            .windows(2)
            .all(|w| (994..=1006).contains(&(w[1].t_ms - w[0].t_ms))),
        "{:?}",
        frames.iter().map(|f| f.t_ms).collect::<Vec<_>>()
    );
    assert_eq!(frames[0].t_ms, 1_672_920_000_100);

    // The recording imported again gives the same frames.
    let again = dir.join("again.ndjson");
    let again_s = again.to_string_lossy().into_owned();
    let r = run(&["import", &out_s, "--out", &again_s]);
    assert!(r.ok(), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(&again).expect("again"),
        std::fs::read_to_string(&out).expect("first")
    );
    // check reads it like the logs it came from.
    let (_, from_csv, _) = check(&[&csv]);
    let (_, from_recording, _) = check(&[&out_s]);
    assert_eq!(from_csv["verdict"], from_recording["verdict"]);
}

#[test]
fn a_file_of_no_known_format_is_refused_with_what_was_tried() {
    let dir = TempDir::new("import-unknown");
    let junk = write(&dir, "notes.txt", "dear diary\ntoday the GPU was slow\n");
    let out = dir.join("x.ndjson").to_string_lossy().into_owned();
    let r = run(&["import", &junk, "--out", &out]);
    assert!(!r.ok(), "{r:?}");
    assert!(r.stderr.contains("matches no format"), "{}", r.stderr);
    for id in ["nvidia-smi-csv", "iostat", "df"] {
        assert!(r.stderr.contains(id), "{id} is listed: {}", r.stderr);
    }
    assert!(!std::path::Path::new(&out).exists(), "nothing written");
    let r = run(&["import", &junk, "--out", &out, "--format", "no-such"]);
    assert!(!r.ok());
    assert!(r.stderr.contains("not a format"), "{}", r.stderr);
}

#[test]
fn a_headerless_csv_reads_with_its_field_list() {
    let dir = TempDir::new("import-fields");
    let mut csv = String::new();
    for s in 0..10 {
        let _ = writeln!(csv, "{}, 0, 81559 MiB, {} MiB, 50 %", stamp(s), 20_000 + s);
    }
    let csv = write(&dir, "noheader.csv", &csv);
    let out = dir.join("x.ndjson").to_string_lossy().into_owned();
    let refused = run(&["import", &csv, "--out", &out]);
    assert!(!refused.ok(), "no header, no field list: {refused:?}");
    let r = run(&[
        "import",
        &csv,
        "--out",
        &out,
        "--format",
        "nvidia-smi-csv",
        "--fields",
        "timestamp,index,memory.total,memory.used,utilization.gpu",
    ]);
    assert!(r.ok(), "{r:?}");
    assert!(r.stdout.contains("10 frames"), "{r:?}");
}

/// A log with a header and no rows gives no frames: the import fails and whatever `--out` held
/// is left as it was (it was replaced by an empty file).
#[test]
fn an_import_of_no_rows_leaves_the_out_file_alone() {
    let dir = TempDir::new("import-empty");
    let empty = write(&dir, "gpu.csv", &gpu_csv(0, |_| 0, |_| 0));
    let out = dir.join("run.ndjson");
    std::fs::write(&out, "precious\n").expect("an earlier recording");
    let out_s = out.to_string_lossy().into_owned();
    let r = run(&["import", &empty, "--out", &out_s]);
    assert!(!r.ok(), "{r:?}");
    assert!(r.stderr.contains("no samples"), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(&out).expect("still there"),
        "precious\n"
    );
    assert!(
        !dir.join("run.ndjson.partial").exists(),
        "no temp file is left"
    );
}

/// `record --out` over an existing file: refused without `--force` or `--append`, the file
/// untouched; `--append` adds to it, `--force` replaces it.
#[test]
fn record_never_replaces_a_file_without_being_told() {
    let dir = TempDir::new("record-existing");
    let out = dir.join("run.ndjson");
    std::fs::write(&out, "precious\n").expect("an earlier recording");
    let out_s = out.to_string_lossy().into_owned();
    let record = |extra: &[&str]| {
        let mut args = vec![
            "record",
            "--out",
            &out_s,
            "--duration",
            "300ms",
            "--interval",
            "100ms",
        ];
        args.extend(extra);
        run(&args)
    };
    let r = record(&[]);
    assert!(!r.ok(), "{r:?}");
    assert!(
        r.stderr.contains("--force") && r.stderr.contains("--append"),
        "{r:?}"
    );
    assert_eq!(std::fs::read_to_string(&out).expect("kept"), "precious\n");

    let r = record(&["--append"]);
    assert!(r.ok(), "{r:?}");
    let text = std::fs::read_to_string(&out).expect("appended");
    assert!(text.starts_with("precious\n"), "{text}");
    assert!(text.lines().skip(1).count() >= 2, "{text}");
    let both = record(&["--force", "--append"]);
    assert_eq!(both.status.code(), Some(64), "{both:?}");

    let r = record(&["--force"]);
    assert!(r.ok(), "{r:?}");
    let text = std::fs::read_to_string(&out).expect("replaced");
    assert!(!text.contains("precious"), "{text}");
    for line in text.lines() {
        serde_json::from_str::<Frame>(line).expect("a frame per line");
    }
}

/// A recording with one byte that is not UTF-8 (a kill in the middle of a character): `check
/// --from` reads the rest and names the line, instead of refusing the file.
#[test]
fn check_reads_a_recording_with_a_bad_byte() {
    let dir = TempDir::new("check-bad-byte");
    let csv = write(&dir, "gpu.csv", &gpu_csv(20, |s| 10_000 + 100 * s, |_| 80));
    let out = dir.join("run.ndjson");
    let out_s = out.to_string_lossy().into_owned();
    assert!(run(&["import", &csv, "--out", &out_s]).ok());
    let (_, whole, _) = check(&[&out_s]);
    let mut bytes = std::fs::read(&out).expect("recording");
    let second_line = bytes.iter().position(|b| *b == b'\n').expect("lines") + 1;
    bytes.insert(second_line + 5, 0xff);
    std::fs::write(&out, &bytes).expect("damaged");
    let (code, report, stderr) = check(&[&out_s]);
    assert_ne!(code, 3, "{report} {stderr}");
    assert_eq!(report["verdict"], whole["verdict"], "{report} {stderr}");
    let all = format!("{report} {stderr}");
    assert!(all.contains("line 2") && all.contains("UTF-8"), "{all}");
}

/// An `nvidia-smi` table of a GPU in MIG mode, taken every 10 s: instance 1/0 fills to 97%
/// (process 28543), instance 2/0 stays at 19%.
#[test]
fn a_mig_table_log_gives_a_job_per_process_on_its_instance() {
    let one = include_str!("../../tests/fixtures/imports/nvsmi-table/synthetic-a100-mig-470.txt")
        .replace(
            "|  0    1   0   0  |   3751MiB / 20096MiB |",
            "|  0    1   0   0  |  19500MiB / 20096MiB |",
        )
        .replace(
            "|    0     1    0      28543      C   python3                         3745MiB |",
            "|    0     1    0      28543      C   python3                        19400MiB |",
        );
    assert!(one.contains("19400MiB"), "the fixture's rows moved");
    let log: String = (0..12)
        .map(|i| {
            one.replace(
                "09:30:12",
                &format!("09:{:02}:{:02}", 30 + i / 6, (i % 6) * 10),
            )
        })
        .collect();
    let dir = TempDir::new("import-mig");
    let path = write(&dir, "nvidia-smi.txt", &log);
    let (_, report, stderr) = check(&[&path]);
    let jobs = report["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs: {report:#}\n{stderr}"));
    let job = |pid: u32| {
        jobs.iter()
            .find(|j| j["gpu_pids"][0] == pid)
            .unwrap_or_else(|| panic!("no job {pid}: {report:#}"))
    };
    let (full, calm) = (job(28543), job(28650));
    assert_eq!(full["kind"], "process");
    assert_eq!(full["gpus"][0]["mig"]["gpu_instance_id"], 1, "{report:#}");
    assert_eq!(calm["gpus"][0]["mig"]["gpu_instance_id"], 2);
    assert_eq!(
        full["io_absent"], "the imported logs have no per-process I/O",
        "{report:#}"
    );
    assert_eq!(full["verdict"], "gpu_memory_pressure", "{report:#}");
    assert_eq!(full["findings"][0]["subject"], "gpu 0 mig 1/0");
    assert_ne!(calm["verdict"], "gpu_memory_pressure", "{report:#}");
}
