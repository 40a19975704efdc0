//! Per-job verdicts: whose reads a starved job waits on, its own memory, its own writes, and the
//! host verdict naming the jobs it is about.

use crate::diagnosis::testutil::*;
use crate::diagnosis::words::{Tz, gpus_text, job_reason, jobs_about, reason_with_jobs};
use crate::diagnosis::{
    Answer, Diagnosis, Metric, NodeId, RuleId, SuggestionId, Thresholds, Verdict, diagnose,
};
use crate::frame::Frame;
use crate::jobs::{IoCounter, Job, JobGpu, JobIo, JobKind};
use crate::units::{Bytes, BytesPerSec, Percent};

/// A Slurm job `id` on GPU `gpu` reading and writing the given MiB/s (`None`: not measured).
fn job(id: &str, gpu: u32, io: Option<(f64, f64)>) -> Job {
    Job {
        step: Some("0".to_owned()),
        name: Some("python".to_owned()),
        user: Some("ana".to_owned()),
        gpus: vec![JobGpu {
            index: gpu,
            uuid: None,
            memory_used_bytes: Some(Bytes(40 * GIB)),
            memory_share_pct: None,
            utilization_pct: None,
            mig: None,
        }],
        io: io.map(|(r, w)| JobIo {
            counter: IoCounter::ProcIo,
            read_iops: None,
            write_iops: None,
            devices: Vec::new(),
            read_bytes_per_sec: Some(BytesPerSec(r * MIB as f64)),
            write_bytes_per_sec: Some(BytesPerSec(w * MIB as f64)),
            unreadable: 0,
        }),
        io_absent: io.is_none().then(|| "needs root".to_owned()),
        ..Job::new(JobKind::Slurm, id, vec![1000 + gpu])
    }
}

/// Two GPUs; GPU 0 at `util0`, GPU 1 at `util1`; the NVMe reading 900 MiB/s at its peak with a
/// queue (busy); jobs as given.
fn two_jobs(n: u64, util0: f64, util1: f64, jobs: impl Fn(u64) -> Vec<Job>) -> Vec<Frame> {
    window(n, |i, f| {
        f.gpus = vec![gpu(0, 80, 60.0, util0), gpu(1, 80, 60.0, util1)];
        f.block_devices[0] = disk("nvme0n1", 900.0, 5.0, 2.0, 8.0);
        f.jobs = jobs(i);
    })
}

fn run(frames: &[Frame]) -> Diagnosis {
    diagnose(frames, &Thresholds::default(), None)
}

fn of<'a>(d: &'a Diagnosis, id: &str) -> &'a crate::diagnosis::JobDiagnosis {
    d.jobs
        .iter()
        .find(|j| j.id == id)
        .expect("the job's diagnosis")
}

#[test]
fn the_reader_is_input_bound_and_the_busy_quiet_job_is_healthy() {
    let d = run(&two_jobs(60, 30.0, 90.0, |_| {
        vec![
            job("100", 0, Some((850.0, 1.0))),
            job("200", 1, Some((1.0, 0.0))),
        ]
    }));
    assert_eq!(d.verdict, Verdict::InputBoundDisk);
    let reader = of(&d, "100");
    assert_eq!(reader.verdict, Verdict::InputBoundDisk);
    assert_eq!(reader.gpus, vec![0]);
    assert!(reader.contention.is_none(), "{:?}", reader.contention);
    let f = &reader.findings[0];
    assert_eq!(f.rule, RuleId::InputBoundDisk);
    assert_eq!(f.subject.as_deref(), Some("nvme0n1"));
    let own = f
        .evidence
        .iter()
        .find(|e| e.metric == Metric::JobReadRateMean)
        .expect("its own reads are evidence");
    assert_eq!(own.value, Some(850.0 * MIB as f64));
    assert_eq!(own.subject.as_deref(), Some("slurm 100.0 (python)"));
    assert!(
        f.suggestions[0]
            .why
            .contains("this job reads 850 MiB/s of it")
    );
    let quiet = of(&d, "200");
    assert_eq!(quiet.verdict, Verdict::Healthy);
    assert!(quiet.findings.is_empty(), "{:?}", quiet.findings);
    assert_eq!(
        quiet
            .path
            .iter()
            .map(|p| (p.node, p.answer))
            .collect::<Vec<_>>(),
        vec![
            (NodeId::GpuMemory, Answer::No),
            (NodeId::GpuStarved, Answer::No)
        ]
    );
    // The host verdict names the job, with its user where the frame has one.
    let frame_jobs = &two_jobs(1, 30.0, 90.0, |_| vec![job("100", 0, None)])[0].jobs;
    assert_eq!(
        jobs_about(&d, frame_jobs).as_deref(),
        Some("slurm 100.0 (python) of ana on GPU 0")
    );
    let line = job_reason(reader, Tz::UTC);
    assert!(
        line.starts_with("slurm 100.0 (python) own mean reads 850.0 MiB/s ≥ 180.0 MiB/s over 60 s (nvme0n1 reads 900 MiB/s on average); nvme0n1 mean reads"),
        "{line}"
    );
    let text = reason_with_jobs(&d, &[], Tz::UTC);
    assert!(
        text.starts_with("slurm 100.0 (python) on GPU 0: "),
        "{text}"
    );
}

