//! Words for the diagnosis: verdicts, severities, answers and rules in plain language, evidence as
//! one sentence ("gpu 0 memory used 96% ≥ 90% in 58/60 samples over 60 s"), durations, and the ids
//! the test hooks carry (snake_case exactly as serialized).

use crate::format::{DASH, num, opt_mib_s, pct};
use shared::diagnosis::{
    Answer, Diagnosis, Evidence, NodeId, ProjectionKind, RuleId, Severity, SuggestionId, Verdict,
};
use shared::units::{Bytes, BytesPerSec, Percent, format_bytes};

/// A unit enum's serialized string (snake_case), or "" if it is not one.
fn wire_str(v: serde_json::Result<serde_json::Value>) -> String {
    match v {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Wire ids (snake_case exactly as serialized), for the test hooks: `gpu_memory`, `dev_shm`,
/// `stage_on_local_nvme`, `time_to_full_disk`.
pub trait WireId: Copy {
    fn wire_id(self) -> String;
}

macro_rules! wire_id_by_serde {
    ($($t:ty),*) => {$(
        impl WireId for $t {
            fn wire_id(self) -> String {
                wire_str(serde_json::to_value(self))
            }
        }
    )*};
}

wire_id_by_serde!(NodeId, RuleId, SuggestionId, ProjectionKind);

/// The wire id of `value` (see [`WireId`]).
pub fn wire_id<T: WireId>(value: &T) -> String {
    value.wire_id()
}

/// The verdict in words, for the banner and the flowchart's leaves.
pub fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Healthy => "Healthy",
        Verdict::GpuMemoryPressure => "GPU memory pressure",
        Verdict::InputBoundDisk => "Input-bound: disk",
        Verdict::InputBoundCpu => "Input-bound: CPU",
        Verdict::CheckpointStall => "Checkpoint stall",
        Verdict::GpuUnderutilized => "GPU underutilized",
        Verdict::DiskSpaceRisk => "Disk space at risk",
        Verdict::HostMemoryPressure => "Host memory pressure",
        Verdict::NoData => "No data",
    }
}

/// `ok|warning|critical|unknown`: the `data-severity` value and the `sev-*` class suffix.
pub fn severity_attr(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "ok",
        Severity::Warning => "warning",
        Severity::Critical => "critical",
        Severity::Unknown => "unknown",
    }
}

/// `yes|no|unknown`: the `data-answer` value and the `ans-*` class suffix.
pub fn answer_attr(a: Answer) -> &'static str {
    match a {
        Answer::Yes => "yes",
        Answer::No => "no",
        Answer::Unknown => "unknown",
    }
}

/// A rule's name in words, for the findings panel.
pub fn rule_words(r: RuleId) -> &'static str {
    match r {
        RuleId::GpuMemoryPressure => "GPU memory pressure",
        RuleId::GpuMemoryNotHeldByJob => "GPU memory not held by the job",
        RuleId::GpuMemoryOrphan => "GPU memory held by an exited process",
        RuleId::GpuUnavailable => "GPU unavailable",
        RuleId::InputBoundDisk => "Input-bound on disk",
        RuleId::InputBoundCpu => "Input-bound on CPU",
        RuleId::CheckpointStall => "Checkpoint stall",
        RuleId::GpuUnderutilized => "GPU underutilized",
        RuleId::DiskSpaceRisk => "Disk space at risk",
        RuleId::DevShm => "/dev/shm too small or full",
        RuleId::HostMemoryPressure => "Host memory pressure",
        RuleId::Headroom => "Headroom",
    }
}

/// A duration for people: `45 s`, `12 min`, `1.5 h`, `15 h`, `3 d`; a dash when not finite or
/// negative.
pub fn duration_text(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return DASH.to_owned();
    }
    let tenth = |v: f64| {
        if v < 10.0 && (v - v.round()).abs() >= 0.05 {
            format!("{v:.1}")
        } else {
            format!("{v:.0}")
        }
    };
    if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if seconds < 48.0 * 3600.0 {
        format!("{} h", tenth(seconds / 3600.0))
    } else {
        format!("{} d", tenth(seconds / 86_400.0))
    }
}

