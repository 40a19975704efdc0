//! The exposition of fixed frames and diagnoses: golden files (regenerate with
//! `VRAMIO_BLESS=1 cargo test -p vramio --lib metrics`), absent readings, hub labels, hostile
//! label values.

use super::*;
use shared::diagnosis::{Projection, ProjectionKind, Verdict};
use shared::{Mount, MountKind, ServerMsg};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

/// The protocol's golden frame (3 GPUs, one lost, 3 processes, a mount, a disk) and diagnosis,
/// with a GPU and a disk projection added.
fn golden() -> (Frame, Diagnosis) {
    let read = |name: &str| {
        let text = std::fs::read_to_string(fixture(name)).expect("fixture");
        serde_json::from_str::<ServerMsg>(&text).expect("fixture decodes")
    };
    let ServerMsg::Frame { frame, .. } = read("protocol/server-frame.json") else {
        panic!("server-frame.json is a frame");
    };
    let ServerMsg::Diagnosis { diagnosis, .. } = read("protocol/server-diagnosis.json") else {
        panic!("server-diagnosis.json is a diagnosis");
    };
    let mut diagnosis = *diagnosis;
    diagnosis.projections = vec![
        Projection {
            subject: "gpu 0".into(),
            kind: ProjectionKind::TimeToFullGpuMemory,
            seconds: 754.5,
            slope_per_s: 1.0e7,
        },
        Projection {
            subject: "/data".into(),
            kind: ProjectionKind::TimeToFullDisk,
            seconds: 3000.0,
            slope_per_s: 2.0e6,
        },
    ];
    (*frame, diagnosis)
}

fn single() -> Scrape {
    let (mut frame, diagnosis) = golden();
    // GPU 2 in MIG mode with one instance, for the MIG families (an instance without ids has
    // no series).
    let memory = shared::GpuMemory {
        total_bytes: shared::Bytes(10_000 << 20),
        used_bytes: shared::Bytes(2_000 << 20),
        reserved_bytes: None,
        free_bytes: shared::Bytes(8_000 << 20),
    };
    frame.gpus[2].mig = vec![
        shared::MigInstance {
            index: 0,
            slot: Some(shared::MigSlot {
                gpu_instance_id: 1,
                compute_instance_id: 0,
            }),
            uuid: Some("MIG-0c0ffee0-1111-2222-3333-444444444444".into()),
            memory: Some(memory),
            utilization_gpu_pct: None,
        },
        shared::MigInstance {
            index: 1,
            slot: None,
            uuid: None,
            memory: Some(memory),
            utilization_gpu_pct: None,
        },
    ];
    Scrape {
        options: Options::default(),
        hosts: vec![HostData::up("gpu-node-7", frame, Some(diagnosis))],
        viewers: Some(2),
        history: None,
    }
}

fn hub() -> Scrape {
    let (frame, diagnosis) = golden();
    Scrape {
        options: Options {
            hub_mode: true,
            show_users: true,
        },
        hosts: vec![
            HostData::up("gpu-node-7", frame, Some(diagnosis)),
            HostData::down("gpu-node-8"),
        ],
        viewers: Some(0),
        history: None,
    }
}

fn check_golden(name: &str, have: &str) {
    let path = fixture(&format!("metrics/{name}"));
    if std::env::var_os("VRAMIO_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, have).expect("write golden");
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        want == have,
        "{} differs: regenerate with VRAMIO_BLESS=1 cargo test -p vramio --lib metrics\n{have}",
        path.display()
    );
}

/// Lines of `text` that are samples of `family` (with labels or without).
fn samples<'a>(text: &'a str, family: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            l.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .collect()
}

/// The value of a sample line.
fn value(line: &str) -> f64 {
    let v = line.rsplit(' ').next().expect("a value");
    v.parse()
        .unwrap_or_else(|_| panic!("`{v}` is not a number: {line}"))
}

#[test]
fn a_fixed_frame_and_diagnosis_give_the_golden_exposition() {
    let text = single().render().expect("encodes");
    check_golden("single.prom", &text);
    let hub = hub().render().expect("encodes");
    check_golden("hub.prom", &hub);
}