#[test]
fn a_starved_job_that_barely_reads_names_the_job_that_does() {
    // Both starved; job 200 reads nearly all the device does.
    let d = run(&two_jobs(60, 30.0, 30.0, |_| {
        vec![
            job("100", 0, Some((20.0, 0.0))),
            job("200", 1, Some((860.0, 0.0))),
        ]
    }));
    let victim = of(&d, "100");
    assert_eq!(victim.verdict, Verdict::InputBoundDisk);
    let line = job_reason(victim, Tz::UTC);
    assert!(
        line.ends_with("; slurm 200.0 (python) reads 860.0 MiB/s from nvme0n1"),
        "{line}"
    );
    let c = victim.contention.as_ref().expect("contention");
    assert_eq!((c.id.as_str(), c.device.as_str()), ("200", "nvme0n1"));
    assert_eq!(c.read_bytes_per_sec, 860.0 * MIB as f64);
    assert_eq!(c.own_read_bytes_per_sec, Some(20.0 * MIB as f64));
    let f = &victim.findings[0];
    assert_eq!(f.suggestions[0].id, SuggestionId::SeparateReaders);
    assert!(
        f.suggestions[0]
            .why
            .contains("slurm 200.0 (python) reads 860 MiB/s of it"),
        "{}",
        f.suggestions[0].why
    );
    // The reader is input-bound on its own reads, and never told it contends with itself.
    let reader = of(&d, "200");
    assert_eq!(reader.verdict, Verdict::InputBoundDisk);
    assert!(reader.contention.is_none());
    // The host names both.
    assert_eq!(
        jobs_about(&d, &[]).as_deref(),
        Some("slurm 100.0 (python) on GPU 0, slurm 200.0 (python) on GPU 1")
    );
}

#[test]
fn unmeasured_reads_are_said_so_never_zero() {
    let d = run(&two_jobs(60, 30.0, 90.0, |_| vec![job("100", 0, None)]));
    let j = of(&d, "100");
    assert_eq!(j.verdict, Verdict::InputBoundDisk);
    let own = j.findings[0]
        .evidence
        .iter()
        .find(|e| e.metric == Metric::JobReadRateMean)
        .expect("evidence");
    assert_eq!(own.value, None);
    assert!(own.detail.as_deref().unwrap_or("").contains("not measured"));
    assert!(j.findings[0].suggestions[0].why.contains("not measured"));
}

#[test]
fn memory_pressure_is_the_job_on_that_gpu() {
    let d = run(&window(60, |_, f| {
        f.gpus = vec![gpu(0, 80, 60.0, 90.0), gpu(1, 80, 96.0, 90.0)];
        f.jobs = vec![
            job("100", 0, Some((1.0, 1.0))),
            job("200", 1, Some((1.0, 1.0))),
        ];
    }));
    assert_eq!(d.verdict, Verdict::GpuMemoryPressure);
    assert_eq!(of(&d, "100").verdict, Verdict::Healthy);
    let full = of(&d, "200");
    assert_eq!(full.verdict, Verdict::GpuMemoryPressure);
    assert_eq!(full.severity, crate::diagnosis::Severity::Critical);
    assert_eq!(full.findings[0].subject.as_deref(), Some("gpu 1"));
    assert_eq!(
        jobs_about(&d, &[]).as_deref(),
        Some("slurm 200.0 (python) on GPU 1")
    );
}