/// What a card says about a projection: `memory full in ~12 min`, `full in ~40 min`.
pub fn projection_text(kind: ProjectionKind, seconds: f64) -> String {
    let when = duration_text(seconds);
    match kind {
        ProjectionKind::TimeToFullGpuMemory => format!("memory full in ~{when}"),
        ProjectionKind::TimeToFullDisk => format!("full in ~{when}"),
    }
}

/// A unitless figure: whole numbers as they are, small fractions with two decimals.
fn plain(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() < 1.0 {
        format!("{v:.2}")
    } else {
        num(v)
    }
}

/// `value` in `unit` as the page writes it elsewhere (`96%`, `1.2 GiB`, `12.3 MiB/s`, `12 min`).
pub fn value_text(value: f64, unit: &str) -> String {
    match unit {
        "%" => pct(Percent(value)),
        "bytes" => format_bytes(Bytes(value.max(0.0).round() as u64)),
        "bytes/s" => opt_mib_s(Some(BytesPerSec(value))),
        "s" => duration_text(value),
        "ms" => format!("{} ms", num(value)),
        "" => plain(value),
        other => format!("{} {other}", plain(value)),
    }
}

/// `>=` as `≥`, `<=` as `≤`; other comparisons unchanged.
pub fn comparison_symbol(c: &str) -> &str {
    match c {
        ">=" => "≥",
        "<=" => "≤",
        other => other,
    }
}

/// The metric in words, without a trailing unit token and without repeating the subject's kind:
/// `gpu_memory_used_pct` of `gpu 0` reads `memory used`.
pub fn metric_words(metric: &str, subject: Option<&str>) -> String {
    let mut words: Vec<&str> = metric.split('_').filter(|w| !w.is_empty()).collect();
    if words.len() > 1 && matches!(words.last(), Some(&("pct" | "ms" | "s"))) {
        words.pop();
    }
    let repeats = |w: &str| match subject {
        Some(s) if w == "gpu" => s.starts_with("gpu "),
        Some(s) if w == "mount" => s.starts_with('/'),
        _ => false,
    };
    if words.len() > 1 && words.first().is_some_and(|w| repeats(w)) {
        words.remove(0);
    }
    words.join(" ")
}

/// One evidence item as a sentence: subject, metric, value, comparison with the threshold, in how
/// many samples it held, over which window, and any detail.
pub fn evidence_text(e: &Evidence) -> String {
    let subject = e.subject.as_deref().filter(|s| !s.is_empty());
    let mut s = String::new();
    if let Some(subject) = subject {
        s.push_str(subject);
        s.push(' ');
    }
    s.push_str(&metric_words(&e.metric, subject));
    s.push(' ');
    s.push_str(
        &e.value
            .map_or_else(|| DASH.to_owned(), |v| value_text(v, &e.unit)),
    );
    if let Some(t) = e.threshold.filter(|_| !e.comparison.is_empty()) {
        s.push_str(&format!(
            " {} {}",
            comparison_symbol(&e.comparison),
            value_text(t, &e.unit)
        ));
    }
    if let Some((held, of)) = e.samples {
        s.push_str(&format!(" in {held}/{of} samples"));
    }
    if e.window_s > 0.0 {
        s.push_str(&format!(" over {}", duration_text(e.window_s)));
    }
    if let Some(d) = e.detail.as_deref().filter(|d| !d.is_empty()) {
        s.push_str(&format!(" ({d})"));
    }
    s
}

/// Whether the evidence's comparison held for its value, when both sides are known.
fn comparison_holds(e: &Evidence) -> Option<bool> {
    let (v, t) = (e.value?, e.threshold?);
    match e.comparison.as_str() {
        ">=" => Some(v >= t),
        ">" => Some(v > t),
        "<=" => Some(v <= t),
        "<" => Some(v < t),
        _ => None,
    }
}

/// How strongly an item supports a yes: the share of samples that held, else 1 when its single
/// comparison held.
fn support(e: &Evidence) -> f64 {
    match e.samples {
        Some((held, of)) if of > 0 => f64::from(held) / f64::from(of),
        _ => comparison_holds(e).map_or(0.0, |h| if h { 1.0 } else { 0.0 }),
    }
}