#[test]
fn every_family_has_help_and_type_and_counters_end_in_total() {
    let text = hub().render().expect("encodes");
    let mut families = 0;
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let mut words = line.split(' ').skip(2);
        let (name, kind) = (words.next().expect("name"), words.next().expect("type"));
        assert!(name.starts_with("vramio_"), "{line}");
        assert!(
            text.contains(&format!("# HELP {name} ")),
            "{name} has no HELP"
        );
        assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
        families += 1;
    }
    assert!(families >= 40, "only {families} families");
}

#[test]
fn absent_readings_have_no_sample_and_the_verdict_is_one_hot() {
    let text = single().render().expect("encodes");
    // GPU 1 is lost: it is known and down, and has no readings (never a 0).
    assert!(text.contains("vramio_gpu_up{gpu=\"1\""), "{text}");
    let used = samples(&text, "vramio_gpu_memory_used_bytes");
    assert_eq!(used.len(), 2, "{used:?}");
    assert!(used.iter().all(|l| !l.contains("gpu=\"1\"")), "{used:?}");
    let verdicts = samples(&text, "vramio_verdict");
    assert_eq!(verdicts.len(), Verdict::ALL.len());
    let on: Vec<_> = verdicts.iter().filter(|l| value(l) == 1.0).collect();
    assert_eq!(on, [&"vramio_verdict{verdict=\"no_data\"} 1.0"]);
    assert!(verdicts.iter().all(|l| value(l) == 1.0 || value(l) == 0.0));
    assert_eq!(samples(&text, "vramio_severity"), ["vramio_severity 1.0"]);
    // Without --metrics-users, no user label anywhere.
    assert!(!text.contains("user="), "{text}");
    assert!(
        !text.contains("host="),
        "single host: no host label\n{text}"
    );
}

#[test]
fn a_hub_labels_every_host_series_and_drops_a_down_host() {
    let text = hub().render().expect("encodes");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let global = line.starts_with("vramio_viewers") || line.starts_with("vramio_build_info");
        assert!(
            global || line.contains("host=\"gpu-node-7\"") || line.starts_with("vramio_host_up"),
            "{line}"
        );
        assert!(
            !line.contains("gpu-node-8") || line.starts_with("vramio_host_up"),
            "a down host has series: {line}"
        );
    }
    assert_eq!(
        samples(&text, "vramio_host_up"),
        [
            "vramio_host_up{host=\"gpu-node-7\"} 1.0",
            "vramio_host_up{host=\"gpu-node-8\"} 0.0"
        ]
    );
    assert!(
        text.contains("user=\""),
        "--metrics-users shows users\n{text}"
    );
}

#[test]
fn hostile_label_values_are_escaped() {
    let (mut frame, _) = golden();
    frame.mounts.push(Mount {
        mount_point: "/mnt/a\"b\\c\nd".into(),
        device: "x".into(),
        fs_type: Some("ext4".into()),
        kind: MountKind::Local,
        total_bytes: Some(shared::Bytes(10)),
        used_bytes: Some(shared::Bytes(4)),
        available_bytes: Some(shared::Bytes(6)),
        inodes_total: None,
        inodes_used: None,
        read_only: Some(false),
    });
    let scrape = Scrape {
        options: Options::default(),
        hosts: vec![HostData::up("h", frame, None)],
        viewers: Some(0),
        history: None,
    };
    let text = scrape.render().expect("encodes");
    assert!(
        text.contains(
            r#"vramio_mount_size_bytes{mountpoint="/mnt/a\"b\\c\nd",device="x",fstype="ext4"} 10"#
        ),
        "{text}"
    );
    // Every sample is one line: a newline in a value cannot start a new one.
    assert!(
        text.lines()
            .all(|l| l.starts_with("# ") || l.starts_with("vramio_")),
        "{text}"
    );
}

