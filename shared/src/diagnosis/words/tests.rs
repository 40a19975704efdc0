//! The words: exact sentences for typed evidence, durations and values, the banner's reason for
//! each kind of verdict (on real `diagnose` output), and the findings order.

use super::*;
use crate::diagnosis::testutil::{T0_MS, gpu, window};
use crate::diagnosis::{
    Comparison, Diagnosis, Evidence, Finding, Held, Metric, NoDataCause, Threshold, Thresholds,
    diagnose,
};
use crate::frame::NvmlStatus;

fn ev(metric: Metric, subject: Option<&str>, value: Option<f64>) -> Evidence {
    let mut e = Evidence::new(metric);
    e.subject = subject.map(str::to_owned);
    e.value = value;
    e
}

fn cmp(mut e: Evidence, comparison: Comparison, value: f64) -> Evidence {
    e.threshold = Some(Threshold { comparison, value });
    e
}

#[test]
fn durations_pick_a_readable_unit() {
    assert_eq!(duration_text(45.2), "45 s");
    assert_eq!(duration_text(60.0), "60 s");
    assert_eq!(duration_text(12.0 * 60.0), "12 min");
    assert_eq!(duration_text(1.5 * 3600.0), "1.5 h");
    assert_eq!(duration_text(15.0 * 3600.0), "15 h");
    assert_eq!(duration_text(3.0 * 86_400.0), "3 d");
    assert_eq!(duration_text(-1.0), "—");
    assert_eq!(duration_text(f64::NAN), "—");
    assert_eq!(
        projection_text(ProjectionKind::TimeToFullGpuMemory, 720.0),
        "memory full in ~12 min"
    );
    assert_eq!(
        projection_text(ProjectionKind::TimeToFullDisk, 2400.0),
        "full in ~40 min"
    );
}

#[test]
fn values_are_written_in_their_unit() {
    assert_eq!(value_text(96.4, Unit::Percent), "96%");
    assert_eq!(value_text(4.54, Unit::Percent), "4.5%");
    assert_eq!(value_text(4294967296.0, Unit::Bytes), "4.0 GiB");
    assert_eq!(value_text(3.0 * 1048576.0, Unit::BytesPerSec), "3.0 MiB/s");
    assert_eq!(value_text(2400.0, Unit::Seconds), "40 min");
    assert_eq!(value_text(12.34, Unit::Millis), "12.3 ms");
    assert_eq!(value_text(3.0, Unit::Count), "3");
    assert_eq!(value_text(0.934, Unit::Ratio), "0.93");
}

#[test]
fn times_of_day_use_the_given_offset() {
    // 2025-11-30 12:03:20 UTC.
    let t = 1_764_504_200_000;
    assert_eq!(clock_text(t, Tz::UTC), "12:03 UTC");
    assert_eq!(clock_text(t, Tz::east_of_utc(60)), "13:03");
    assert_eq!(clock_text(t, Tz::east_of_utc(-13 * 60)), "23:03");
    assert_eq!(day_clock_text(t, Tz::UTC), "11-30 12:03 UTC");
    assert_eq!(day_clock_text(t, Tz::east_of_utc(12 * 60)), "12-01 00:03");
    // A leap day, and the epoch.
    assert_eq!(
        day_clock_text(1_709_208_000_000, Tz::east_of_utc(60)),
        "02-29 13:00"
    );
    assert_eq!(day_clock_text(0, Tz::UTC), "01-01 00:00 UTC");
}

