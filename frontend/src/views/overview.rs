//! A hub's overview: a filter and one card per host, worst first, each linking to the host's
//! detail. Reads the store's summaries (every host `hello` named has one, maybe empty); the order and words come from
//! `crate::overview`.
//!
//! Redraws stay cheap with many hosts: the card list is keyed by name, so a summary moves or
//! updates its card in place; each card watches only its own host's summary signal (held by
//! identity, replaced only when it changed), and every figure on it is its own memo, text or
//! attribute.

use crate::diag::severity_attr;
use crate::format::DASH;
use crate::model::SummaryRef;
use crate::overview::{
    card_order, host_error, last_seen_text, state_attr, state_text, verdict_attr,
};
use crate::route::host_href;
use crate::store::use_store;
use leptos::prelude::*;
use shared::HostState;
use shared::diagnosis::ProjectionKind;
use shared::diagnosis::words::{projection_text, verdict_text};

#[component]
pub fn Overview(now: ReadSignal<f64>) -> impl IntoView {
    let store = use_store();
    let filter = RwSignal::new(String::new());
    // Every host `hello` named or a summary came for, in card order; recomputed per summary,
    // equal results (the usual case) notify nobody.
    let all = Memo::new(move |_| {
        store.with_summaries(|all| {
            let hosts = all.iter().map(|(n, s)| (*n, s.as_ref().map(|s| &*s.0)));
            (all.len(), filter.with(|f| card_order(hosts, f)))
        })
    });
    let order = Memo::new(move |_| all.with(|(_, order)| order.clone()));
    let count = move || {
        all.with(|(total, shown)| {
            if shown.len() == *total {
                format!("{total} hosts")
            } else {
                format!("{} of {total} hosts", shown.len())
            }
        })
    };
    view! {
        <section id="overview" class="overview" aria-label="All hosts">
            <div class="overview-head">
                <input
                    id="host-filter"
                    type="search"
                    placeholder="Filter hosts"
                    aria-label="Filter hosts by name or hostname"
                    autocomplete="off"
                    prop:value=move || filter.get()
                    on:input=move |e| filter.set(event_target_value(&e))
                />
                <span class="host-count" data-testid="host-count">{count}</span>
            </div>
            <div class="host-grid">
                <For each=move || order.get() key=String::clone let:name>
                    <HostCard name now />
                </For>
            </div>
        </section>
    }
}

#[component]
fn HostCard(name: String, now: ReadSignal<f64>) -> impl IntoView {
    let store = use_store();
    let key = name.clone();
    let name_for_strip = name.clone();
    let s: Memo<Option<SummaryRef>> = Memo::new(move |_| store.summary(&key));
    let state =
        Memo::new(move |_| s.with(|s| s.as_ref().map_or(HostState::Connecting, |s| s.state)));
    let severity = Memo::new(move |_| {
        s.with(|s| {
            s.as_ref()
                .and_then(|s| s.severity)
                .map_or("none", severity_attr)
        })
    });
    let gpus = Memo::new(move |_| s.with(|s| s.as_ref().map_or(0, |s| s.gpus.len())));
    // Memos, so the parts that rarely change are not rebuilt with every tick's summary.
    let hostname = Memo::new(move |_| s.with(|s| s.as_ref().and_then(|s| s.hostname.clone())));
    let seen = move || last_seen_text(s.with(|s| s.as_ref().and_then(|s| s.seen_ms)), now.get());
    let verdict = Memo::new(move |_| {
        s.with(|s| s.as_ref().and_then(|s| s.verdict))
            .map_or("No verdict yet", verdict_text)
    });
    let disk = Memo::new(move |_| {
        s.with(|s| {
            s.as_ref().and_then(|s| s.disk.as_ref()).map(|d| {
                let util = d
                    .util_pct
                    .map_or_else(|| DASH.to_owned(), |u| format!("{u}%"));
                (d.name.clone(), util)
            })
        })
    });
    let job = Memo::new(move |_| {
        s.with(|s| {
            s.as_ref()
                .and_then(|s| s.job.as_ref())
                .map(|j| format!("{}: {}", j.label, verdict_text(j.verdict)))
        })
    });
    let oom = Memo::new(move |_| s.with(|s| s.as_ref().and_then(|s| s.oom_s)));
    let full = Memo::new(move |_| s.with(|s| s.as_ref().and_then(|s| s.full_s)));
    let error =
        Memo::new(move |_| s.with(|s| s.as_ref().and_then(|s| host_error(s).map(str::to_owned))));
    view! {
        <a
            class=move || format!("host-card state-{}", state_attr(state.get()))
            data-testid="host-card"
            data-host=name.clone()
            data-state=move || state_attr(state.get())
            data-verdict=move || s.with(|s| verdict_attr(s.as_ref().map(|s| &*s.0)))
            data-severity=severity
            href=host_href(&name)
        >
            <div class="host-card-head">
                <strong class="host-card-name">{name.clone()}</strong>
                {move || hostname.get().map(|h| view! { <span class="host-card-hostname">{h}</span> })}
            </div>
            <div class="host-card-status">
                <span class="host-state">{move || state_text(state.get())}</span>
                <span class="host-seen" data-testid="host-seen">{seen}</span>
            </div>
            <p class=move || format!("host-card-verdict sev-{}", severity.get()) data-testid="host-verdict">
                {move || verdict.get()}
            </p>
            {move || (gpus.get() > 0).then(|| view! {
                <ul class="host-gpus">
                    <For each=move || 0..gpus.get() key=|i| *i let:i>
                        <GpuLine s i />
                    </For>
                </ul>
            })}
            {move || disk.get().map(|(name, util)| view! {
                <p class="host-disk" data-testid="host-disk">
                    "disk " <span class="host-disk-name">{name}</span> " " {util} " busy"
                </p>
            })}
            {move || job.get().map(|j| view! {
                <p class="host-job" data-testid="host-job">{j}</p>
            })}
            {move || oom.get().map(|v| view! {
                <p class="host-proj" data-testid="host-oom">
                    {format!("GPU {}", projection_text(ProjectionKind::TimeToFullGpuMemory, v as f64))}
                </p>
            })}
            {move || full.get().map(|v| view! {
                <p class="host-proj" data-testid="host-full">
                    {format!("disk {}", projection_text(ProjectionKind::TimeToFullDisk, v as f64))}
                </p>
            })}
            {move || error.get().map(|e| view! { <p class="host-error" data-testid="host-error">{e}</p> })}
            {crate::history::use_history().stored.then(|| view! { <DayStrip name=name_for_strip /> })}
        </a>
    }
}

