//! The readable report of `vramio check`: verdict and reason, the path through the tree with its
//! evidence, findings with their suggestions, and projections. Every sentence comes from
//! `shared::diagnosis::words`, so it reads exactly as the page does. (`--json` prints the
//! `Diagnosis` itself.)
//!
//! Times of day are written in UTC, marked as such: the report is pasted into tickets and logs
//! read in other zones, and a one-shot check has no previous diagnosis, so it holds nothing by
//! hysteresis and rarely needs one.

use shared::diagnosis::Diagnosis;
use shared::diagnosis::words::{
    self, Tz, answer_text, duration_text, evidence_text, order_findings, projection_text,
    rule_text, severity_text, verdict_text,
};
use std::fmt::Write;

/// The zone the report writes times of day in.
pub const REPORT_TZ: Tz = Tz::UTC;

/// The whole report.
pub fn render(
    d: &Diagnosis,
    host: &str,
    frames: usize,
    notes: &[String],
    jobs: &[shared::Job],
) -> String {
    let tz = REPORT_TZ;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "vramio check: {} - {} ({}; host {host}, {frames} frames over {})",
        severity_text(d.severity).to_uppercase(),
        verdict_text(d.verdict),
        d.verdict.id(),
        d.window_s
            .map_or_else(|| words::DASH.to_owned(), duration_text)
    );
    let _ = writeln!(out, "{}", words::reason_with_jobs(d, jobs, tz));
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(out, "\nPath through the decision tree:");
    for node in &d.path {
        let _ = writeln!(out, "  {} -> {}", node.question, answer_text(node.answer));
        for e in &node.evidence {
            let _ = writeln!(out, "      {}", evidence_text(e, tz));
        }
    }
    if !jobs.is_empty() {
        let _ = writeln!(out, "\nJobs (biggest GPU memory first):");
        for job in jobs {
            let _ = writeln!(out, "  {}", job.summary_text());
            if let Some(v) = d.of_job(job) {
                let _ = writeln!(
                    out,
                    "      {}: {}",
                    verdict_text(v.verdict),
                    words::job_reason(v, tz)
                );
            }
        }
        let counters: std::collections::BTreeSet<_> = jobs
            .iter()
            .filter_map(|j| j.io.as_ref().map(|io| io.counter))
            .collect();
        for c in counters {
            let _ = writeln!(out, "  (I/O: {})", c.note());
        }
    }
    if d.findings.is_empty() {
        let _ = writeln!(out, "\nFindings: none");
    } else {
        let _ = writeln!(out, "\nFindings:");
    }
    for f in order_findings(&d.findings, d.verdict) {
        let _ = writeln!(
            out,
            "  [{}] {}{} (confidence {:.0}%)",
            severity_text(f.severity),
            rule_text(f.rule),
            f.subject
                .as_deref()
                .map(|s| format!(" on {s}"))
                .unwrap_or_default(),
            f.confidence * 100.0
        );
        for e in &f.evidence {
            let _ = writeln!(out, "      evidence: {}", evidence_text(e, tz));
        }
        for s in &f.suggestions {
            let _ = writeln!(out, "      -> {}", s.title());
            let _ = writeln!(out, "         why: {}", s.why);
            let _ = writeln!(out, "         expect: {}", s.effect());
            for l in s.how_to().lines() {
                let _ = writeln!(out, "         | {l}");
            }
        }
    }
    if !d.projections.is_empty() {
        let _ = writeln!(out, "\nProjections:");
        for p in &d.projections {
            let _ = writeln!(
                out,
                "  {}: {}",
                p.subject,
                projection_text(p.kind, p.seconds)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::{NoDataCause, Thresholds, diagnose};
    use shared::{Bytes, Frame, Gpu, GpuMemory, GpuState, NvmlStatus, Percent};

    /// `n` frames of one GPU at 97% memory, 95% busy.
    fn pressed(n: u64) -> Vec<Frame> {
        (0..n)
            .map(|i| {
                let mut f = Frame::empty("h", i, 1_764_504_000_000 + i * 1000, 1000);
                let mut g = Gpu::unread(0, Some("GPU-0".into()), Some("H100".into()), GpuState::Ok);
                g.memory = Some(GpuMemory {
                    total_bytes: Bytes(100 << 30),
                    used_bytes: Bytes(97 << 30),
                    reserved_bytes: Some(Bytes(0)),
                    free_bytes: Bytes(3 << 30),
                });
                g.utilization_gpu_pct = Some(Percent(95.0));
                f.gpus = vec![g];
                f
            })
            .collect()
    }

    #[test]
    fn every_evidence_line_is_the_shared_sentence() {
        let d = diagnose(&pressed(10), &Thresholds::default(), None);
        let text = render(&d, "h", 10, &[], &[]);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for e in d.path.iter().flat_map(|n| &n.evidence) {
            let want = evidence_text(e, REPORT_TZ);
            assert!(lines.contains(&want.as_str()), "{want}\n{text}");
        }
        for e in d.findings.iter().flat_map(|f| &f.evidence) {
            let want = format!("evidence: {}", evidence_text(e, REPORT_TZ));
            assert!(lines.contains(&want.as_str()), "{want}\n{text}");
        }
        assert!(
            text.starts_with(
                "vramio check: CRITICAL - GPU memory pressure (gpu_memory_pressure; host h, \
                 10 frames over 10 s)\ngpu 0 memory used 97% ≥ 90% in 10/10 samples over 10 s\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("[critical] GPU memory pressure on gpu 0 (confidence 100%)"),
            "{text}"
        );
    }

    #[test]
    fn no_data_names_its_cause() {
        let mut frames = pressed(3);
        for f in &mut frames {
            f.nvml = NvmlStatus::NoDriver {
                message: "libnvidia-ml.so.1: cannot open shared object file".into(),
            };
            f.gpus.clear();
        }
        let d = diagnose(&frames, &Thresholds::default(), None);
        assert!(matches!(d.no_data, Some(NoDataCause::NoDriver { .. })));
        let text = render(&d, "h", 3, &["line 3: bad".into()], &[]);
        assert!(
            text.starts_with("vramio check: UNKNOWN - No data (no_data; host h, 3 frames over 3 s)\nno NVIDIA driver: libnvidia-ml.so.1"),
            "{text}"
        );
        assert!(text.contains("note: line 3: bad"));
        assert!(text.contains("Path through the decision tree:"));
        let empty = diagnose(&[], &Thresholds::default(), None);
        assert!(
            render(&empty, "h", 0, &[], &[]).contains("0 frames over —)\nno frames in the window"),
            "{}",
            render(&empty, "h", 0, &[], &[])
        );
    }
}
