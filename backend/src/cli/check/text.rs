//! The readable report of `vramio check`: verdict, the path through the tree with its evidence,
//! findings with their suggestions, and projections. (`--json` prints the `Diagnosis` itself.)

use shared::diagnosis::{Answer, Diagnosis, Evidence, ProjectionKind, Severity};
use std::fmt::Write;

/// One line of evidence: `gpu 0 memory_used 96.1 % >= 95 (58/60 samples, 60 s)`.
pub fn evidence_line(e: &Evidence) -> String {
    let mut s = String::new();
    if let Some(subject) = &e.subject {
        let _ = write!(s, "{subject} ");
    }
    s.push_str(&e.metric);
    match e.value {
        Some(v) => {
            let _ = write!(
                s,
                " {}{}{}",
                trim_num(v),
                if e.unit.is_empty() { "" } else { " " },
                e.unit
            );
        }
        None => s.push_str(" (no data)"),
    }
    if let Some(t) = e.threshold {
        let _ = write!(s, " {} {}", e.comparison, trim_num(t));
    }
    let mut extra = Vec::new();
    if let Some((held, of)) = e.samples {
        extra.push(format!("{held}/{of} samples"));
    }
    if e.window_s > 0.0 {
        extra.push(format!("{} s window", trim_num(e.window_s)));
    }
    if !extra.is_empty() {
        let _ = write!(s, " ({})", extra.join(", "));
    }
    if let Some(d) = &e.detail {
        let _ = write!(s, ": {d}");
    }
    s
}

fn trim_num(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    }
}

/// `~12 min`, `~3.5 h`.
pub fn duration_text(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("~{seconds:.0} s")
    } else if seconds < 90.0 * 60.0 {
        format!("~{:.0} min", seconds / 60.0)
    } else if seconds < 48.0 * 3600.0 {
        format!("~{:.1} h", seconds / 3600.0)
    } else {
        format!("~{:.1} d", seconds / 86400.0)
    }
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "OK",
        Severity::Warning => "WARNING",
        Severity::Critical => "CRITICAL",
        Severity::Unknown => "UNKNOWN",
    }
}

/// The whole report.
pub fn render(d: &Diagnosis, host: &str, frames: usize, notes: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "vramio check: {} - {} (host {host}, {frames} frames over {} s)",
        severity_word(d.severity),
        d.verdict.id(),
        trim_num(d.window_s)
    );
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(out, "\nPath through the decision tree:");
    for node in &d.path {
        let answer = match node.answer {
            Answer::Yes => "yes",
            Answer::No => "no",
            Answer::Unknown => "unknown",
        };
        let _ = writeln!(out, "  {} -> {answer}", node.question);
        for e in &node.evidence {
            let _ = writeln!(out, "      {}", evidence_line(e));
        }
    }
    if d.findings.is_empty() {
        let _ = writeln!(out, "\nFindings: none");
    } else {
        let _ = writeln!(out, "\nFindings:");
    }
    for f in &d.findings {
        let _ = writeln!(
            out,
            "  [{}] {:?}{} (confidence {:.0}%)",
            severity_word(f.severity).to_lowercase(),
            f.rule,
            f.subject
                .as_deref()
                .map(|s| format!(" on {s}"))
                .unwrap_or_default(),
            f.confidence * 100.0
        );
        for e in &f.evidence {
            let _ = writeln!(out, "      evidence: {}", evidence_line(e));
        }
        for s in &f.suggestions {
            let _ = writeln!(out, "      -> {}", s.title);
            let _ = writeln!(out, "         why: {}", s.why);
            let _ = writeln!(out, "         expect: {}", s.effect);
            for l in s.how_to.lines() {
                let _ = writeln!(out, "         | {l}");
            }
        }
    }
    if !d.projections.is_empty() {
        let _ = writeln!(out, "\nProjections:");
        for p in &d.projections {
            let what = match p.kind {
                ProjectionKind::TimeToFullGpuMemory => "GPU memory full",
                ProjectionKind::TimeToFullDisk => "disk full",
            };
            let _ = writeln!(
                out,
                "  {}: {what} in {}",
                p.subject,
                duration_text(p.seconds)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_reads_like_a_sentence() {
        let e = Evidence {
            metric: "memory_used".into(),
            subject: Some("gpu 0".into()),
            value: Some(96.1),
            unit: "%".into(),
            threshold: Some(95.0),
            comparison: ">=".into(),
            window_s: 60.0,
            samples: Some((58, 60)),
            detail: None,
        };
        assert_eq!(
            evidence_line(&e),
            "gpu 0 memory_used 96.1 % >= 95 (58/60 samples, 60 s window)"
        );
        let missing = Evidence {
            value: None,
            samples: None,
            window_s: 0.0,
            ..e
        };
        assert_eq!(evidence_line(&missing), "gpu 0 memory_used (no data) >= 95");
    }

    #[test]
    fn durations_pick_a_unit() {
        assert_eq!(duration_text(42.0), "~42 s");
        assert_eq!(duration_text(720.0), "~12 min");
        assert_eq!(duration_text(3.5 * 3600.0), "~3.5 h");
        assert_eq!(duration_text(3.0 * 86400.0), "~3.0 d");
    }

    #[test]
    fn report_names_verdict_path_and_findings() {
        let d = shared::diagnosis::diagnose(&[], &Default::default(), None);
        let text = render(&d, "h", 0, &["line 3: bad".into()]);
        assert!(
            text.starts_with("vramio check: UNKNOWN - no_data (host h, 0 frames"),
            "{text}"
        );
        assert!(text.contains("note: line 3: bad"));
        assert!(text.contains("Path through the decision tree:"));
    }
}
