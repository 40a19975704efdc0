//! `vramio check --json` end to end: the real binary, the fake NVML for the GPUs, and real load on
//! this machine (O_DIRECT reads, busy cores, a loop-mounted ext4 filled up). Scenarios run one at
//! a time (they share the machine) and last a few seconds each. The verdicts rest on scripted GPU
//! figures plus load that is unmistakable on a noisy 2-core machine, not on tuned timings.

#[path = "common/direct_io.rs"]
mod direct_io;
#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/loop_mount.rs"]
mod loop_mount;

use direct_io::{AlignedBuf, o_direct};
use loop_mount::loop_mount;
use serde_json::Value;
use shared::diagnosis::Diagnosis;
use shared::diagnosis::words::{Tz, evidence_text, reason};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// One scenario at a time: each puts real load on the machine.
static MACHINE: Mutex<()> = Mutex::new(());

fn machine() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

const MIB: u64 = 1024 * 1024;

/// One GPU whose memory goes from `from_mib` to `to_mib` over `over_s` seconds at `util` %,
/// held by this test process. `lost_at_s` makes it fall off the bus.
fn gpu_script(
    from_mib: u64,
    to_mib: u64,
    over_s: f64,
    util: u32,
    lost_at_s: Option<f64>,
) -> String {
    let lost = lost_at_s.map_or("null".to_owned(), |s| s.to_string());
    format!(
        r#"{{"driver_version": "580.00", "devices": [
        {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-c0ffee00-0000-0000-0000-000000000000",
          "memory_total_mib": 81559, "repeat": false, "lost_at_s": {lost}, "slow_ms": 0,
          "timeline": [{{"at_s": 0, "memory_used_mib": {from_mib}, "util_gpu": {util}, "util_mem": 10,
                         "temperature_c": 60, "power_w": 300,
                         "processes": [{{"pid": {pid}, "used_mib": {held}}}]}},
                       {{"at_s": {over_s}, "memory_used_mib": {to_mib}}}]}}]}}"#,
        pid = std::process::id(),
        held = from_mib.saturating_sub(500),
    )
}

struct Run {
    code: i32,
    json: Value,
    stdout: String,
    stderr: String,
}

