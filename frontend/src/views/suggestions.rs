//! The findings panel: every finding of the current diagnosis (the verdict's first, then by
//! severity; order from `shared::diagnosis::words::order_findings`) with its evidence and suggestions, each
//! suggestion's main snippet in a code block with a Copy button, then its how-to as prose. Reads `Store::diagnosis`.

use super::copy::CopyButton;
use super::evidence::EvidenceList;
use crate::diag::text::{code_spans, first_code};
use crate::diag::{severity_attr, wire_id};
use crate::format::{DASH, pct};
use crate::store::use_store;
use leptos::html::Code;
use leptos::prelude::*;
use shared::diagnosis::words::{order_findings, rule_text};
use shared::diagnosis::{Finding, RuleId, Suggestion};
use shared::units::Percent;

/// A finding is the same finding from one diagnosis to the next when its rule and subject are.
type FindingKey = (RuleId, Option<String>);

/// A confidence (0..1) as a percentage; a dash when out of range.
pub fn confidence_text(c: f64) -> String {
    if (0.0..=1.0).contains(&c) {
        pct(Percent((c * 100.0).round()))
    } else {
        DASH.to_owned()
    }
}

#[component]
pub fn SuggestionsSection() -> impl IntoView {
    let store = use_store();
    let keys = Memo::new(move |_| {
        store.diagnosis.with(|d| {
            d.as_ref()
                .map(|d| {
                    order_findings(&d.findings, d.verdict)
                        .into_iter()
                        .map(|f| (f.rule, f.subject.clone()))
                        .collect::<Vec<FindingKey>>()
                })
                .unwrap_or_default()
        })
    });
    let have = move || store.diagnosis.with(Option::is_some);
    view! {
        <section class="section" aria-labelledby="findings-h">
            <h2 id="findings-h">"Findings and suggestions"</h2>
            <Show
                when=move || !keys.with(Vec::is_empty)
                fallback=move || {
                    view! {
                        <p class="empty">
                            {move || if have() { "No findings: nothing to change." } else { "Waiting for the diagnosis…" }}
                        </p>
                    }
                }
            >
                <div class="findings">
                    <For each=move || keys.get() key=|k| k.clone() children=move |k| view! { <FindingCard k /> } />
                </div>
            </Show>
        </section>
    }
}

#[component]
fn FindingCard(k: FindingKey) -> impl IntoView {
    let store = use_store();
    let key = k.clone();
    let finding = Memo::new(move |_| {
        store.diagnosis.with(|d| {
            d.as_ref().and_then(|d| {
                d.findings
                    .iter()
                    .find(|f| f.rule == key.0 && f.subject == key.1)
                    .cloned()
            })
        })
    });
    let severity = move || finding.with(|f| f.as_ref().map(|f| severity_attr(f.severity)));
    let text = move |f: fn(&Finding) -> String| {
        move || finding.with(|x| x.as_ref().map_or_else(|| DASH.to_owned(), f))
    };
    let evidence = move || {
        let ev = finding.with(|f| f.as_ref().map(|f| f.evidence.clone()).unwrap_or_default());
        view! { <EvidenceList evidence=ev /> }
    };
    let suggestions = Memo::new(move |_| {
        finding.with(|f| {
            f.as_ref()
                .map(|f| {
                    f.suggestions
                        .iter()
                        .map(|s| s.id)
                        .enumerate()
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    let (rule, subject) = k;
    view! {
        <article
            class=move || format!("finding card sev-{}", severity().unwrap_or("unknown"))
            data-testid="finding"
            data-rule=wire_id(&rule)
            data-severity=severity
        >
            <header class="finding-head">
                <span class="sev-badge">{severity}</span>
                <h3>{rule_text(rule)}</h3>
                {subject.map(|s| view! { <span class="finding-subject mono">{s}</span> })}
                <span class="confidence" title="How sure the rule is">
                    "confidence " {text(|f| confidence_text(f.confidence))}
                </span>
            </header>
            <details class="finding-evidence">
                <summary>"Evidence"</summary>
                {evidence}
            </details>
            <For
                each=move || suggestions.get()
                key=|s| *s
                children=move |(i, _)| {
                    let s = Memo::new(move |_| {
                        finding.with(|f| f.as_ref().and_then(|f| f.suggestions.get(i).cloned()))
                    });
                    move || s.get().map(|s| view! { <SuggestionItem s /> })
                }
            />
        </article>
    }
}

#[component]
fn SuggestionItem(s: Suggestion) -> impl IntoView {
    let code = NodeRef::<Code>::new();
    // The first code span is the snippet to copy; the whole how-to follows as prose with its
    // inline code (framework alternatives included).
    let snippet = first_code(s.how_to()).unwrap_or_else(|| s.how_to().to_owned());
    let copied = snippet.clone();
    let prose = code_spans(s.how_to())
        .into_iter()
        .map(|(is_code, text)| {
            if is_code {
                view! { <code>{text}</code> }.into_any()
            } else {
                text.into_any()
            }
        })
        .collect_view();
    let (title, effect) = (s.title(), s.effect());
    view! {
        <div class="suggestion" data-testid="suggestion" data-suggestion-id=wire_id(&s.id)>
            <h4>{title}</h4>
            <p class="why"><span class="k">"Why: "</span>{s.why}</p>
            <p class="effect"><span class="k">"Effect: "</span>{effect}</p>
            <div class="snippet">
                <pre><code node_ref=code>{snippet}</code></pre>
                <CopyButton text=copied code class="copy" testid="copy" />
            </div>
            <p class="how-to"><span class="k">"How: "</span>{prose}</p>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_is_a_percentage() {
        assert_eq!(confidence_text(0.966), "97%");
        assert_eq!(confidence_text(1.0), "100%");
        assert_eq!(confidence_text(0.0), "0%");
        assert_eq!(confidence_text(1.5), "—");
        assert_eq!(confidence_text(f64::NAN), "—");
    }
}
