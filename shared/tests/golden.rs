//! Golden JSON fixtures pin the wire protocol: every server and client message type, with a frame
//! whose every field is filled, must serialize to exactly the text in `tests/fixtures/protocol/`
//! and parse back to the same value. A change that alters them is a protocol change: bump
//! `PROTOCOL_VERSION`, then regenerate with `VRAMIO_BLESS=1 cargo test -p shared --test golden`.

use shared::diagnosis::{Thresholds, diagnose};
use shared::{
    BlockCounters, BlockDevice, Bytes, BytesPerSec, ClientMsg, ErrorCode, Frame, Gpu, GpuApis,
    GpuMemory, GpuProcess, GpuState, HostState, HostSummary, IoCounter, Job, JobGpu, JobIo,
    JobKind, JobPsi, MemoryApi, Mount, MountKind, NvmlStatus, Percent, Presence, ProcessApi, Psi,
    ServerMsg, Source, SourceCost, SourceError, SystemStats,
};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/protocol")
}

/// A frame with every field present: one healthy GPU (newest NVML calls, a process list carried
/// from two seconds earlier) with a visible, an exited (orphan) and a hidden process; one lost
/// GPU; one GPU that answered only the older calls (v1 memory without reserved, `_v2` lists).
fn full_frame() -> Frame {
    Frame {
        seq: 1_764_500_000_123,
        t_ms: 1_764_500_000_000,
        host: "gpu-node-7".into(),
        interval_ms: 1000,
        nvml: NvmlStatus::Ok {
            driver_version: Some("580.00".into()),
        },
        gpus: vec![
            Gpu {
                index: 0,
                uuid: Some("GPU-3f1c2a7e-91d4-4b2e-8c55-0a9b7e6d1f20".into()),
                name: Some("NVIDIA H100 80GB HBM3".into()),
                state: GpuState::Ok,
                memory: Some(GpuMemory {
                    total_bytes: Bytes::from_mib(81559),
                    used_bytes: Bytes::from_mib(52000),
                    reserved_bytes: Some(Bytes::from_mib(512)),
                    free_bytes: Bytes::from_mib(29047),
                }),
                utilization_gpu_pct: Some(Percent(92.0)),
                utilization_memory_pct: Some(Percent(61.0)),
                temperature_c: Some(67.0),
                power_w: Some(612.5),
                power_limit_w: Some(700.0),
                processes: Some(vec![
                    GpuProcess {
                        pid: 4242,
                        presence: Presence::Visible,
                        name: Some("python3".into()),
                        user: Some("alice".into()),
                        used_bytes: Some(Bytes::from_mib(51200)),
                        mig: None,
                    },
                    GpuProcess {
                        pid: 4_000_001,
                        presence: Presence::Exited,
                        name: None,
                        user: None,
                        used_bytes: Some(Bytes::from_mib(300)),
                        mig: None,
                    },
                    GpuProcess {
                        pid: 918_273,
                        presence: Presence::NotVisible,
                        name: None,
                        user: None,
                        used_bytes: Some(Bytes::from_mib(200)),
                        mig: None,
                    },
                ]),
                processes_t_ms: Some(1_764_499_998_000),
                nvml_api: Some(GpuApis {
                    memory: Some(MemoryApi::V2),
                    processes: Some(ProcessApi::V3),
                }),
                mig: Vec::new(),
            },
            Gpu::unread(
                1,
                Some("GPU-8a2d5c11-47e0-4f6b-b3a9-2c7d1e0f5b44".into()),
                Some("NVIDIA H100 80GB HBM3".into()),
                GpuState::Lost,
            ),
            Gpu {
                index: 2,
                uuid: Some("GPU-5e0b7f3a-2c19-4d8e-9a61-7f3e2b1c0d95".into()),
                name: Some("Tesla V100-SXM2-32GB".into()),
                state: GpuState::Ok,
                memory: Some(GpuMemory {
                    total_bytes: Bytes::from_mib(32768),
                    used_bytes: Bytes::from_mib(4096),
                    reserved_bytes: None,
                    free_bytes: Bytes::from_mib(28672),
                }),
                utilization_gpu_pct: Some(Percent(35.0)),
                utilization_memory_pct: Some(Percent(12.0)),
                temperature_c: Some(48.0),
                power_w: Some(120.0),
                power_limit_w: Some(300.0),
                processes: Some(Vec::new()),
                processes_t_ms: Some(1_764_500_000_000),
                nvml_api: Some(GpuApis {
                    memory: Some(MemoryApi::V1),
                    processes: Some(ProcessApi::V2),
                }),
                mig: Vec::new(),
            },
        ],
        mounts: vec![Mount {
            mount_point: "/data".into(),
            device: "/dev/nvme0n1p1".into(),
            fs_type: Some("xfs".into()),
            kind: MountKind::LocalNvme,
            total_bytes: Some(Bytes(3_840_000_000_000)),
            used_bytes: Some(Bytes(2_900_000_000_000)),
            available_bytes: Some(Bytes(940_000_000_000)),
            inodes_total: Some(375_000_000),
            inodes_used: Some(1_200_000),
            read_only: Some(false),
        }],
        block_devices: vec![BlockDevice {
            name: "nvme0n1".into(),
            rotational: Some(false),
            partitions: vec!["nvme0n1p1".into()],
            read_bytes_total: Some(Bytes(9_876_543_210_000)),
            write_bytes_total: Some(Bytes(1_234_567_890_000)),
            read_bytes_per_sec: Some(BytesPerSec(209_715_200.0)),
            write_bytes_per_sec: Some(BytesPerSec(52_428_800.0)),
            read_iops: Some(2000.0),
            write_iops: Some(500.0),
            util_pct: Some(Percent(85.0)),
            r_await_ms: Some(0.5),
            w_await_ms: Some(3.0),
            avg_queue_size: Some(2.6),
            counters: Some(BlockCounters {
                reads_completed_total: 1200,
                writes_completed_total: 340,
                io_time_ms_total: 5600,
                weighted_io_time_ms_total: 9100,
            }),
        }],
        system: Some(SystemStats {
            cpu_count: Some(64),
            cpu_pct: Some(Percent(41.5)),
            iowait_pct: Some(Percent(3.25)),
            mem_total_bytes: Some(Bytes(540_000_000_000)),
            mem_available_bytes: Some(Bytes(400_000_000_000)),
            page_cache_bytes: Some(Bytes(120_000_000_000)),
            dirty_bytes: Some(Bytes(1_073_741_824)),
            writeback_bytes: Some(Bytes(67_108_864)),
            swap_total_bytes: Some(Bytes(0)),
            swap_used_bytes: Some(Bytes(0)),
            psi_io: Some(Psi {
                some_avg10: Percent(12.34),
                full_avg10: Some(Percent(10.5)),
                some_total_us: Some(81234567),
            }),
            psi_memory: Some(Psi {
                some_avg10: Percent(0.0),
                full_avg10: Some(Percent(0.0)),
                some_total_us: Some(4321),
            }),
        }),
        jobs: vec![Job {
            kind: JobKind::Slurm,
            id: "4412".into(),
            step: Some("0".into()),
            name: Some("python3 train.py".into()),
            user: Some("alice".into()),
            gpus: vec![JobGpu {
                index: 0,
                uuid: Some("GPU-3f1c2a7e-91d4-4b2e-8c55-0a9b7e6d1f20".into()),
                memory_used_bytes: Some(Bytes::from_mib(51200)),
                memory_share_pct: Some(Percent(62.8)),
                utilization_pct: None,
                mig: None,
            }],
            gpu_pids: vec![4242],
            workers: Some(8),
            rss_bytes: Some(Bytes::from_mib(24576)),
            cpu_pct: Some(Percent(310.0)),
            cpu_from_cgroup: false,
            memory_from_cgroup: false,
            io: Some(JobIo {
                counter: IoCounter::ProcIo,
                read_iops: None,
                write_iops: None,
                devices: Vec::new(),
                read_bytes_per_sec: Some(BytesPerSec(912_000_000.0)),
                write_bytes_per_sec: Some(BytesPerSec(0.0)),
                unreadable: 0,
            }),
            io_absent: None,
            psi_io: Some(JobPsi {
                some_avg10: Percent(41.5),
                full_avg10: Some(Percent(38.2)),
            }),
            psi_memory: None,
        }],
        errors: vec![SourceError {
            source: Source::Gpu,
            item: Some("gpu 1".into()),
            message: "GPU is lost (NVML_ERROR_GPU_IS_LOST)".into(),
        }],
        cost: vec![
            SourceCost {
                source: Source::Gpu,
                micros: 180,
            },
            SourceCost {
                source: Source::Mounts,
                micros: 40,
            },
            SourceCost {
                source: Source::BlockDevices,
                micros: 35,
            },
            SourceCost {
                source: Source::System,
                micros: 60,
            },
        ],
    }
}

