//! The history on the page (docs/history.md#on-the-page): the range control above the charts
//! (live, 1 h to 30 d), the verdict timeline over a stored range, the export links, and the bar
//! that says the page shows a stored moment, with the way back to live.

use crate::history::{RANGES, Range, rewind, timeline, use_history};
use crate::store::use_store;
use crate::views::replay::layout;
use leptos::prelude::*;
use shared::diagnosis::words::{clock_text, day_clock_text};

/// `live`, `1 h` ... `30 d`, each a button; the pressed one is the range shown.
#[component]
pub fn RangeControl() -> impl IntoView {
    let store = use_store();
    let history = use_history();
    if !history.stored {
        return view! {
            <p class="small muted" data-testid="live-only">
                "This link shows live data only: no stored history."
            </p>
        }
        .into_any();
    }
    let pick = move |range: Range| history.show(store.current_host.get_untracked(), range);
    let pressed = move |r: Range| {
        move || {
            if history.range.get() == r {
                "true"
            } else {
                "false"
            }
        }
    };
    view! {
        <div class="range-control" role="group" aria-label="time range of the charts">
            <button
                type="button"
                data-testid="range-live"
                aria-pressed=pressed(Range::Live)
                on:click=move |_| pick(Range::Live)
            >
                "live"
            </button>
            {RANGES
                .into_iter()
                .map(|(label, ms)| {
                    view! {
                        <button
                            type="button"
                            data-testid=format!("range-{}", label.replace(' ', ""))
                            aria-pressed=pressed(Range::Last(ms))
                            on:click=move |_| pick(Range::Last(ms))
                        >
                            {label}
                        </button>
                    }
                })
                .collect_view()}
            <Show when=move || matches!(history.range.get(), Range::Between(..))>
                <button type="button" aria-pressed="true" data-testid="range-zoomed">
                    "zoomed"
                </button>
            </Show>
            <Show when=move || history.loading.get()>
                <span class="small" data-testid="range-loading">"loading…"</span>
            </Show>
        </div>
    }
    .into_any()
}

/// Under the control on a stored range: the verdict over it (click a stretch to rewind to where
/// it began), what resolution it was kept at, the history's own notices, and the export links.
#[component]
pub fn HistoryStrip() -> impl IntoView {
    let store = use_store();
    let history = use_history();
    move || {
        let (from, to) = history.span.get()?;
        if history.range.get() == Range::Live {
            return None;
        }
        let answer = history.answer.get()?;
        let segs = timeline(&answer);
        let host = store.current_host.get_untracked();
        let drawn = layout(from, to, &segs)
            .into_iter()
            .zip(segs)
            .map(|(d, seg)| {
                let host = host.clone();
                view! {
                    <span
                        class=d.class
                        data-from=seg.from_ms.to_string()
                        style=format!("left:{:.3}%;width:{:.3}%", d.left_pct, d.width_pct)
                        title=format!("{} — click to see the page then", d.title)
                        on:click=move |_| rewind(store, host.clone(), seg.from_ms, history.error)
                    ></span>
                }
            })
            .collect_view();
        // Said only where a tier coarser than the points drawn really gave points (not a span
        // it merely covers; not the hours a month is asked in).
        let coarse: Vec<_> = answer
            .tiers
            .iter()
            .filter(|p| p.step_ms >= 60_000 && p.step_ms > answer.step_ms)
            .filter(|p| {
                answer
                    .series
                    .iter()
                    .any(|s| s.points.iter().any(|q| q.0 >= p.from_ms && q.0 < p.to_ms))
            })
            .collect();
        let tiers_note = (!coarse.is_empty()).then(|| {
            let minutes = coarse.iter().any(|p| p.step_ms == 60_000);
            let text = if minutes {
                "Minute data where seconds are no longer kept (1 s points are kept 48 h)."
            } else {
                "Hour data where minutes are no longer kept (1 min points are kept 30 days)."
            };
            view! { <p class="small history-tiers" data-testid="history-tiers">{text}</p> }
        });
        let notices = answer
            .notices
            .iter()
            .map(|n| view! { <p class="notice" data-testid="history-notice">{n.clone()}</p> })
            .collect_view();
        let csv = crate::api::export_href(host.as_deref(), from, to, "csv");
        let ndjson = crate::api::export_href(host.as_deref(), from, to, "ndjson");
        Some(view! {
            <div class="history-strip">
                {notices}
                <div
                    class="replay-timeline history-timeline"
                    data-testid="history-timeline"
                    title="the verdict over the range"
                >
                    {drawn}
                </div>
                {tiers_note}
                <p class="small history-export">
                    "Export this range: "
                    <a href=csv download="">"CSV"</a>
                    " · "
                    <a href=ndjson download="" title="frames that vramio replay and check --from read">
                        "NDJSON"
                    </a>
                </p>
            </div>
        })
    }
}

/// While the page shows a stored moment: when, at what resolution, and back to live.
#[component]
pub fn RewindBar() -> impl IntoView {
    let store = use_store();
    let history = use_history();
    let error = move || {
        history
            .error
            .get()
            .map(|e| view! { <p class="notice" data-testid="history-error">{e}</p> })
    };
    let bar = move || {
        let r = store.rewound().get()?;
        let tz = crate::diag::text::local_tz();
        let day = day_clock_text(r.t_ms, tz);
        let secs = clock_text(r.t_ms, tz);
        let resolution = match r.step_ms {
            0..=1000 => "1 s data",
            1001..=60_000 => "minute data: each figure is the mean of its minute",
            _ => "hour data: each figure is the mean of its hour",
        };
        Some(view! {
            <section class="rewind-bar" data-testid="rewind-bar" data-t=r.t_ms.to_string()>
                <strong>"Rewound"</strong>
                <span title=secs>{format!("to {day}")}</span>
                <span data-testid="rewind-resolution">{resolution}</span>
                <span>"The cards, tree, evidence and suggestions show that moment."</span>
                <button type="button" data-testid="back-to-live" on:click=move |_| store.rewind(None)>
                    "Back to live"
                </button>
            </section>
        })
    };
    view! {
        {error}
        {bar}
    }
}