/// The item that best explains the deciding (last) node's answer: for yes, the one that held
/// most; for unknown, the first with a detail (an error); otherwise the first.
pub fn deciding_evidence(d: &Diagnosis) -> Option<&Evidence> {
    let node = d.path.last()?;
    let ev = &node.evidence;
    match node.answer {
        Answer::Yes => ev.iter().fold(None::<&Evidence>, |best, e| match best {
            Some(b) if support(b) >= support(e) => Some(b),
            _ => Some(e),
        }),
        Answer::Unknown => ev.iter().find(|e| e.detail.is_some()).or(ev.first()),
        Answer::No => ev.first(),
    }
}

/// The banner's one-line reason: the deciding node's evidence, else its question and answer.
pub fn reason(d: &Diagnosis) -> String {
    if let Some(e) = deciding_evidence(d) {
        return evidence_text(e);
    }
    d.path.last().map_or_else(
        || DASH.to_owned(),
        |n| format!("{} {}", n.question, answer_attr(n.answer)),
    )
}

/// Splits prose with `inline code` (the catalogue's how-to texts) into `(is_code, text)` runs.
/// An unmatched backtick is kept as text.
pub fn code_spans(text: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let pieces: Vec<&str> = text.split('`').collect();
    let closed = pieces.len() % 2 == 1;
    for (i, piece) in pieces.iter().enumerate() {
        let is_code = i % 2 == 1 && (closed || i + 1 < pieces.len());
        if piece.is_empty() {
            continue;
        }
        if i % 2 == 1 && !is_code {
            out.push((false, format!("`{piece}")));
        } else {
            out.push((is_code, (*piece).to_owned()));
        }
    }
    out
}