#[test]
fn evidence_reads_as_one_sentence() {
    let mut e = cmp(
        ev(Metric::GpuMemoryUsed, Some("gpu 0"), Some(96.4)),
        Comparison::Ge,
        95.0,
    );
    e.samples = Some((58, 60));
    e.window_s = Some(60.0);
    assert_eq!(
        evidence_text(&e, Tz::UTC),
        "gpu 0 memory used 96% ≥ 95% in 58/60 samples over 60 s"
    );
    let ttf = cmp(
        ev(Metric::MountTimeToFull, Some("/data"), Some(2400.0)),
        Comparison::Lt,
        3600.0,
    );
    assert_eq!(
        evidence_text(&ttf, Tz::UTC),
        "/data full in 40 min < 60 min"
    );
    let mut lost = ev(Metric::GpuUnavailable, Some("gpu 1"), Some(4.0));
    lost.samples = Some((4, 12));
    lost.detail = Some("GPU is lost".into());
    assert_eq!(
        evidence_text(&lost, Tz::UTC),
        "gpu 1 unavailable in 4/12 samples (GPU is lost)"
    );
    let mut nvml = ev(Metric::NvmlStatus, Some("nvml"), None);
    nvml.detail = Some("NVML_ERROR_UNKNOWN".into());
    assert_eq!(
        evidence_text(&nvml, Tz::UTC),
        "nvml status: NVML_ERROR_UNKNOWN"
    );
    assert_eq!(
        evidence_text(&ev(Metric::WriteRate, None, None), Tz::UTC),
        "writes —"
    );
    assert_eq!(
        evidence_text(
            &ev(Metric::ReadMedianOverPeak, Some("nvme0n1"), Some(0.934)),
            Tz::UTC
        ),
        "nvme0n1 median reads / peak 0.93"
    );
}

#[test]
fn a_held_condition_says_so_with_its_entry_level() {
    let mut e = cmp(
        ev(Metric::GpuMemoryUsed, Some("gpu 0"), Some(92.0)),
        Comparison::Ge,
        85.0,
    );
    e.samples = Some((60, 60));
    e.window_s = Some(60.0);
    e.held = Some(Held {
        since_ms: 1_764_504_200_000,
        entered_at: 90.0,
        clears_at: 85.0,
    });
    assert_eq!(
        evidence_text(&e, Tz::UTC),
        "gpu 0 memory used 92% in 60/60 samples over 60 s \
         (held since 12:03 UTC, entered at 90%, clears below 85%)"
    );
    let mut low = cmp(
        ev(Metric::MemAvailable, Some("host"), Some(12.0)),
        Comparison::Lt,
        15.0,
    );
    low.held = Some(Held {
        since_ms: 1_764_504_200_000,
        entered_at: 10.0,
        clears_at: 15.0,
    });
    assert_eq!(
        evidence_text(&low, Tz::east_of_utc(120)),
        "host memory available 12% (held since 14:03, entered at 10%, clears above 15%)"
    );
}

#[test]
fn a_healthy_reason_says_what_is_healthy() {
    // 70% memory, 90% busy, disks and RAM fine (the test host).
    let d = diagnose(&window(60, |_, _| {}), &Thresholds::default(), None);
    assert_eq!(d.verdict, Verdict::Healthy);
    assert_eq!(
        reason(&d, Tz::UTC),
        "GPU 0 busy 90%, memory 70%; disks and RAM fine"
    );
    assert_eq!(deciding_evidence(&d), None);
    let many = diagnose(
        &window(60, |_, f| {
            f.gpus = (0..8)
                .map(|i| gpu(i, 80, 40.0 + f64::from(i), 90.0))
                .collect();
        }),
        &Thresholds::default(),
        None,
    );
    assert_eq!(
        reason(&many, Tz::UTC),
        "8 GPUs busy 90%, memory 40%–47%; disks and RAM fine"
    );
}

#[test]
fn a_no_data_reason_names_its_cause() {
    let no_driver = diagnose(
        &window(10, |_, f| {
            f.nvml = NvmlStatus::NoDriver {
                message: "libnvidia-ml.so.1: cannot open shared object file".into(),
            };
            f.gpus.clear();
        }),
        &Thresholds::default(),
        None,
    );
    assert_eq!(
        reason(&no_driver, Tz::UTC),
        "no NVIDIA driver: libnvidia-ml.so.1: cannot open shared object file"
    );
    let said = NoDataCause::NoDriver {
        message: "no NVIDIA driver found (libnvidia-ml.so.1: cannot open)".into(),
    };
    assert_eq!(
        no_data_text(&said),
        "no NVIDIA driver found (libnvidia-ml.so.1: cannot open)"
    );
    let lost = NoDataCause::GpuLost {
        gpu: "gpu 1".into(),
        message: "GPU is lost".into(),
    };
    assert_eq!(no_data_text(&lost), "GPU 1 lost: GPU is lost");
    let empty = diagnose(&[], &Thresholds::default(), None);
    assert_eq!(reason(&empty, Tz::UTC), "no frames in the window");
    assert_eq!(
        no_data_text(&NoDataCause::TooFewSamples { have: 2, need: 3 }),
        "collecting samples: 2 of 3 so far"
    );
}

