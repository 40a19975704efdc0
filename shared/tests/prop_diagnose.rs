//! Property tests of the diagnosis: `diagnose` answers with a verdict, and never panics, for any
//! window of frames (absent fields, NaN and infinite floats, zero totals, counters going
//! backwards, empty or duplicate GPUs and disks, times out of order), with or without a previous
//! diagnosis; the words (`diagnosis::words`) and the summary render what it says, and whatever a
//! peer may send, without a panic.

mod strategies;

use proptest::prelude::*;
use shared::diagnosis::words::{self, Tz};
use shared::diagnosis::{Diagnosis, Evidence, Thresholds, Verdict, diagnose};
use shared::{Frame, HostState, HostSummary};
use strategies::frame::window;
use strategies::wire::diagnosis;
use strategies::{Floats, config};

/// Checks that `d` is a diagnosis of `frames`: a verdict with its path, `no_data` exactly with
/// the `no_data` verdict, the newest frame's time, and JSON a page can read back.
fn is_a_verdict(d: &Diagnosis, frames: &[Frame]) -> Result<(), TestCaseError> {
    prop_assert!(Verdict::ALL.contains(&d.verdict));
    prop_assert!(!d.path.is_empty(), "no path to {:?}", d.verdict);
    prop_assert_eq!(d.no_data.is_some(), d.verdict == Verdict::NoData);
    prop_assert_eq!(d.t_ms, frames.last().map(|f| f.t_ms));
    prop_assert_eq!(d.window_s.is_some(), !frames.is_empty());
    if let Some(w) = d.window_s {
        prop_assert!(w.is_finite() && w >= 0.0, "window_s {}", w);
    }
    // It reaches a page: JSON writes NaN and infinities as `null`, which a required number
    // refuses.
    let json = serde_json::to_string(d).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back = serde_json::from_str::<Diagnosis>(&json);
    prop_assert!(back.is_ok(), "{:?}: {}", back, json);
    Ok(())
}

/// Everything `words` can say about `d`, so a panic in any of it shows.
fn render(d: &Diagnosis, tz: Tz) -> Vec<String> {
    let mut out = vec![
        words::verdict_text(d.verdict).to_owned(),
        words::severity_text(d.severity).to_owned(),
        words::reason(d, tz),
    ];
    if let Some(e) = words::deciding_evidence(d) {
        out.push(words::evidence_text(e, tz));
    }
    if let Some(c) = &d.no_data {
        out.push(words::no_data_text(c));
    }
    if let Some(t) = d.t_ms {
        out.push(words::clock_text(t, tz));
    }
    if let Some(w) = d.window_s {
        out.push(words::duration_text(w));
    }
    let mut evidence: Vec<&Evidence> = Vec::new();
    for n in &d.path {
        out.push(words::answer_text(n.answer).to_owned());
        evidence.extend(&n.evidence);
    }
    for f in &d.findings {
        evidence.extend(&f.evidence);
    }
    for j in &d.jobs {
        out.push(words::verdict_text(j.verdict).to_owned());
        out.push(words::gpus_text(&j.gpus));
        for n in &j.path {
            evidence.extend(&n.evidence);
        }
        for f in &j.findings {
            evidence.extend(&f.evidence);
        }
    }
    out.extend(words::jobs_about(d, &[]));
    for e in evidence {
        out.push(words::evidence_text(e, tz));
        out.push(words::metric_text(e.metric).to_owned());
        if let Some(v) = e.value {
            out.push(words::value_text(v, e.unit));
        }
        if let Some(t) = e.threshold {
            out.push(words::threshold_text(t, e.unit));
            if let Some(h) = &e.held {
                out.push(words::held_text(h, t.comparison, e.unit, tz));
            }
        }
    }
    for f in words::order_findings(&d.findings, d.verdict) {
        out.push(words::rule_text(f.rule).to_owned());
        out.push(words::explains(d.verdict, f.rule).to_string());
        out.push(words::percent_text(f.confidence * 100.0));
        for s in &f.suggestions {
            out.extend([s.title(), s.how_to(), s.effect()].map(str::to_owned));
        }
    }
    for p in &d.projections {
        out.push(words::projection_text(p.kind, p.seconds));
        out.push(words::mib_per_sec_text(p.slope_per_s));
    }
    out
}

/// Any zone, including beyond the ±18 h the constructor clamps to.
fn tz() -> impl Strategy<Value = Tz> {
    prop_oneof![Just(Tz::UTC), any::<i32>().prop_map(Tz::east_of_utc)]
}

proptest! {
    #![proptest_config(config(
        256,
        concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/prop_diagnose.txt"),
    ))]

    /// Any window gets a verdict, and again with that diagnosis as the previous one (hysteresis)
    /// and on the window after it; what it says is rendered.
    #[test]
    fn any_window_gets_a_verdict(frames in window(30), next in window(8), tz in tz()) {
        let th = Thresholds::default();
        let d = diagnose(&frames, &th, None);
        is_a_verdict(&d, &frames)?;
        render(&d, tz);

        let held = diagnose(&frames, &th, Some(&d));
        is_a_verdict(&held, &frames)?;
        render(&held, tz);

        let later = diagnose(&next, &th, Some(&held));
        is_a_verdict(&later, &next)?;
        render(&later, tz);

        if let Some(newest) = frames.last() {
            let s = HostSummary::of(HostState::Up, newest, Some(&held), None);
            prop_assert_eq!(s.verdict, Some(held.verdict));
        }
    }

    /// The words render any diagnosis a peer could send (any shape, any float), not only those
    /// the rules make.
    #[test]
    fn the_words_render_any_diagnosis(d in diagnosis(Floats::Any), tz in tz()) {
        render(&d, tz);
    }
}