/// A stored range: two series of a GPU, one stretch of a verdict, an event.
fn stored_answer(diagnosis: &shared::diagnosis::Diagnosis) -> shared::stored::Answer {
    use shared::series::{Scope, Unit};
    use shared::stored::{Answer, Piece, Segment, SeriesPoints};
    let t0 = 1_764_500_000_000;
    Answer {
        from_ms: t0,
        to_ms: t0 + 120_000,
        step_ms: 60_000,
        tiers: vec![Piece {
            from_ms: t0,
            to_ms: t0 + 120_000,
            step_ms: 60_000,
        }],
        series: vec![
            SeriesPoints {
                scope: Scope::Gpu,
                item: "0".into(),
                metric: "util_pct".into(),
                unit: Unit::Percent,
                points: vec![(t0, 0.0, 71.25, 100.0), (t0 + 60_000, 88.0, 92.5, 97.0)],
            },
            SeriesPoints {
                scope: Scope::Mount,
                item: "/data".into(),
                metric: "used_bytes".into(),
                unit: Unit::Bytes,
                points: vec![(t0, 1.5e12, 1.5e12, 1.5e12)],
            },
        ],
        segments: vec![Segment {
            from_ms: t0,
            to_ms: t0 + 118_000,
            verdict: diagnosis.verdict,
            severity: diagnosis.severity,
            findings: diagnosis.findings.clone(),
        }],
        events: vec![serde_json::json!({"kind": "gpu_lost", "gpu": 1})],
        notices: Vec::new(),
    }
}