#[test]
fn a_stall_is_read_from_the_jobs_own_writes() {
    // The devices' writes stay flat; the job's own writes burst when its GPU dips.
    let d = run(&window(60, |i, f| {
        let burst = i % 10 < 2;
        f.gpus[0].utilization_gpu_pct = Some(Percent(if burst { 5.0 } else { 95.0 }));
        f.jobs = vec![job("100", 0, Some((1.0, if burst { 2048.0 } else { 5.0 })))];
    }));
    let j = of(&d, "100");
    assert_eq!(j.verdict, Verdict::CheckpointStall, "{:#?}", j.path);
    let ck = j
        .path
        .iter()
        .find(|p| p.node == NodeId::CheckpointStall)
        .expect("visited");
    assert_eq!(ck.evidence[0].samples, Some((12, 12)));
    assert!(
        ck.evidence[0]
            .detail
            .as_deref()
            .unwrap_or("")
            .starts_with("this job's writes")
    );
    // Without its own writes the host's flat ones explain nothing.
    let d = run(&window(60, |i, f| {
        let burst = i % 10 < 2;
        f.gpus[0].utilization_gpu_pct = Some(Percent(if burst { 5.0 } else { 95.0 }));
        f.jobs = vec![job("100", 0, None)];
    }));
    assert_eq!(of(&d, "100").verdict, Verdict::GpuUnderutilized);
}

#[test]
fn a_jobs_starvation_clears_with_its_own_hysteresis() {
    let th = Thresholds::default();
    let at = |util: f64| {
        window(60, move |_, f| {
            f.gpus = vec![gpu(0, 80, 60.0, util), gpu(1, 80, 60.0, 90.0)];
            f.jobs = vec![
                job("100", 0, Some((1.0, 1.0))),
                job("200", 1, Some((1.0, 1.0))),
            ];
        })
    };
    let starved = run(&at(30.0));
    assert_eq!(of(&starved, "100").verdict, Verdict::GpuUnderutilized);
    // 53%: above the entry level, below the clearing level: held only by the job's own history.
    assert_eq!(of(&run(&at(53.0)), "100").verdict, Verdict::Healthy);
    let held = diagnose(&at(53.0), &th, Some(&starved));
    let j = of(&held, "100");
    assert_eq!(j.verdict, Verdict::GpuUnderutilized);
    assert_eq!(
        j.findings[0].since_ms,
        of(&starved, "100").findings[0].since_ms
    );
}

#[test]
fn too_few_samples_is_no_data_for_the_job() {
    let d = run(&two_jobs(2, 30.0, 90.0, |_| vec![job("100", 0, None)]));
    let j = of(&d, "100");
    assert_eq!(j.verdict, Verdict::NoData);
    assert_eq!(j.severity, crate::diagnosis::Severity::Unknown);
}

#[test]
fn jobs_without_gpus_or_frames_get_no_verdict() {
    assert!(run(&[]).jobs.is_empty());
    let d = run(&window(60, |_, f| {
        let mut j = job("100", 0, None);
        j.gpus.clear();
        f.jobs = vec![j, job("300", 7, None)];
    }));
    assert!(d.jobs.is_empty(), "{:?}", d.jobs);
}

#[test]
fn gpu_lists_read_as_ranges() {
    assert_eq!(gpus_text(&[2]), "GPU 2");
    assert_eq!(gpus_text(&[3, 0, 1, 2]), "GPUs 0-3");
    assert_eq!(gpus_text(&[0, 2, 5]), "GPUs 0, 2, 5");
    assert_eq!(gpus_text(&[]), "no GPU");
}

#[test]
fn many_jobs_are_counted_not_listed() {
    let d = run(&window(60, |_, f| {
        f.gpus = (0..4).map(|i| gpu(i, 80, 96.0, 90.0)).collect();
        f.jobs = (0..4).map(|i| job(&format!("{i}"), i, None)).collect();
    }));
    assert_eq!(
        jobs_about(&d, &[]).as_deref(),
        Some("slurm 0.0 (python) on GPU 0, slurm 1.0 (python) on GPU 1, 2 more jobs")
    );
}