fn vramio(args: &[&str], script: Option<&Path>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vramio"));
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(script) = script {
        cmd.env("FAKE_NVML_SCRIPT", script);
    }
    let out = cmd.output().expect("run vramio");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Run {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Thresholds that take the build machine's own disks and RAM out of the GPU scenarios: how full
/// this machine's disk is, or how much RAM it has free, is not what they test, and must not turn
/// their verdict or exit code.
const HOST_NEUTRAL: &str = "\
disk_warn_pct = 100.0
disk_crit_pct = 100.0
disk_full_horizon_s = 0.0
inodes_warn_pct = 100.0
shm_min_bytes = 0.0
shm_full_pct = 100.0
mem_available_warn_pct = 0.0
mem_available_crit_pct = 0.0
psi_memory_some_pct = 100.0
";

/// `vramio check --json` over `window` with a 250 ms interval and the fake NVML. Without a
/// `--thresholds` in `extra`, the host-neutral thresholds apply.
fn check(script: &str, window: &str, extra: &[&str]) -> Run {
    let file = fake_nvml::write_script(script);
    let neutral = fake_nvml::write_script(HOST_NEUTRAL);
    let nvml = fake_nvml::fake_nvml_path();
    let mut args = vec![
        "check",
        "--json",
        "--window",
        window,
        "--interval",
        "250ms",
        "--nvml-lib",
    ];
    let nvml_s = nvml.to_string_lossy().into_owned();
    args.push(&nvml_s);
    let neutral_s = neutral.path().to_string_lossy().into_owned();
    if !extra.contains(&"--thresholds") {
        args.extend_from_slice(&["--thresholds", &neutral_s]);
    }
    args.extend_from_slice(extra);
    vramio(&args, Some(file.path()))
}

fn verdict(r: &Run) -> &str {
    r.json["verdict"].as_str().unwrap_or("(no verdict)")
}

fn finding_rules(r: &Run) -> Vec<String> {
    r.json["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(|x| x["rule"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn answer(r: &Run, node: &str) -> Option<String> {
    r.json["path"]
        .as_array()?
        .iter()
        .find(|n| n["node"] == node)
        .and_then(|n| n["answer"].as_str().map(str::to_owned))
}

fn explain(r: &Run) -> String {
    format!(
        "exit {}; verdict {}; findings {:?}; path {}; stderr: {}",
        r.code,
        verdict(r),
        finding_rules(r),
        serde_json::to_string(&r.json["path"]).unwrap_or_default(),
        r.stderr
    )
}

/// Background load that stops (and is joined) when dropped.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Every core spinning.
fn busy_cores() -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = (0..n)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    Load { stop, threads }
}

/// Removes a path when dropped.
struct Removed(PathBuf);
impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A 256 MiB file read over and over with O_DIRECT by four threads (queue depth ~4): reads at the
/// device's peak with requests queued.
fn heavy_reads() -> (Load, Removed) {
    let path = std::env::current_exe()
        .expect("exe")
        .parent()
        .expect("dir")
        .join(format!("vramio-reads-{}.bin", std::process::id()));
    let removed = Removed(path.clone());
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(o_direct())
            .open(&path)
            .expect("create read file");
        let mut buf = AlignedBuf::new(MIB as usize);
        buf.as_mut_slice().fill(7);
        for _ in 0..256 {
            f.write_all(buf.as_mut_slice()).expect("write read file");
        }
        f.sync_all().expect("sync");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let threads = (0..4)
        .map(|i| {
            let stop = stop.clone();
            let path = path.clone();
            std::thread::spawn(move || {
                let mut buf = AlignedBuf::new(MIB as usize);
                let mut f = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(o_direct())
                    .open(&path)
                    .expect("open for O_DIRECT reads");
                // Stagger the threads over the file.
                let _ = std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(i * 64 * MIB));
                while !stop.load(Ordering::Relaxed) {
                    match f.read(buf.as_mut_slice()) {
                        Ok(0) => {
                            let _ = std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0));
                        }
                        Ok(_) => {}
                        Err(e) => panic!("O_DIRECT read failed: {e}"),
                    }
                }
            })
        })
        .collect();
    (Load { stop, threads }, removed)
}

#[test]
fn healthy() {
    let _m = machine();
    // 40% memory, busy GPU, nothing else going on.
    let r = check(&gpu_script(32_000, 32_000, 1.0, 95, None), "3s", &[]);
    assert_eq!(verdict(&r), "healthy", "{}", explain(&r));
    assert_eq!(r.code, 0, "{}", explain(&r));
    assert_eq!(r.json["severity"], "ok");
    assert_eq!(answer(&r, "gpu_memory").as_deref(), Some("no"));
    assert!(
        finding_rules(&r).contains(&"headroom".to_owned()),
        "room to raise the batch size: {}",
        explain(&r)
    );
}

#[test]
fn gpu_memory_pressure_steady() {
    let _m = machine();
    let r = check(&gpu_script(79_000, 79_000, 1.0, 97, None), "3s", &[]);
    assert_eq!(verdict(&r), "gpu_memory_pressure", "{}", explain(&r));
    assert_eq!(r.code, 2, "96.9% is critical: {}", explain(&r));
    assert_eq!(answer(&r, "gpu_memory").as_deref(), Some("yes"));
    let f = &r.json["findings"][0];
    assert!(!f["suggestions"].as_array().expect("suggestions").is_empty());
}

