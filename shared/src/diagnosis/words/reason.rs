//! The banner's one line: for a finding verdict the evidence that decided it; for `healthy` what
//! is healthy (`GPU 0 busy 88%, memory 49%; disks and RAM fine`); for `no_data` its cause.

use super::{DASH, Tz, answer_text, evidence_text, percent_text};
use crate::diagnosis::evidence::{Evidence, Metric};
use crate::diagnosis::model::{Answer, Diagnosis, NoDataCause, NodeId, PathNode, Verdict};
use crate::diagnosis::per_job::JobDiagnosis;
use crate::jobs::Job;

/// Beyond this many GPUs the healthy line gives ranges instead of one clause per GPU.
const GPUS_LISTED: usize = 3;

/// How strongly an item supports a yes: the share of samples that held, else 1 when its single
/// comparison held.
fn support(e: &Evidence) -> f64 {
    match e.samples {
        Some((held, of)) if of > 0 => f64::from(held) / f64::from(of),
        _ => e
            .comparison_holds()
            .map_or(0.0, |h| if h { 1.0 } else { 0.0 }),
    }
}

/// The item that best explains the verdict: of the last node on the path that answered yes, the
/// one that held most. `None` for `healthy` and `no_data`, which have no such node.
pub fn deciding_evidence(d: &Diagnosis) -> Option<&Evidence> {
    deciding_in(d.verdict, &d.path)
}

fn deciding_in(verdict: Verdict, path: &[PathNode]) -> Option<&Evidence> {
    if matches!(verdict, Verdict::Healthy | Verdict::NoData) {
        return None;
    }
    let node = path.iter().rev().find(|n| n.answer == Answer::Yes)?;
    node.evidence
        .iter()
        .fold(None::<&Evidence>, |best, e| match best {
            Some(b) if support(b) >= support(e) => Some(b),
            _ => Some(e),
        })
}

/// `gpu 0` as `GPU 0`; other subjects unchanged.
fn gpu_name(subject: &str) -> String {
    match subject.strip_prefix("gpu ") {
        Some(rest) => format!("GPU {rest}"),
        None => subject.to_owned(),
    }
}

/// What a `no_data` diagnosis lacked.
pub fn no_data_text(c: &NoDataCause) -> String {
    match c {
        NoDataCause::NoFrames => "no frames in the window".to_owned(),
        // The sampler's own message may already say so ("no NVIDIA driver found (...)").
        NoDataCause::NoDriver { message }
            if message.to_lowercase().starts_with("no nvidia driver") =>
        {
            message.clone()
        }
        NoDataCause::NoDriver { message } => format!("no NVIDIA driver: {message}"),
        NoDataCause::NvmlFailed { message } => format!("NVML failing: {message}"),
        NoDataCause::NoGpus => "NVML reports no GPU".to_owned(),
        NoDataCause::GpuLost { gpu, message } => format!("{} lost: {message}", gpu_name(gpu)),
        NoDataCause::TooFewSamples { have, need } => {
            format!("collecting samples: {have} of {need} so far")
        }
        NoDataCause::NotRead { node } => match node {
            NodeId::GpuMemory => "no GPU memory readings".to_owned(),
            NodeId::GpuStarved => "no GPU utilization readings".to_owned(),
            NodeId::DiskSpace => "no mount readings".to_owned(),
            NodeId::HostMemory => "no host memory readings".to_owned(),
            other => format!("no readings for: {}", other.question()),
        },
    }
}

fn node_evidence(d: &Diagnosis, node: NodeId) -> &[Evidence] {
    d.path
        .iter()
        .find(|n| n.node == node)
        .map_or(&[], |n| n.evidence.as_slice())
}

/// `lo–hi` of the known values, or `None`.
fn range(values: impl Iterator<Item = f64>) -> Option<String> {
    let (lo, hi) = values.fold(None, |acc: Option<(f64, f64)>, v| {
        Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
    })?;
    let (lo, hi) = (percent_text(lo), percent_text(hi));
    Some(if lo == hi { lo } else { format!("{lo}–{hi}") })
}

/// `GPU 0 busy 88%, memory 49%; disks and RAM fine`.
fn healthy_text(d: &Diagnosis) -> String {
    let starved = node_evidence(d, NodeId::GpuStarved);
    let gpus: Vec<(&str, Option<f64>, Option<f64>, bool)> = node_evidence(d, NodeId::GpuMemory)
        .iter()
        .filter(|e| e.metric == Metric::GpuMemoryUsed)
        .filter_map(|e| {
            let subject = e.subject.as_deref()?;
            let of = |m: Metric| {
                starved
                    .iter()
                    .find(|s| s.metric == m && s.subject.as_deref() == Some(subject))
            };
            let util = of(Metric::GpuUtilizationMean).and_then(|u| u.value);
            let idle = of(Metric::GpuJobPresent).is_some();
            Some((subject, util, e.value, idle))
        })
        .collect();
    let mut parts = Vec::new();
    if gpus.len() > GPUS_LISTED {
        let mut s = format!("{} GPUs", gpus.len());
        if let Some(u) = range(gpus.iter().filter_map(|g| g.1)) {
            s.push_str(&format!(" busy {u},"));
        }
        if let Some(m) = range(gpus.iter().filter_map(|g| g.2)) {
            s.push_str(&format!(" memory {m}"));
        }
        parts.push(s.trim_end_matches(',').to_owned());
    } else {
        for (subject, util, mem, idle) in gpus {
            let mut s = gpu_name(subject);
            match (util, idle) {
                (Some(u), _) => s.push_str(&format!(" busy {},", percent_text(u))),
                (None, true) => s.push_str(" idle (no job),"),
                (None, false) => {}
            }
            if let Some(m) = mem {
                s.push_str(&format!(" memory {}", percent_text(m)));
            }
            parts.push(s.trim_end_matches(',').to_owned());
        }
    }
    parts.push("disks and RAM fine".to_owned());
    parts.join("; ")
}