#[test]
fn a_hub_summary_carries_the_worst_job_and_no_user() {
    use crate::protocol::HostState;
    use crate::summary::HostSummary;
    let frames = run_frames();
    let d = run(&frames);
    let s = HostSummary::of(
        HostState::Up,
        frames.last().expect("frames"),
        Some(&d),
        None,
    );
    let job = s.job.clone().expect("the worst job");
    // Job 200 (GPU memory pressure, critical) over job 100 (starved, a warning).
    assert_eq!(job.label, "slurm 200.0 (python)");
    assert_eq!(job.verdict, Verdict::GpuMemoryPressure);
    let json = serde_json::to_string(&s).expect("json");
    assert!(!json.contains("ana"), "{json}");
    // All healthy: no job is named.
    let calm = window(60, |_, f| f.jobs = vec![job_on("100", 0)]);
    let s = HostSummary::of(
        HostState::Up,
        calm.last().expect("frames"),
        Some(&run(&calm)),
        None,
    );
    assert_eq!(s.job, None);
}

fn job_on(id: &str, gpu_index: u32) -> Job {
    job(id, gpu_index, Some((1.0, 1.0)))
}

fn run_frames() -> Vec<Frame> {
    window(60, |_, f| {
        f.gpus = vec![gpu(0, 80, 60.0, 30.0), gpu(1, 80, 97.0, 90.0)];
        f.jobs = vec![job_on("100", 0), job_on("200", 1)];
    })
}

/// `job` reading `mib` MiB/s from `device` alone, by its cgroup's per-device counters.
fn on_device(mut j: Job, device: &str, mib: f64) -> Job {
    let rate = BytesPerSec(mib * MIB as f64);
    j.io = Some(JobIo {
        counter: IoCounter::CgroupIoStat,
        read_bytes_per_sec: Some(rate),
        write_bytes_per_sec: Some(BytesPerSec(0.0)),
        unreadable: 0,
        read_iops: Some(100.0),
        write_iops: Some(0.0),
        devices: vec![crate::jobs::JobDeviceIo {
            name: device.to_owned(),
            read_bytes_per_sec: rate,
            write_bytes_per_sec: BytesPerSec(0.0),
            read_iops: Some(100.0),
            write_iops: Some(0.0),
        }],
    });
    j
}

#[test]
fn per_device_reads_tell_which_job_reads_the_busy_device() {
    // Job 100 reads a lot, but from another disk; job 200 reads the busy nvme0n1.
    let d = run(&two_jobs(60, 30.0, 90.0, |_| {
        vec![
            on_device(job("100", 0, None), "nvme1n1", 800.0),
            on_device(job("200", 1, None), "nvme0n1", 850.0),
        ]
    }));
    let starved = of(&d, "100");
    assert_eq!(starved.verdict, Verdict::InputBoundDisk);
    let c = starved.contention.as_ref().expect("contention");
    assert_eq!(c.id, "200");
    assert_eq!(
        c.own_read_bytes_per_sec,
        Some(0.0),
        "a measured 0 on that device"
    );
    let own = starved.findings[0]
        .evidence
        .iter()
        .find(|e| {
            e.metric == Metric::JobReadRateMean
                && e.subject.as_deref() == Some("slurm 100.0 (python)")
        })
        .expect("own reads");
    assert_eq!(own.value, Some(0.0));
}

#[test]
fn a_busy_device_that_is_not_the_jobs_input_does_not_make_it_input_bound() {
    // The device is saturated by something that is no GPU job; this job barely reads it.
    let d = run(&two_jobs(60, 30.0, 90.0, |_| {
        vec![job("100", 0, Some((1.0, 0.0)))]
    }));
    assert_eq!(
        d.verdict,
        Verdict::InputBoundDisk,
        "the host's verdict stands"
    );
    let j = of(&d, "100");
    assert_eq!(j.verdict, Verdict::GpuUnderutilized, "{:#?}", j.path);
    let disk = j
        .path
        .iter()
        .find(|p| p.node == NodeId::DiskIo)
        .expect("visited");
    assert_eq!(disk.answer, Answer::No);
    let own = disk
        .evidence
        .iter()
        .find(|e| e.metric == Metric::JobReadRateMean)
        .expect("its reads are the evidence");
    assert!(
        own.detail
            .as_deref()
            .unwrap_or("")
            .contains("not with this job's reads"),
        "{own:?}"
    );
    assert!(
        jobs_about(&d, &[]).is_none(),
        "the host verdict is about no job"
    );
}