#[test]
fn gpu_memory_pressure_growing_below_90_percent() {
    let _m = machine();
    // 49% -> 61% of 80 GiB over 4 s (~2.5 GiB/s): full within a minute although below 90%.
    let r = check(&gpu_script(40_000, 50_000, 4.0, 97, None), "4s", &[]);
    assert_eq!(verdict(&r), "gpu_memory_pressure", "{}", explain(&r));
    assert_eq!(r.code, 1, "a projection raises a warning: {}", explain(&r));
    let p = r.json["projections"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["kind"] == "time_to_full_gpu_memory"))
        .unwrap_or_else(|| panic!("a time-to-OOM projection: {}", explain(&r)));
    let secs = p["seconds"].as_f64().expect("seconds");
    assert!(secs > 0.0 && secs < 15.0 * 60.0, "time to OOM {secs} s");
}

#[test]
fn input_bound_disk() {
    let _m = machine();
    let (_load, _file) = heavy_reads();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let r = check(&gpu_script(30_000, 30_000, 1.0, 12, None), "4s", &[]);
    assert_eq!(verdict(&r), "input_bound_disk", "{}", explain(&r));
    assert_eq!(answer(&r, "gpu_starved").as_deref(), Some("yes"));
    assert_eq!(answer(&r, "disk_io").as_deref(), Some("yes"));
    assert!(r.code == 1 || r.code == 2, "{}", explain(&r));
}

#[test]
fn input_bound_cpu() {
    let _m = machine();
    let _load = busy_cores();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let r = check(&gpu_script(30_000, 30_000, 1.0, 12, None), "4s", &[]);
    assert_eq!(verdict(&r), "input_bound_cpu", "{}", explain(&r));
    assert_eq!(answer(&r, "disk_io").as_deref(), Some("no"));
    assert_eq!(answer(&r, "cpu_bound").as_deref(), Some("yes"));
}

#[test]
fn gpu_underutilized() {
    let _m = machine();
    let r = check(&gpu_script(30_000, 30_000, 1.0, 12, None), "3s", &[]);
    assert_eq!(answer(&r, "gpu_starved").as_deref(), Some("yes"));
    assert_eq!(r.code, 1, "{}", explain(&r));
    // This test adds no load of its own: the host's real CPU and disks decide between the
    // starved GPU's causes. Assert what they decided, whatever else runs on the machine.
    let want = match (
        answer(&r, "disk_io").as_deref(),
        answer(&r, "cpu_bound").as_deref(),
    ) {
        (Some("yes"), _) => "input_bound_disk",
        (_, Some("yes")) => "input_bound_cpu",
        _ => "gpu_underutilized",
    };
    assert_eq!(verdict(&r), want, "{}", explain(&r));
    if want != "gpu_underutilized" {
        eprintln!(
            "gpu_underutilized: the machine was busy, so {want}: {}",
            explain(&r)
        );
    }
}

#[test]
fn disk_space_risk_on_a_loop_mounted_ext4_filled_to_96_percent() {
    let _m = machine();
    let mnt = loop_mount("loop", 64 * MIB);
    let st = rustix::fs::statvfs(&mnt.dir).expect("statvfs");
    let used = (st.f_blocks - st.f_bfree) * st.f_frsize;
    let avail = st.f_bavail * st.f_frsize;
    // used / (used + avail) = 96%
    let target = ((used + avail) as f64 * 0.96) as u64;
    let fill = target.saturating_sub(used);
    let mut f = std::fs::File::create(mnt.dir.join("checkpoint.pt")).expect("fill file");
    let chunk = vec![1u8; MIB as usize];
    let mut left = fill;
    while left > 0 {
        let n = left.min(MIB) as usize;
        f.write_all(&chunk[..n]).expect("fill");
        left -= n as u64;
    }
    f.sync_all().expect("sync");
    drop(f);
    // The built-in thresholds: this scenario is about disk space.
    let defaults = fake_nvml::write_script("");
    let defaults_s = defaults.path().to_string_lossy().into_owned();
    let r = check(
        &gpu_script(32_000, 32_000, 1.0, 95, None),
        "2s",
        &["--thresholds", &defaults_s],
    );
    assert_eq!(verdict(&r), "disk_space_risk", "{}", explain(&r));
    assert_eq!(r.code, 2, "96% is critical: {}", explain(&r));
    let mount = mnt.dir.to_string_lossy().into_owned();
    let on_it = r.json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| f["rule"] == "disk_space_risk" && f["subject"].as_str() == Some(mount.as_str()));
    assert!(on_it, "the finding names {mount}: {}", explain(&r));
}