#[test]
fn many_hosts_rendered_in_parallel_give_the_same_bytes_as_one_pass() {
    let (frame, diagnosis) = golden();
    let hosts: Vec<HostData> = (0..40)
        .map(|i| {
            if i % 7 == 3 {
                HostData::down(format!("node-{i:02}"))
            } else {
                let mut f = frame.clone();
                f.t_ms += i;
                HostData::up(format!("node-{i:02}"), f, Some(diagnosis.clone()))
            }
        })
        .collect();
    let scrape = Scrape {
        options: Options {
            hub_mode: true,
            show_users: false,
        },
        hosts,
        viewers: Some(3),
        history: None,
    };
    let whole = scrape.clone().render_whole().expect("one pass");
    let parallel = scrape.render().expect("in parallel");
    assert!(parallel == whole, "the merged exposition differs");
    assert_eq!(samples(&parallel, "vramio_viewers"), ["vramio_viewers 3.0"]);
    assert_eq!(samples(&parallel, "vramio_host_up").len(), 40);
}

#[test]
fn job_series_are_capped_per_host_and_hide_users_unless_shown() {
    let (mut frame, diagnosis) = golden();
    let job = frame.jobs[0].clone();
    frame.jobs = (0..70)
        .map(|i| {
            let mut j = job.clone();
            j.id = format!("{}", 5000 + i);
            j
        })
        .collect();
    let scrape = |show_users: bool| Scrape {
        options: Options {
            show_users,
            ..Options::default()
        },
        hosts: vec![HostData::up(
            "gpu-node-7",
            frame.clone(),
            Some(diagnosis.clone()),
        )],
        viewers: None,
        history: None,
    };
    let text = scrape(true).render().expect("encodes");
    let info = samples(&text, "vramio_job_info");
    assert_eq!(info.len(), jobs::MAX_JOBS);
    assert!(info[0].contains("job_id=\"5000\""), "{}", info[0]);
    assert!(info[0].contains("user=\"alice\""), "{}", info[0]);
    assert_eq!(
        samples(&text, "vramio_job_gpu_memory_used_bytes").len(),
        jobs::MAX_JOBS
    );
    let unlisted = samples(&text, "vramio_jobs_unlisted");
    assert_eq!(unlisted.iter().map(|l| value(l)).collect::<Vec<_>>(), [6.0]);
    let hidden = scrape(false).render().expect("encodes");
    assert!(
        !hidden.contains("alice"),
        "no user anywhere when users are hidden"
    );
}

#[test]
fn a_user_name_inside_a_job_name_is_hidden_unless_users_are_shown() {
    let (mut frame, _) = golden();
    let mut job = frame.jobs[0].clone();
    job.kind = shared::JobKind::Unit;
    job.id = "jupyter-alice-singleuser.service".into();
    job.step = None;
    frame.jobs = vec![job];
    let scrape = |show_users: bool| Scrape {
        options: Options {
            show_users,
            ..Options::default()
        },
        hosts: vec![HostData::up("gpu-node-7", frame.clone(), None)],
        viewers: None,
        history: None,
    };
    let shown = scrape(true).render().expect("encodes");
    assert!(
        shown.contains("job_id=\"jupyter-alice-singleuser.service\""),
        "{shown}"
    );
    let hidden = scrape(false).render().expect("encodes");
    assert!(!hidden.contains("alice"), "{hidden}");
    let mut stand_in = "alice".to_owned();
    crate::host_feed::hider(["alice"]).hide(&mut stand_in);
    assert!(
        hidden.contains(&format!("job_id=\"jupyter-{stand_in}-singleuser.service\"")),
        "{hidden}"
    );
}

