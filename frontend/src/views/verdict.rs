//! The verdict banner under the top bar: the current host's verdict in words, coloured by the
//! diagnosis' severity, with the flowchart's advice and the one-line reason
//! (`shared::diagnosis::words::reason_with_jobs`, naming the jobs it is about). Reads `Store::diagnosis`; `data-t-ms` names the
//! diagnosis shown (its newest frame's time).

use crate::diag::{local_tz, severity_attr};
use crate::format::DASH;
use crate::store::use_store;
use leptos::prelude::*;
use shared::diagnosis::words::{reason_with_jobs, verdict_text};
use shared::diagnosis::{Severity, Verdict, leaf_label};

#[component]
pub fn VerdictBanner() -> impl IntoView {
    let store = use_store();
    let d = store.diagnosis;
    let verdict = Memo::new(move |_| d.with(|d| d.as_ref().map(|d| d.verdict)));
    let severity =
        Memo::new(move |_| d.with(|d| d.as_ref().map_or(Severity::Unknown, |d| d.severity)));
    // Named with the jobs it is about, and their users where this viewer may see them.
    let why = Memo::new(move |_| {
        d.with(|d| {
            let d = d.as_ref()?;
            Some(store.latest.with(|f| {
                let jobs = f.as_ref().map_or(&[][..], |f| f.jobs.as_slice());
                reason_with_jobs(d, jobs, local_tz())
            }))
        })
    });
    let t_ms = Memo::new(move |_| d.with(|d| d.as_ref().and_then(|d| d.t_ms)));
    view! {
        <section
            class=move || format!("verdict-banner sev-{}", severity_attr(severity.get()))
            data-testid="verdict-banner"
            data-verdict=move || verdict.get().map(Verdict::id)
            data-severity=move || severity_attr(severity.get())
            data-t-ms=move || t_ms.get().map(|t| t.to_string())
            role="status"
            aria-live="polite"
        >
            <div class="verdict-main">
                <span class="verdict-dot" aria-hidden="true"></span>
                <strong class="verdict-words" data-testid="verdict-words">
                    {move || verdict.get().map_or("Waiting for the diagnosis…", verdict_text)}
                </strong>
                <span class="sev-badge">{move || severity_attr(severity.get())}</span>
                {move || {
                    verdict
                        .get()
                        .filter(|v| *v != Verdict::NoData)
                        .map(|v| view! { <span class="verdict-advice">"→ " {leaf_label(v)}</span> })
                }}
            </div>
            <p class="verdict-reason" data-testid="verdict-reason">
                {move || why.get().unwrap_or_else(|| DASH.to_owned())}
            </p>
        </section>
    }
}