#[test]
fn a_gpu_lost_mid_window_is_unknown_with_the_error() {
    let _m = machine();
    let r = check(&gpu_script(32_000, 32_000, 1.0, 95, Some(1.0)), "3s", &[]);
    assert_eq!(r.json["severity"], "unknown", "{}", explain(&r));
    assert_eq!(r.code, 3, "{}", explain(&r));
    let text = r.json.to_string();
    assert!(
        text.contains("GPU_IS_LOST") || text.to_lowercase().contains("lost"),
        "{text}"
    );
    assert_eq!(r.json["verdict"], "no_data", "{}", explain(&r));
    assert_eq!(
        r.json["no_data"]["cause"], "gpu_lost",
        "{}",
        r.json["no_data"]
    );
    assert_eq!(r.json["no_data"]["gpu"], "gpu 0");
}

#[test]
fn a_recording_gives_the_same_verdict_as_the_live_run() {
    let _m = machine();
    let script = fake_nvml::write_script(&gpu_script(79_000, 79_000, 1.0, 97, None));
    let nvml = fake_nvml::fake_nvml_path().to_string_lossy().into_owned();
    let out = std::env::temp_dir().join(format!("vramio-rec-{}.ndjson", std::process::id()));
    let _rm = Removed(out.clone());
    let out_s = out.to_string_lossy().into_owned();
    let rec = vramio(
        &[
            "record",
            "--out",
            &out_s,
            "--duration",
            "3s",
            "--interval",
            "250ms",
            "--nvml-lib",
            &nvml,
        ],
        Some(script.path()),
    );
    assert_eq!(rec.code, 0, "record failed: {}", rec.stderr);
    let lines = std::fs::read_to_string(&out)
        .expect("recording")
        .lines()
        .count();
    assert!(
        (10..=16).contains(&lines),
        "{lines} frames in 3 s at 250 ms"
    );
    let live = check(&gpu_script(79_000, 79_000, 1.0, 97, None), "3s", &[]);
    let neutral = fake_nvml::write_script(HOST_NEUTRAL);
    let neutral_s = neutral.path().to_string_lossy().into_owned();
    let replay = vramio(
        &[
            "check",
            "--json",
            "--from",
            &out_s,
            "--thresholds",
            &neutral_s,
        ],
        None,
    );
    assert_eq!(
        verdict(&replay),
        verdict(&live),
        "replay {} / live {}",
        explain(&replay),
        explain(&live)
    );
    assert_eq!(replay.code, live.code);
    assert_eq!(
        replay.json["path"].as_array().map(|p| p.len()),
        live.json["path"].as_array().map(|p| p.len())
    );
    assert_eq!(finding_rules(&replay), finding_rules(&live));

    // The words: the text report of the same recording prints, line for line, the shared
    // sentences of the diagnosis `--json` gave (a recording diagnoses the same every time).
    let report = vramio(
        &["check", "--from", &out_s, "--thresholds", &neutral_s],
        None,
    );
    assert_eq!(report.code, replay.code, "{}", report.stdout);
    // `check --json`'s `jobs` are its job reports (the diagnosis' own are written there, not
    // twice): the diagnosis is the rest.
    let mut host_only = replay.json.clone();
    if let Some(o) = host_only.as_object_mut() {
        o.remove("jobs");
    }
    let d: Diagnosis = serde_json::from_value(host_only).expect("a diagnosis");
    let lines: Vec<&str> = report.stdout.lines().map(str::trim).collect();
    // The text names the jobs the verdict is about first (`slurm 4412 of ana on GPU 0: ...`).
    let line = lines.get(1).copied().unwrap_or_default();
    let want = reason(&d, Tz::UTC);
    assert!(
        line == want || line.ends_with(&format!(": {want}")),
        "{line:?} vs {want:?}"
    );
    let mut sentences = 0;
    for e in d.path.iter().flat_map(|n| &n.evidence) {
        let want = evidence_text(e, Tz::UTC);
        assert!(lines.contains(&want.as_str()), "{want}\n{}", report.stdout);
        sentences += 1;
    }
    for e in d.findings.iter().flat_map(|f| &f.evidence) {
        let want = format!("evidence: {}", evidence_text(e, Tz::UTC));
        assert!(lines.contains(&want.as_str()), "{want}\n{}", report.stdout);
        sentences += 1;
    }
    assert!(sentences > 0);

    // A damaged recording: bad lines are named, good frames still count.
    let mut text = std::fs::read_to_string(&out).expect("recording");
    text.insert_str(0, "this is not json\n");
    std::fs::write(&out, text).expect("rewrite");
    let damaged = vramio(
        &[
            "check",
            "--json",
            "--from",
            &out_s,
            "--thresholds",
            &neutral_s,
        ],
        None,
    );
    assert_eq!(verdict(&damaged), verdict(&live));
    assert!(
        damaged.json["notes"].to_string().contains("line 1"),
        "{}",
        damaged.json
    );
}

