//! Evidence lists: each item as one sentence with its raw fields (metric, subject, value and unit,
//! comparison and threshold, samples held of, window, detail) below. Used by the tree's details
//! panel and by the findings.

use crate::diag::text::{comparison_symbol, value_text};
use crate::diag::{duration_text, evidence_text};
use crate::format::DASH;
use leptos::prelude::*;
use shared::diagnosis::Evidence;

/// The raw fields of one item as `(label, text)`, a dash for what is missing.
pub fn evidence_fields(e: &Evidence) -> Vec<(&'static str, String)> {
    let value = |v: Option<f64>| v.map_or_else(|| DASH.to_owned(), |v| value_text(v, &e.unit));
    let threshold = match e.threshold {
        Some(t) if !e.comparison.is_empty() => {
            format!(
                "{} {}",
                comparison_symbol(&e.comparison),
                value_text(t, &e.unit)
            )
        }
        t => value(t),
    };
    vec![
        ("metric", e.metric.clone()),
        (
            "subject",
            e.subject.clone().unwrap_or_else(|| DASH.to_owned()),
        ),
        ("value", value(e.value)),
        ("threshold", threshold),
        (
            "samples",
            e.samples
                .map_or_else(|| DASH.to_owned(), |(held, of)| format!("{held} of {of}")),
        ),
        ("window", duration_text(e.window_s)),
        (
            "detail",
            e.detail.clone().unwrap_or_else(|| DASH.to_owned()),
        ),
    ]
}

#[component]
pub fn EvidenceList(evidence: Vec<Evidence>) -> impl IntoView {
    if evidence.is_empty() {
        return view! { <p class="empty">"No evidence recorded."</p> }.into_any();
    }
    view! {
        <ul class="evidence-list">
            {evidence
                .into_iter()
                .map(|e| {
                    let metric = e.metric.clone();
                    let fields = evidence_fields(&e)
                        .into_iter()
                        .map(|(k, v)| view! { <div><dt>{k}</dt><dd>{v}</dd></div> })
                        .collect_view();
                    view! {
                        <li class="evidence" data-testid="evidence" data-metric=metric>
                            <div class="ev-sentence">{evidence_text(&e)}</div>
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

    #[test]
    fn fields_show_every_part_and_dash_the_missing() {
        let e = Evidence {
            metric: "gpu_memory_used_pct".into(),
            subject: Some("gpu 0".into()),
            value: Some(96.0),
            unit: "%".into(),
            threshold: Some(90.0),
            comparison: ">=".into(),
            window_s: 60.0,
            samples: Some((58, 60)),
            detail: None,
        };
        let f = evidence_fields(&e);
        let get = |k: &str| f.iter().find(|(l, _)| *l == k).map(|(_, v)| v.as_str());
        assert_eq!(get("value"), Some("96%"));
        assert_eq!(get("threshold"), Some("≥ 90%"));
        assert_eq!(get("samples"), Some("58 of 60"));
        assert_eq!(get("window"), Some("60 s"));
        assert_eq!(get("detail"), Some("—"));
        let bare = Evidence {
            subject: None,
            value: None,
            threshold: None,
            comparison: String::new(),
            samples: None,
            ..e
        };
        let f = evidence_fields(&bare);
        let get = |k: &str| f.iter().find(|(l, _)| *l == k).map(|(_, v)| v.as_str());
        assert_eq!(get("subject"), Some("—"));
        assert_eq!(get("value"), Some("—"));
        assert_eq!(get("threshold"), Some("—"));
        assert_eq!(get("samples"), Some("—"));
    }
}
