//! MIG end to end (docs/jobs.md#mig): the real binary on the fake NVML with a GPU in MIG mode,
//! two instances and a real process on each. Each process's job is attributed to its instance,
//! its memory share is of the instance's memory, the instance's utilization is absent, and the
//! job whose instance is full is under memory pressure while the GPU as a whole is not.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/sleeper.rs"]
mod sleeper;

use serde_json::Value;
use sleeper::Sleeper;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const MIB: u64 = 1024 * 1024;

/// GPU 0 of 80 GiB in MIG mode: instance 1/0 of 10,000 MiB with `full` holding 9,700 MiB, and
/// instance 2/0 of 10,000 MiB with `calm` holding 2,000 MiB. No utilization (as under MIG).
fn script(full: u32, calm: u32) -> String {
    format!(
        r#"{{"driver_version": "580.00", "devices": [{{
            "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-a1000000-0000-0000-0000-000000000000",
            "memory_total_mib": 81920,
            "mig": [
                {{"gpu_instance_id": 1, "compute_instance_id": 0, "uuid": "MIG-11111111", "memory_total_mib": 10000}},
                {{"gpu_instance_id": 2, "compute_instance_id": 0, "uuid": "MIG-22222222", "memory_total_mib": 10000}}
            ],
            "timeline": [{{"at_s": 0, "memory_used_mib": 11700, "temperature_c": 50, "power_w": 200,
                "processes": [
                    {{"pid": {full}, "used_mib": 9700, "gpu_instance_id": 1, "compute_instance_id": 0}},
                    {{"pid": {calm}, "used_mib": 2000, "gpu_instance_id": 2, "compute_instance_id": 0}}
                ]}}]
        }}]}}"#
    )
}

#[test]
fn each_job_is_attributed_to_its_mig_instance_and_a_full_instance_is_memory_pressure() {
    let (full, calm) = (Sleeper::start(), Sleeper::start());
    let script = fake_nvml::write_script(&script(full.1, calm.1));
    let out = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(["check", "--json", "--window", "3s", "--interval", "250ms"])
        .arg("--nvml-lib")
        .arg(fake_nvml::fake_nvml_path())
        .env("FAKE_NVML_SCRIPT", script.path())
        .output()
        .expect("vramio check");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let jobs = v["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs: {text}"));
    let job = |pid: u32| {
        jobs.iter()
            .find(|j| j["gpu_pids"][0] == pid)
            .unwrap_or_else(|| panic!("no job for {pid}: {text}"))
    };
    let (f, c) = (job(full.1), job(calm.1));
    let slot = |gi: u32| serde_json::json!({"gpu_instance_id": gi, "compute_instance_id": 0});
    assert_eq!(f["gpus"][0]["index"], 0, "{text}");
    assert_eq!(f["gpus"][0]["mig"], slot(1), "{text}");
    assert_eq!(f["gpus"][0]["memory_used_bytes"], 9700 * MIB);
    assert_eq!(c["gpus"][0]["mig"], slot(2), "{text}");
    // No per-instance utilization: absent, never 0.
    assert!(f["gpus"][0].get("utilization_pct").is_none(), "{text}");

    // The GPU is 14% used; the full job's instance 97%.
    assert_eq!(f["verdict"], "gpu_memory_pressure", "{text}");
    let finding = &f["findings"][0];
    assert_eq!(finding["rule"], "gpu_memory_pressure");
    assert_eq!(finding["subject"], "gpu 0 mig 1/0", "{text}");
    assert_ne!(c["verdict"], "gpu_memory_pressure", "{text}");
    assert!(
        c["findings"]
            .as_array()
            .is_none_or(|f| f.iter().all(|f| f["rule"] != "gpu_memory_pressure")),
        "{text}"
    );
    // The GPU as a whole has room, but the host's memory question is asked of each instance
    // too: the host verdict is the full instance's.
    assert_eq!(v["path"][0]["answer"], "yes", "{text}");
    assert_eq!(v["verdict"], "gpu_memory_pressure", "{text}");
    let host = v["findings"][0]["subject"].as_str();
    assert_eq!(host, Some("gpu 0 mig 1/0"), "{text}");
}

#[test]
fn the_frame_carries_the_instances_and_each_processs_instance() {
    let (full, calm) = (Sleeper::start(), Sleeper::start());
    let script = fake_nvml::write_script(&script(full.1, calm.1));
    let state = std::env::temp_dir().join(format!("vramio-mig-stream-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(["stream", "--no-relay", "--interval", "250ms", "--state-dir"])
        .arg(&state)
        .arg("--nvml-lib")
        .arg(fake_nvml::fake_nvml_path())
        .env("FAKE_NVML_SCRIPT", script.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("vramio stream");
    // A hub subscribes first; stdin stays open (its end would end the stream).
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"{\"type\":\"subscribe\"}\n")
        .expect("subscribe");
    let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // The first frame whose process list was read (lists come every few seconds).
    let frame = lines
        .map_while(Result::ok)
        .take(200)
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter_map(|m| m.get("frame").cloned())
        .find(|f| f["gpus"][0]["processes"].is_array());
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&state);
    let frame = frame.expect("a frame with the GPU's processes");
    let gpu = &frame["gpus"][0];
    let mig = gpu["mig"].as_array().unwrap_or_else(|| panic!("{gpu}"));
    assert_eq!(mig.len(), 2, "{gpu}");
    assert_eq!(mig[0]["uuid"], "MIG-11111111");
    assert_eq!(mig[0]["slot"]["gpu_instance_id"], 1);
    assert_eq!(mig[0]["memory"]["total_bytes"], 10_000 * MIB);
    assert_eq!(mig[0]["memory"]["used_bytes"], 9700 * MIB);
    assert_eq!(mig[1]["memory"]["used_bytes"], 2000 * MIB);
    assert!(mig[0].get("utilization_gpu_pct").is_none(), "{gpu}");
    let procs = gpu["processes"].as_array().expect("processes");
    let of = |pid: u32| {
        procs
            .iter()
            .find(|p| p["pid"] == pid)
            .map(|p| p["mig"]["gpu_instance_id"].clone())
    };
    assert_eq!(of(full.1), Some(Value::from(1)), "{gpu}");
    assert_eq!(of(calm.1), Some(Value::from(2)), "{gpu}");
}