#[test]
fn a_held_starvation_dates_from_the_jobs_own_history_not_the_hosts() {
    let th = Thresholds::default();
    let at = |util: f64| {
        window(60, move |_, f| {
            f.gpus = vec![gpu(0, 80, 60.0, util), gpu(1, 80, 60.0, 90.0)];
            f.jobs = vec![job("100", 0, Some((1.0, 1.0)))];
        })
    };
    let mut prev = run(&at(30.0));
    let since = of(&prev, "100").findings[0].since_ms;
    // The host's previous verdict was about something else, with another history.
    prev.verdict = Verdict::GpuMemoryPressure;
    prev.findings.clear();
    prev.t_ms = Some(1);
    let held = diagnose(&at(53.0), &th, Some(&prev));
    let j = of(&held, "100");
    assert_eq!(j.verdict, Verdict::GpuUnderutilized);
    let mean = &j.path[1].evidence[0];
    assert_eq!(mean.held.map(|h| h.since_ms), Some(since), "{mean:?}");
    assert_eq!(j.findings[0].since_ms, since);
}

#[test]
fn a_viewer_without_user_names_gets_none_in_a_job_verdict_or_its_words() {
    let unit = |user: &str, gpu: u32, io| Job {
        kind: JobKind::Unit,
        id: format!("jupyter-{user}-singleuser.service"),
        step: None,
        name: Some(format!("{user}-train")),
        user: Some(user.to_owned()),
        ..job("x", gpu, io)
    };
    let frames = two_jobs(60, 30.0, 90.0, |_| {
        vec![
            unit("ana", 0, Some((850.0, 1.0))),
            unit("bob", 1, Some((1.0, 0.0))),
        ]
    });
    let d = run(&frames);
    assert_eq!(d.users().collect::<Vec<_>>(), ["ana", "bob"]);
    let full = serde_json::to_string(&d).expect("encode");
    assert!(full.contains("jupyter-ana-singleuser.service"), "{full}");
    let newest = frames.last().expect("a frame");
    let hider = crate::privacy::Hider::new(newest.users().map(str::to_owned), 5);
    let hidden = d.without_users(&hider);
    let text = serde_json::to_string(&hidden).expect("encode");
    let words = |t: &str| {
        t.split(|c: char| !c.is_alphanumeric())
            .any(|w| w == "ana" || w == "bob")
    };
    assert!(!words(&text), "{text}");
    // Nothing but the names changed: the verdicts and the host's part are the same.
    assert_eq!(hidden.verdict, d.verdict);
    assert_eq!(hidden.findings, d.findings);
    assert_eq!(hidden.jobs.len(), 2);
    let (reader, quiet) = (&hidden.jobs[0], &hidden.jobs[1]);
    assert!(reader.id.starts_with("jupyter-…"), "{}", reader.id);
    assert_ne!(reader.id, quiet.id, "two users' jobs stay two");
    assert_eq!(reader.verdict, Verdict::InputBoundDisk);
    assert_eq!(quiet.verdict, Verdict::Healthy);
    assert!(reader.user.is_none());
    // The viewer's frame hides the same words, so each job still finds its own verdict.
    let mut frame = newest.clone();
    frame.hide_users(&hider);
    assert!(reader.is_of(&frame.jobs[0]), "{:?}", frame.jobs[0].id);
    assert!(quiet.is_of(&frame.jobs[1]), "{:?}", frame.jobs[1].id);
    assert!(!reader.is_of(&frame.jobs[1]));
    let about = jobs_about(&hidden, &frame.jobs).unwrap_or_default();
    assert!(
        about.starts_with(&format!("{} on GPU 0", reader.label)),
        "{about}"
    );
}

#[test]
fn a_full_mig_instance_stays_held_within_the_hysteresis_band() {
    let th = Thresholds::default();
    let first = run(&mig_frames(60, 97.0));
    assert_eq!(of(&first, "100").verdict, Verdict::GpuMemoryPressure);
    // Just below the threshold but within the band: held while it was pressure before, not
    // raised from nothing.
    let below = th.gpu_mem_warn_pct - th.hysteresis_pct_points / 2.0;
    let frames = mig_frames(60, below);
    let held = diagnose(&frames, &th, Some(&first));
    assert_eq!(
        of(&held, "100").verdict,
        Verdict::GpuMemoryPressure,
        "{below}"
    );
    assert_ne!(of(&run(&frames), "100").verdict, Verdict::GpuMemoryPressure);
}