#[test]
fn a_finding_reason_is_the_evidence_that_decided_and_says_when_held() {
    let th = Thresholds::default();
    let pressed = diagnose(
        &window(60, |_, f| f.gpus[0] = gpu(0, 80, 92.0, 90.0)),
        &th,
        None,
    );
    assert_eq!(
        reason(&pressed, Tz::UTC),
        "gpu 0 memory used 92% ≥ 90% in 60/60 samples over 60 s"
    );
    let mut later = window(60, |_, f| f.gpus[0] = gpu(0, 80, 87.0, 90.0));
    for f in &mut later {
        f.t_ms += 60_000;
    }
    let held = diagnose(&later, &th, Some(&pressed));
    // T0 + 59 s, when `pressed` first reported it.
    let since = clock_text(T0_MS + 59_000, Tz::UTC);
    assert_eq!(
        reason(&held, Tz::UTC),
        format!(
            "gpu 0 memory used 87% in 60/60 samples over 60 s \
             (held since {since}, entered at 90%, clears below 85%)"
        )
    );
}

#[test]
fn the_verdicts_findings_come_first_then_by_severity() {
    let f = |rule, severity| Finding {
        rule,
        severity,
        confidence: 1.0,
        subject: None,
        since_ms: 0,
        evidence: vec![],
        suggestions: vec![],
    };
    let all = vec![
        f(RuleId::GpuMemoryPressure, Severity::Warning),
        f(RuleId::GpuMemoryOrphan, Severity::Warning),
        f(RuleId::InputBoundDisk, Severity::Warning),
        f(RuleId::DiskSpaceRisk, Severity::Critical),
        f(RuleId::DevShm, Severity::Warning),
        f(RuleId::Headroom, Severity::Ok),
    ];
    let rules =
        |v: Verdict| -> Vec<RuleId> { order_findings(&all, v).iter().map(|f| f.rule).collect() };
    assert_eq!(
        rules(Verdict::GpuMemoryPressure),
        vec![
            RuleId::GpuMemoryPressure,
            RuleId::GpuMemoryOrphan,
            RuleId::DiskSpaceRisk,
            RuleId::InputBoundDisk,
            RuleId::DevShm,
            RuleId::Headroom
        ]
    );
    assert_eq!(
        rules(Verdict::InputBoundDisk)[..2],
        [RuleId::InputBoundDisk, RuleId::DiskSpaceRisk]
    );
    assert_eq!(
        rules(Verdict::DiskSpaceRisk)[..2],
        [RuleId::DiskSpaceRisk, RuleId::DevShm]
    );
    let unknown_last = vec![
        f(RuleId::GpuUnavailable, Severity::Unknown),
        f(RuleId::Headroom, Severity::Ok),
        f(RuleId::DevShm, Severity::Warning),
    ];
    let order: Vec<RuleId> = order_findings(&unknown_last, Verdict::Healthy)
        .iter()
        .map(|f| f.rule)
        .collect();
    assert_eq!(
        order,
        vec![RuleId::Headroom, RuleId::DevShm, RuleId::GpuUnavailable]
    );
    for v in Verdict::ALL {
        assert!(all_rules().iter().any(|r| explains(v, *r)), "{v:?}");
    }
}

fn all_rules() -> [RuleId; 12] {
    [
        RuleId::GpuMemoryPressure,
        RuleId::GpuMemoryNotHeldByJob,
        RuleId::GpuMemoryOrphan,
        RuleId::GpuUnavailable,
        RuleId::InputBoundDisk,
        RuleId::InputBoundCpu,
        RuleId::CheckpointStall,
        RuleId::GpuUnderutilized,
        RuleId::DiskSpaceRisk,
        RuleId::DevShm,
        RuleId::HostMemoryPressure,
        RuleId::Headroom,
    ]
}

#[test]
fn every_diagnosis_of_the_scenarios_has_words_for_everything() {
    let d: Diagnosis = diagnose(&window(60, |_, _| {}), &Thresholds::default(), None);
    for n in &d.path {
        for e in &n.evidence {
            let t = evidence_text(e, Tz::UTC);
            assert!(!t.is_empty() && !t.contains("NaN"), "{t}");
        }
    }
}