/// The first code span of a how-to: the snippet its Copy button copies.
pub fn first_code(text: &str) -> Option<String> {
    code_spans(text)
        .into_iter()
        .find_map(|(is_code, t)| is_code.then_some(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::PathNode;

    pub(crate) fn ev(
        metric: &str,
        subject: Option<&str>,
        value: Option<f64>,
        unit: &str,
    ) -> Evidence {
        Evidence {
            metric: metric.to_owned(),
            subject: subject.map(str::to_owned),
            value,
            unit: unit.to_owned(),
            threshold: None,
            comparison: String::new(),
            window_s: 0.0,
            samples: None,
            detail: None,
        }
    }

    fn held(mut e: Evidence, cmp: &str, t: f64, samples: (u32, u32), window_s: f64) -> Evidence {
        e.comparison = cmp.to_owned();
        e.threshold = Some(t);
        e.samples = Some(samples);
        e.window_s = window_s;
        e
    }

    fn diag(answer: Answer, evidence: Vec<Evidence>) -> Diagnosis {
        Diagnosis {
            verdict: Verdict::GpuMemoryPressure,
            severity: Severity::Critical,
            path: vec![PathNode {
                node: NodeId::GpuMemory,
                question: NodeId::GpuMemory.question().to_owned(),
                answer,
                evidence,
            }],
            findings: vec![],
            projections: vec![],
            window_s: 60.0,
            t_ms: 1,
        }
    }

    #[test]
    fn ids_are_the_wire_ids() {
        assert_eq!(wire_id(&NodeId::CheckpointStall), "checkpoint_stall");
        assert_eq!(
            wire_id(&RuleId::GpuMemoryNotHeldByJob),
            "gpu_memory_not_held_by_job"
        );
        assert_eq!(
            wire_id(&SuggestionId::StageOnLocalNvme),
            "stage_on_local_nvme"
        );
        assert_eq!(
            wire_id(&ProjectionKind::TimeToFullDisk),
            "time_to_full_disk"
        );
        let wire = |v: serde_json::Result<serde_json::Value>| {
            v.ok().and_then(|v| v.as_str().map(str::to_owned))
        };
        for v in Verdict::ALL {
            assert_eq!(wire(serde_json::to_value(v)).as_deref(), Some(v.id()));
        }
        for s in [
            Severity::Ok,
            Severity::Warning,
            Severity::Critical,
            Severity::Unknown,
        ] {
            assert_eq!(
                wire(serde_json::to_value(s)).as_deref(),
                Some(severity_attr(s))
            );
        }
        for a in [Answer::Yes, Answer::No, Answer::Unknown] {
            assert_eq!(
                wire(serde_json::to_value(a)).as_deref(),
                Some(answer_attr(a))
            );
        }
    }

    #[test]
    fn verdicts_read_as_words() {
        assert_eq!(
            verdict_words(Verdict::GpuMemoryPressure),
            "GPU memory pressure"
        );
        assert_eq!(verdict_words(Verdict::InputBoundDisk), "Input-bound: disk");
        assert_eq!(verdict_words(Verdict::Healthy), "Healthy");
        assert_eq!(verdict_words(Verdict::NoData), "No data");
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration_text(45.2), "45 s");
        assert_eq!(duration_text(60.0), "60 s");
        assert_eq!(duration_text(12.0 * 60.0), "12 min");
        assert_eq!(duration_text(40.0 * 60.0 + 20.0), "40 min");
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
    fn evidence_reads_as_one_sentence() {
        let e = held(
            ev("gpu_memory_used_pct", Some("gpu 0"), Some(96.4), "%"),
            ">=",
            95.0,
            (58, 60),
            60.0,
        );
        assert_eq!(
            evidence_text(&e),
            "gpu 0 memory used 96% ≥ 95% in 58/60 samples over 60 s"
        );
        let mut m = ev("mount_time_to_full_s", Some("/data"), Some(2400.0), "s");
        m.comparison = "<".into();
        m.threshold = Some(3600.0);
        assert_eq!(evidence_text(&m), "/data time to full 40 min < 60 min");
        let mut lost = ev("gpu_unavailable_samples", Some("gpu 1"), None, "");
        lost.detail = Some("GPU is lost".into());
        assert_eq!(
            evidence_text(&lost),
            "gpu 1 unavailable samples — (GPU is lost)"
        );
        assert_eq!(
            evidence_text(&ev(
                "write_bytes_per_sec",
                None,
                Some(3.0 * 1048576.0),
                "bytes/s"
            )),
            "write bytes per sec 3.0 MiB/s"
        );
        assert_eq!(
            evidence_text(&ev("read_median_over_peak", None, Some(0.934), "")),
            "read median over peak 0.93"
        );
        assert_eq!(
            evidence_text(&ev(
                "gpu_memory_orphan_bytes",
                Some("gpu 0"),
                Some(4294967296.0),
                "bytes"
            )),
            "gpu 0 memory orphan bytes 4.0 GiB"
        );
        assert_eq!(metric_words("pct", None), "pct");
    }

    #[test]
    fn the_reason_is_the_evidence_that_decided() {
        let weak = held(
            ev("gpu_memory_used_pct", Some("gpu 0"), Some(20.0), "%"),
            ">=",
            90.0,
            (0, 60),
            60.0,
        );
        let strong = held(
            ev("gpu_memory_used_pct", Some("gpu 1"), Some(97.0), "%"),
            ">=",
            90.0,
            (59, 60),
            60.0,
        );
        let d = diag(Answer::Yes, vec![weak.clone(), strong.clone()]);
        assert_eq!(deciding_evidence(&d), Some(&strong));
        assert!(reason(&d).starts_with("gpu 1 memory used 97%"));
        let mut growth = ev("gpu_memory_time_to_full_s", Some("gpu 0"), Some(600.0), "s");
        growth.comparison = "<".into();
        growth.threshold = Some(900.0);
        let d = diag(Answer::Yes, vec![weak.clone(), growth.clone()]);
        assert_eq!(deciding_evidence(&d), Some(&growth));
        let mut err = ev("nvml_status", Some("nvml"), None, "");
        err.detail = Some("NVML failed".into());
        let d = diag(Answer::Unknown, vec![weak.clone(), err.clone()]);
        assert_eq!(deciding_evidence(&d), Some(&err));
        let d = diag(Answer::No, vec![]);
        assert_eq!(reason(&d), "GPU memory too high? no");
        let mut empty = d.clone();
        empty.path.clear();
        assert_eq!(reason(&empty), "—");
    }

    #[test]
    fn how_to_prose_splits_into_code_spans() {
        let t = "Run `export A=1` before the job; TensorFlow: `tf.x()`.";
        assert_eq!(
            code_spans(t),
            vec![
                (false, "Run ".to_owned()),
                (true, "export A=1".to_owned()),
                (false, " before the job; TensorFlow: ".to_owned()),
                (true, "tf.x()".to_owned()),
                (false, ".".to_owned()),
            ]
        );
        assert_eq!(first_code(t).as_deref(), Some("export A=1"));
        assert_eq!(first_code("no code here"), None);
        assert_eq!(
            code_spans("half `open"),
            vec![(false, "half ".to_owned()), (false, "`open".to_owned())]
        );
    }
}