#[test]
fn each_job_has_its_verdict_and_whom_it_contends_with() {
    use shared::diagnosis::{Contention, Finding, RuleId, Severity};
    let (frame, mut diagnosis) = golden();
    let job = &frame.jobs[0];
    let d = diagnosis
        .jobs
        .first_mut()
        .expect("the golden job's diagnosis");
    assert!(d.is_of(job));
    d.verdict = Verdict::InputBoundDisk;
    d.severity = Severity::Warning;
    d.findings = vec![Finding {
        rule: RuleId::InputBoundDisk,
        severity: Severity::Warning,
        confidence: 0.7,
        subject: Some("nvme0n1".into()),
        since_ms: 0,
        evidence: Vec::new(),
        suggestions: Vec::new(),
    }];
    d.contention = Some(Contention {
        kind: shared::JobKind::Container,
        id: "c0ffee".into(),
        step: None,
        label: "container c0ffee".into(),
        device: "nvme0n1".into(),
        read_bytes_per_sec: 9.0e8,
        own_read_bytes_per_sec: Some(1.0e6),
    });
    let text = Scrape {
        options: Options::default(),
        hosts: vec![HostData::up("gpu-node-7", frame.clone(), Some(diagnosis))],
        viewers: None,
        history: None,
    }
    .render()
    .expect("encodes");
    let id = format!("job_id=\"{}\"", job.id);
    let verdict = samples(&text, "vramio_job_verdict");
    assert_eq!(verdict.len(), 1, "{verdict:?}");
    assert!(
        verdict[0].contains(&id)
            && verdict[0].contains("verdict=\"input_bound_disk\"")
            && verdict[0].contains("subject=\"nvme0n1\""),
        "{}",
        verdict[0]
    );
    let severity = samples(&text, "vramio_job_severity");
    assert_eq!(severity.iter().map(|l| value(l)).collect::<Vec<_>>(), [1.0]);
    let contention = samples(&text, "vramio_job_contention_read_bytes_per_second");
    assert_eq!(contention.len(), 1);
    assert!(
        contention[0].contains("by_kind=\"container\"")
            && contention[0].contains("by_job_id=\"c0ffee\"")
            && contention[0].contains("device=\"nvme0n1\""),
        "{}",
        contention[0]
    );
    assert_eq!(value(contention[0]), 9.0e8);
    // Without a diagnosis there is no verdict to give, and no series says one.
    let bare = Scrape {
        options: Options::default(),
        hosts: vec![HostData::up("gpu-node-7", frame, None)],
        viewers: None,
        history: None,
    }
    .render()
    .expect("encodes");
    assert!(samples(&bare, "vramio_job_verdict").is_empty());
}

#[test]
fn a_jobs_cgroup_io_is_per_device() {
    let (mut frame, diagnosis) = golden();
    let io = frame.jobs[0].io.as_mut().expect("the golden job's io");
    io.counter = shared::IoCounter::CgroupIoStat;
    io.devices = vec![shared::JobDeviceIo {
        name: "nvme1n1".into(),
        read_bytes_per_sec: shared::BytesPerSec(5.0e8),
        write_bytes_per_sec: shared::BytesPerSec(1.0e6),
        read_iops: Some(4000.0),
        write_iops: None,
    }];
    let text = Scrape {
        options: Options::default(),
        hosts: vec![HostData::up("gpu-node-7", frame, Some(diagnosis))],
        viewers: None,
        history: None,
    }
    .render()
    .expect("encodes");
    let reads = samples(&text, "vramio_job_device_read_bytes_per_second");
    assert_eq!(reads.len(), 1);
    assert!(reads[0].contains("device=\"nvme1n1\""), "{}", reads[0]);
    assert_eq!(value(reads[0]), 5.0e8);
    let ops = samples(&text, "vramio_job_device_reads_per_second");
    assert_eq!(ops.iter().map(|l| value(l)).collect::<Vec<_>>(), [4000.0]);
    // Not measured: no sample, never 0.
    assert!(samples(&text, "vramio_job_device_writes_per_second").is_empty());
}

#[test]
fn two_jobs_named_alike_never_give_clashing_series() {
    let (mut frame, diagnosis) = golden();
    let twin = frame.jobs[0].clone();
    frame.jobs.push(twin);
    let text = Scrape {
        options: Options::default(),
        hosts: vec![HostData::up("gpu-node-7", frame, Some(diagnosis))],
        viewers: None,
        history: None,
    }
    .render()
    .expect("encodes");
    assert_eq!(samples(&text, "vramio_job_info").len(), 1);
    assert_eq!(samples(&text, "vramio_job_verdict").len(), 1);
}