/// The banner's one-line reason (see the module docs), naming the jobs it is about
/// ([`jobs_about`]) without their users.
pub fn reason(d: &Diagnosis, tz: Tz) -> String {
    reason_with_jobs(d, &[], tz)
}

/// [`reason`], with the users of the jobs it names taken from `jobs` (the newest frame's, which a
/// share link without user names has none in).
pub fn reason_with_jobs(d: &Diagnosis, jobs: &[Job], tz: Tz) -> String {
    let text = match d.verdict {
        Verdict::NoData => d
            .no_data
            .as_ref()
            .map_or_else(|| "not enough data".to_owned(), no_data_text),
        Verdict::Healthy => healthy_text(d),
        _ => match deciding_evidence(d) {
            Some(e) => evidence_text(e, tz),
            None => d.path.last().map_or_else(
                || DASH.to_owned(),
                |n| format!("{} {}", n.question, answer_text(n.answer)),
            ),
        },
    };
    match jobs_about(d, jobs) {
        Some(about) => format!("{about}: {text}"),
        None => text,
    }
}

/// One job's verdict in one line: the evidence that decided it and, for contention, who reads
/// the device; for `healthy` the question its walk ended on; for `no_data` the question it could
/// not answer.
pub fn job_reason(j: &JobDiagnosis, tz: Tz) -> String {
    // Input-bound on disk: the job's own reads first, then what showed the device busy.
    let own = (j.verdict == Verdict::InputBoundDisk)
        .then(|| {
            j.path.iter().flat_map(|n| &n.evidence).find(|e| {
                e.metric == Metric::JobReadRateMean && e.subject.as_deref() == Some(&j.label)
            })
        })
        .flatten();
    let mut text = match deciding_in(j.verdict, &j.path) {
        Some(e) => match own {
            Some(o) if !std::ptr::eq(o, e) => {
                format!("{}; {}", evidence_text(o, tz), evidence_text(e, tz))
            }
            _ => evidence_text(e, tz),
        },
        None => match j.path.iter().find(|n| n.answer == Answer::Unknown) {
            Some(n) if j.verdict == Verdict::NoData => {
                format!("{} {}", n.question, answer_text(n.answer))
            }
            _ => j.path.last().map_or_else(
                || DASH.to_owned(),
                |n| format!("{} {}", n.question, answer_text(n.answer)),
            ),
        },
    };
    if let Some(c) = &j.contention {
        text.push_str(&format!(
            "; {} reads {} from {}",
            c.label,
            super::mib_per_sec_text(c.read_bytes_per_sec),
            c.device
        ));
    }
    text
}

/// Beyond this many jobs a verdict names the first ones and counts the rest.
const JOBS_NAMED: usize = 2;

/// The jobs a host verdict is about: those whose own verdict is the host's, for a verdict about
/// GPUs (memory pressure, a starved leaf). `slurm 4412 (python) of ana on GPUs 0-3`; `None` when
/// no job's verdict is the host's.
pub fn jobs_about(d: &Diagnosis, jobs: &[Job]) -> Option<String> {
    if !(d.verdict == Verdict::GpuMemoryPressure || d.verdict.is_starvation()) {
        return None;
    }
    let about: Vec<&JobDiagnosis> = d.jobs.iter().filter(|j| j.verdict == d.verdict).collect();
    if about.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = about
        .iter()
        .take(JOBS_NAMED)
        .map(|j| {
            let user = jobs
                .iter()
                .find(|f| j.is_of(f))
                .and_then(|f| f.user.as_deref());
            let mut s = j.label.clone();
            if let Some(u) = user {
                s.push_str(&format!(" of {u}"));
            }
            s.push_str(&format!(" on {}", gpus_text(&j.gpus)));
            s
        })
        .collect();
    if about.len() > JOBS_NAMED {
        parts.push(format!("{} more jobs", about.len() - JOBS_NAMED));
    }
    Some(parts.join(", "))
}

/// `GPU 2`, `GPUs 0-3`, `GPUs 0, 2, 5`.
pub fn gpus_text(indices: &[u32]) -> String {
    let mut v = indices.to_vec();
    v.sort_unstable();
    v.dedup();
    match v.as_slice() {
        [] => "no GPU".to_owned(),
        [one] => format!("GPU {one}"),
        [first, .., last] if (*last - *first) as usize + 1 == v.len() => {
            format!("GPUs {first}-{last}")
        }
        _ => format!(
            "GPUs {}",
            v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}