/// GPU 0 in MIG mode: instance 1/0 of 10 GiB at `full_pct`, instance 2/0 of 10 GiB at 20%, a
/// process on each (pids 1001 and 1002); the whole GPU at 25% and no utilization (as under MIG).
fn mig_frames(n: u64, full_pct: f64) -> Vec<Frame> {
    use crate::frame::{GpuMemory, MigInstance, MigSlot};
    let slot = |gi| MigSlot {
        gpu_instance_id: gi,
        compute_instance_id: 0,
    };
    let instance = |index, gi, pct: f64| {
        let total = 10 * GIB;
        let used = (total as f64 * pct / 100.0) as u64;
        MigInstance {
            index,
            slot: Some(slot(gi)),
            uuid: Some(format!("MIG-{gi}")),
            memory: Some(GpuMemory {
                total_bytes: Bytes(total),
                used_bytes: Bytes(used),
                reserved_bytes: Some(Bytes(0)),
                free_bytes: Bytes(total - used),
            }),
            utilization_gpu_pct: None,
        }
    };
    window(n, |_, f| {
        let mut g = gpu(0, 80, 25.0, 0.0);
        g.utilization_gpu_pct = None;
        g.utilization_memory_pct = None;
        let mut a = proc_(1001, Some("python"), 9 * GIB);
        a.mig = Some(slot(1));
        let mut b = proc_(1002, Some("python"), 2 * GIB);
        b.mig = Some(slot(2));
        g.processes = Some(vec![a, b]);
        g.mig = vec![instance(0, 1, full_pct), instance(1, 2, 20.0)];
        f.gpus = vec![g];
        let part = |gi, gib| JobGpu {
            index: 0,
            uuid: None,
            memory_used_bytes: Some(Bytes(gib * GIB)),
            memory_share_pct: None,
            utilization_pct: None,
            mig: Some(slot(gi)),
        };
        let mut ja = job("100", 0, Some((1.0, 0.0)));
        ja.gpus = vec![part(1, 9)];
        ja.gpu_pids = vec![1001];
        let mut jb = job("200", 0, Some((1.0, 0.0)));
        jb.gpus = vec![part(2, 2)];
        jb.gpu_pids = vec![1002];
        f.jobs = vec![ja, jb];
    })
}

#[test]
fn a_job_whose_mig_instance_is_full_is_under_memory_pressure_and_its_neighbour_is_not() {
    let frames = mig_frames(60, 97.0);
    let d = run(&frames);
    // The whole GPU is a quarter used, but one of its instances is full: the host's answer is
    // yes for that instance, and the host verdict names the job on it.
    assert_eq!(d.path[0].node, NodeId::GpuMemory);
    assert_eq!(d.path[0].answer, Answer::Yes, "{:?}", d.path[0]);
    assert_eq!(d.verdict, Verdict::GpuMemoryPressure);
    let host: Vec<_> = d
        .findings
        .iter()
        .filter(|f| f.rule == RuleId::GpuMemoryPressure)
        .map(|f| f.subject.as_deref())
        .collect();
    assert_eq!(host, [Some("gpu 0 mig 1/0")]);
    let newest = &frames.last().expect("a frame").jobs;
    let about = jobs_about(&d, newest).unwrap_or_default();
    assert!(about.starts_with("slurm 100.0 (python)"), "{about}");
    assert!(!about.contains("200"), "{about}");
    let full = of(&d, "100");
    assert_eq!(full.verdict, Verdict::GpuMemoryPressure, "{full:?}");
    let f = &full.findings[0];
    assert_eq!(f.rule, RuleId::GpuMemoryPressure);
    assert_eq!(f.subject.as_deref(), Some("gpu 0 mig 1/0"));
    assert!(
        f.suggestions[0]
            .why
            .contains("gpu 0 mig 1/0 used 97.0% of 10.0 GiB"),
        "{}",
        f.suggestions[0].why
    );
    // The neighbour's instance is fine, and no utilization is known for it: not starved, not
    // healthy either (nothing says its GPU is busy), and no memory finding.
    let other = of(&d, "200");
    assert_eq!(other.path[0].answer, Answer::No, "{:?}", other.path[0]);
    assert!(
        other
            .findings
            .iter()
            .all(|f| f.rule != RuleId::GpuMemoryPressure)
    );
    assert_eq!(other.verdict, Verdict::NoData, "{other:?}");
    assert_eq!(other.gpus, vec![0]);
    // Below the threshold the full job is no longer under pressure.
    let calm = run(&mig_frames(60, 50.0));
    assert_ne!(of(&calm, "100").verdict, Verdict::GpuMemoryPressure);
}