/// The last 24 h of a host's verdict, from its history (asked of the peer by the hub), every
/// half minute (the hub keeps each answer 30 s); nothing while the peer keeps none or cannot
/// answer.
#[component]
fn DayStrip(name: String) -> impl IntoView {
    let segments = RwSignal::new(None::<(u64, u64, Vec<shared::replay::Segment>)>);
    let fetch = {
        let name = name.clone();
        move || {
            let name = name.clone();
            leptos::task::spawn_local(async move {
                let to = crate::history::now_ms();
                let from = to.saturating_sub(86_400_000);
                // `only=` with nothing: the segments alone.
                if let Ok(a) = crate::api::history(Some(&name), from, to, 1, "", None).await {
                    segments.set(Some((from, to, crate::history::timeline(&a))));
                }
            });
        }
    };
    fetch();
    if let Ok(handle) = set_interval_with_handle(fetch, std::time::Duration::from_secs(30)) {
        on_cleanup(move || handle.clear());
    }
    move || {
        let (from, to, segs) = segments.get()?;
        (!segs.is_empty()).then(|| {
            let drawn = crate::views::replay::layout(from, to, &segs)
                .into_iter()
                .map(|d| {
                    view! {
                        <span
                            class=d.class
                            style=format!("left:{:.3}%;width:{:.3}%", d.left_pct, d.width_pct)
                            title=d.title
                        ></span>
                    }
                })
                .collect_view();
            view! {
                <div class="replay-timeline day-strip" data-testid="day-strip" title="the verdict over the last 24 h">
                    {drawn}
                </div>
            }
        })
    }
}

/// One GPU of a card: its memory bar and figures, and its utilization.
#[component]
fn GpuLine(s: Memo<Option<SummaryRef>>, i: usize) -> impl IntoView {
    let brief = Memo::new(move |_| s.with(|s| s.as_ref().and_then(|s| s.gpus.get(i).cloned())));
    let mem = Memo::new(move |_| brief.with(|b| b.as_ref().and_then(|b| b.mem_pct)));
    let util = Memo::new(move |_| brief.with(|b| b.as_ref().and_then(|b| b.util_pct)));
    let pct = |p: Option<u8>| p.map_or_else(|| DASH.to_owned(), |p| format!("{p}%"));
    view! {
        <li class="host-gpu" data-testid="host-gpu" data-m=move || mem.get().map(|m| m.to_string())
            data-u=move || util.get().map(|u| u.to_string())>
            <span class="host-gpu-index">{format!("GPU {i}")}</span>
            <div class="bar" title="memory used">
                <div class="bar-fill" style:width=move || format!("{}%", mem.get().unwrap_or(0))></div>
            </div>
            <span class="host-gpu-figures">
                "mem " {move || pct(mem.get())} " · util " {move || pct(util.get())}
            </span>
        </li>
    }
}