fn server_messages() -> Vec<(&'static str, ServerMsg)> {
    let frame = full_frame();
    let mut window = Vec::new();
    for i in 0..10u64 {
        let mut f = frame.clone();
        f.seq += i;
        f.t_ms += i * 1000;
        window.push(f);
    }
    let diagnosis = diagnose(&window, &Thresholds::default(), None);
    vec![
        (
            "server-hello",
            ServerMsg::hello(vec!["gpu-node-7".into()], 1000, "0.1.0", "5e0a1c2b3d4f6a7b"),
        ),
        (
            "server-backfill",
            ServerMsg::Backfill {
                host: "gpu-node-7".into(),
                frames: vec![frame.clone()],
            },
        ),
        (
            "server-frame",
            ServerMsg::Frame {
                host: "gpu-node-7".into(),
                frame: Box::new(frame.clone()),
            },
        ),
        (
            "server-summary",
            ServerMsg::Summary {
                host: "ssh://gpu7".into(),
                summary: Box::new(HostSummary::of(
                    HostState::Up,
                    &window[window.len() - 1],
                    Some(&diagnosis),
                    None,
                )),
            },
        ),
        (
            "server-diagnosis",
            ServerMsg::Diagnosis {
                host: "gpu-node-7".into(),
                diagnosis: Box::new(diagnosis.clone()),
            },
        ),
        (
            "server-host-status",
            ServerMsg::HostStatus {
                host: "gpu-node-7".into(),
                state: HostState::Stale,
                last_seen_ms: Some(1_764_500_000_000),
                error: Some("no frame for 3.2 s".into()),
            },
        ),
        (
            "server-reset",
            ServerMsg::Reset {
                host: "gpu-node-7".into(),
                frames: 900,
            },
        ),
        (
            "server-history",
            ServerMsg::History {
                host: "gpu-node-7".into(),
                // As the wire rounds them (to 0.01), so they round-trip.
                samples: window
                    .iter()
                    .take(3)
                    .map(|f| {
                        let s = shared::history::Sample::of(f);
                        serde_json::from_str(&serde_json::to_string(&s).expect("json"))
                            .expect("a sample")
                    })
                    .collect(),
            },
        ),
        ("server-lagged", ServerMsg::Lagged { skipped: 17 }),
        (
            "server-history-answer",
            ServerMsg::HistoryAnswer {
                id: 7,
                answer: Box::new(stored_answer(&diagnosis)),
            },
        ),
        (
            "server-moment-answer",
            ServerMsg::MomentAnswer {
                id: 8,
                moment: Box::new(shared::stored::Moment {
                    t_ms: frame.t_ms,
                    step_ms: 1000,
                    frame: frame.clone(),
                    diagnosis: diagnosis.clone(),
                }),
            },
        ),
        (
            "server-query-failed",
            ServerMsg::QueryFailed {
                id: 9,
                message: "nothing is stored at or before that moment".into(),
            },
        ),
        (
            "server-error",
            ServerMsg::Error {
                code: ErrorCode::BadMessage,
                message: "cannot read message: expected value at line 1 column 1".into(),
            },
        ),
        ("server-pong", ServerMsg::Pong),
    ]
}

