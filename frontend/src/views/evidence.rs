//! Evidence lists: each item as one sentence (`shared::diagnosis::words::evidence_text`) with its
//! raw fields (metric, subject, value and unit, threshold, samples held of, window, hysteresis for
//! `held`, detail) below. Used by the tree's details panel and by the findings.

use crate::diag::{local_tz, wire_id};
use crate::format::DASH;
use leptos::prelude::*;
use shared::diagnosis::Evidence;
use shared::diagnosis::words::{
    Tz, duration_text, evidence_text, held_text, threshold_text, value_text,
};

/// The raw fields of one item as `(label, text)`, a dash for what is missing.
pub fn evidence_fields(e: &Evidence, tz: Tz) -> Vec<(&'static str, String)> {
    let dash = || DASH.to_owned();
    let held = match (&e.held, e.threshold) {
        (Some(h), Some(t)) => held_text(h, t.comparison, e.unit, tz),
        _ => dash(),
    };
    vec![
        ("metric", wire_id(&e.metric)),
        ("subject", e.subject.clone().unwrap_or_else(dash)),
        (
            "value",
            e.value.map_or_else(dash, |v| value_text(v, e.unit)),
        ),
        (
            "threshold",
            e.threshold.map_or_else(dash, |t| threshold_text(t, e.unit)),
        ),
        (
            "samples",
            e.samples
                .map_or_else(dash, |(held, of)| format!("{held} of {of}")),
        ),
        ("window", e.window_s.map_or_else(dash, duration_text)),
        // Labelled by what it is: its text already starts "held since".
        ("hysteresis", held),
        ("detail", e.detail.clone().unwrap_or_else(dash)),
    ]
}

#[component]
pub fn EvidenceList(evidence: Vec<Evidence>) -> impl IntoView {
    if evidence.is_empty() {
        return view! { <p class="empty">"No evidence recorded."</p> }.into_any();
    }
    let tz = local_tz();
    view! {
        <ul class="evidence-list">
            {evidence
                .into_iter()
                .map(|e| {
                    let metric = wire_id(&e.metric);
                    let fields = evidence_fields(&e, tz)
                        .into_iter()
                        .map(|(k, v)| view! { <div><dt>{k}</dt><dd>{v}</dd></div> })
                        .collect_view();
                    view! {
                        <li class="evidence" data-testid="evidence" data-metric=metric>
                            <div class="ev-sentence">{evidence_text(&e, tz)}</div>
                            <dl class="ev-fields">{fields}</dl>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::{Comparison, Held, Metric, Threshold};

    #[test]
    fn fields_show_every_part_and_dash_the_missing() {
        let mut e = Evidence::new(Metric::GpuMemoryUsed);
        e.subject = Some("gpu 0".into());
        e.value = Some(96.0);
        e.threshold = Some(Threshold {
            comparison: Comparison::Ge,
            value: 90.0,
        });
        e.window_s = Some(60.0);
        e.samples = Some((58, 60));
        let f = evidence_fields(&e, Tz::UTC);
        let get = |k: &str| f.iter().find(|(l, _)| *l == k).map(|(_, v)| v.clone());
        assert_eq!(get("metric").as_deref(), Some("gpu_memory_used"));
        assert_eq!(get("value").as_deref(), Some("96%"));
        assert_eq!(get("threshold").as_deref(), Some("≥ 90%"));
        assert_eq!(get("samples").as_deref(), Some("58 of 60"));
        assert_eq!(get("window").as_deref(), Some("60 s"));
        assert_eq!(get("hysteresis").as_deref(), Some("—"));
        assert_eq!(get("detail").as_deref(), Some("—"));
        e.held = Some(Held {
            since_ms: 1_764_504_200_000,
            entered_at: 90.0,
            clears_at: 85.0,
        });
        let f = evidence_fields(&e, Tz::UTC);
        let get = |k: &str| f.iter().find(|(l, _)| *l == k).map(|(_, v)| v.clone());
        assert_eq!(
            get("hysteresis").as_deref(),
            Some("held since 12:03 UTC, entered at 90%, clears below 85%")
        );
        let bare = Evidence::new(Metric::WriteRate);
        let f = evidence_fields(&bare, Tz::UTC);
        for k in [
            "subject",
            "value",
            "threshold",
            "samples",
            "window",
            "hysteresis",
        ] {
            assert_eq!(
                f.iter().find(|(l, _)| *l == k).map(|(_, v)| v.as_str()),
                Some("—"),
                "{k}"
            );
        }
    }
}