#[test]
fn bad_input_is_named() {
    let _m = machine();
    let r = vramio(
        &["check", "--json", "--from", "/nonexistent/rec.ndjson"],
        None,
    );
    assert_eq!(r.code, 3);
    assert!(
        r.json["error"]
            .as_str()
            .unwrap_or_default()
            .contains("/nonexistent/rec.ndjson")
    );
    let r = vramio(
        &["serve", "--bind", "0.0.0.0", "--port", "0", "--no-auth"],
        None,
    );
    assert_eq!(
        r.code, 64,
        "--no-auth is refused with a non-loopback bind: {}",
        r.stderr
    );
    assert!(r.stderr.contains("without authentication"), "{}", r.stderr);
    let r = vramio(&["check", "--window", "soon"], None);
    assert_eq!(r.code, 64, "bad flag: {}", r.stderr);
    assert!(r.stderr.contains("not a duration"), "{}", r.stderr);
    let bad = std::env::temp_dir().join(format!("vramio-thr-{}.toml", std::process::id()));
    let _rm = Removed(bad.clone());
    std::fs::write(&bad, "gpu_mem_warm_pct = 50\n").expect("write");
    let r = vramio(&["check", "--thresholds", &bad.to_string_lossy()], None);
    assert_eq!(r.code, 64, "bad thresholds file: {}", r.stderr);
    assert!(r.stderr.contains("gpu_mem_warm_pct"), "{}", r.stderr);
}

#[test]
fn thresholds_can_be_overridden_from_a_file() {
    let _m = machine();
    let file = std::env::temp_dir().join(format!("vramio-thr-ok-{}.toml", std::process::id()));
    let _rm = Removed(file.clone());
    std::fs::write(
        &file,
        format!("{HOST_NEUTRAL}gpu_mem_warn_pct = 30.0\ngpu_mem_crit_pct = 99.0\n"),
    )
    .expect("write");
    let r = check(
        &gpu_script(32_000, 32_000, 1.0, 95, None),
        "2s",
        &["--thresholds", &file.to_string_lossy()],
    );
    assert_eq!(
        verdict(&r),
        "gpu_memory_pressure",
        "39% >= the overridden 30%: {}",
        explain(&r)
    );
    assert_eq!(r.code, 1);
}