fn client_messages() -> Vec<(&'static str, ClientMsg)> {
    vec![
        (
            "client-history-query",
            ClientMsg::HistoryQuery {
                id: 7,
                from_ms: 1_764_500_000_000,
                to_ms: 1_764_586_400_000,
                points: 1200,
                only: Some("gpu:util_pct,disk:read_bytes_per_sec".into()),
                findings: false,
            },
        ),
        (
            "client-moment-query",
            ClientMsg::MomentQuery {
                id: 8,
                t_ms: 1_764_500_000_000,
            },
        ),
        (
            "client-subscribe",
            ClientMsg::Subscribe {
                hosts: Some(vec!["gpu-node-7".into()]),
                since_seq: Some(1_764_500_000_122),
                since: None,
                samples: false,
                max_frames: Some(900),
            },
        ),
        (
            "client-subscribe-several",
            ClientMsg::Subscribe {
                hosts: Some(vec!["ssh://gpu1".into(), "gpu2:7575".into()]),
                since_seq: None,
                since: Some(
                    [
                        ("ssh://gpu1".to_owned(), 1_764_500_000_122),
                        ("gpu2:7575".to_owned(), 17),
                    ]
                    .into_iter()
                    .collect(),
                ),
                samples: false,
                max_frames: None,
            },
        ),
        (
            "client-subscribe-all",
            ClientMsg::Subscribe {
                hosts: None,
                since_seq: None,
                since: None,
                samples: true,
                max_frames: None,
            },
        ),
        ("client-ping", ClientMsg::Ping),
    ]
}

fn check<T>(name: &str, value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let path = fixtures().join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(value).expect("serializes") + "\n";
    if std::env::var_os("VRAMIO_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write fixture");
    }
    let golden = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (VRAMIO_BLESS=1 writes it)", path.display()));
    assert_eq!(
        text, golden,
        "{name} no longer matches its golden fixture: protocol change?"
    );
    let back: T = serde_json::from_str(&golden).expect("fixture parses");
    assert_eq!(&back, value, "{name} does not round-trip");
}

#[test]
fn every_server_message_matches_its_golden_fixture() {
    for (name, msg) in server_messages() {
        check(name, &msg);
    }
}

#[test]
fn every_client_message_matches_its_golden_fixture() {
    for (name, msg) in client_messages() {
        check(name, &msg);
    }
}

#[test]
fn the_fixtures_pin_the_protocol_version() {
    let hello = std::fs::read_to_string(fixtures().join("server-hello.json")).expect("hello");
    let v: serde_json::Value = serde_json::from_str(&hello).expect("json");
    assert_eq!(v["protocol"], shared::PROTOCOL_VERSION);
    assert_eq!(v["type"], "hello");
}
