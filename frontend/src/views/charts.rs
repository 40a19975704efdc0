//! The charts: GPU memory and utilization per GPU, disk read, write and util per device. Live,
//! the last 15 minutes from the store's samples (`series.rs`); on a stored range, the history's
//! points with their min-to-max bands (`history.rs`). Dragging across a chart zooms to that
//! stretch; a click rewinds the page to that moment. A job's whole run (its row's link in the
//! Jobs table) adds its own series above them. Drawing is the generic `Chart`.

use crate::chart::{Chart, Series};
use crate::format::{axis_gib, axis_mib_s, axis_pct};
use crate::history::{self as hist, Range, use_history};
use crate::model::CHART_WINDOW_MS;
use crate::series::{DiskMetric, GpuMetric, disk_series, gpu_series};
use crate::store::{Store, max_gap_ms, use_store};
use crate::views::history::{HistoryStrip, RangeControl};
use leptos::prelude::*;

/// The series of one chart: live or stored, whichever the range says.
fn pick(
    store: Store,
    live: impl Fn(&shared::window::Ring<crate::model::Sample>) -> Vec<Series> + Send + Sync + 'static,
    stored: hist::Chart,
) -> Memo<Vec<Series>> {
    let history = use_history();
    Memo::new(move |_| {
        if history.range.get() == Range::Live {
            store.with_history(&live).unwrap_or_default()
        } else {
            history
                .answer
                .with(|a| a.as_ref().map(|a| hist::series(a, stored)))
                .unwrap_or_default()
        }
    })
}

#[component]
pub fn ChartsSection() -> impl IntoView {
    let store = use_store();
    let history = use_history();
    let live = move || history.range.get() == Range::Live;
    let gap = Signal::derive(move || {
        if live() {
            max_gap_ms(store.interval_ms.get())
        } else {
            history
                .answer
                .with(|a| a.as_ref().map_or(3000, |a| hist::gap_ms(a)))
        }
    });
    let span = Signal::derive(move || if live() { None } else { history.span.get() });
    let gpu_mem = pick(
        store,
        |h| gpu_series(h, GpuMetric::MemoryPct, CHART_WINDOW_MS),
        hist::Chart::GpuMemoryPct,
    );
    let gpu_util = pick(
        store,
        |h| gpu_series(h, GpuMetric::UtilPct, CHART_WINDOW_MS),
        hist::Chart::GpuUtilPct,
    );
    let read = pick(
        store,
        |h| disk_series(h, DiskMetric::ReadMibS, CHART_WINDOW_MS),
        hist::Chart::DiskReadMibS,
    );
    let write = pick(
        store,
        |h| disk_series(h, DiskMetric::WriteMibS, CHART_WINDOW_MS),
        hist::Chart::DiskWriteMibS,
    );
    let util = pick(
        store,
        |h| disk_series(h, DiskMetric::UtilPct, CHART_WINDOW_MS),
        hist::Chart::DiskUtilPct,
    );
    // A link that shows live data only neither zooms into nor rewinds to the stored history.
    let on_zoom = history.stored.then(|| {
        Callback::new(move |(a, b): (u64, u64)| {
            history.zoom(store.current_host.get_untracked(), Range::Between(a, b));
        })
    });
    let on_pick = history.stored.then(|| {
        Callback::new(move |t: u64| {
            hist::rewind(store, store.current_host.get_untracked(), t, history.error);
        })
    });
    let heading = move || {
        let tz = crate::diag::text::local_tz();
        match history.span.get().filter(|_| !live()) {
            Some((a, b)) => format!(
                "History: {} – {}",
                shared::diagnosis::words::day_clock_text(a, tz),
                shared::diagnosis::words::day_clock_text(b, tz)
            ),
            None => "Last 15 minutes".to_owned(),
        }
    };
    let chart = move |title: &'static str, series: Memo<Vec<Series>>, pct: bool| {
        view! {
            <Chart
                title=title
                series=series
                y_format=if pct { axis_pct } else { axis_mib_s }
                y_max=if pct { Some(100.0) } else { None }
                window_ms=CHART_WINDOW_MS
                max_gap_ms=gap
                span=span
                on_zoom=on_zoom
                on_pick=on_pick
            />
        }
    };
    let job_chart =
        move |title: &'static str, which: hist::JobChart, y_format: fn(f64) -> String| {
            let series = Memo::new(move |_| {
                let Some(job) = history.job.get() else {
                    return Vec::new();
                };
                history
                    .answer
                    .with(|a| a.as_ref().map(|a| hist::job_series(a, &job.key, which)))
                    .unwrap_or_default()
            });
            view! {
                <Show when=move || !series.with(Vec::is_empty)>
                    <Chart
                        title=title
                        series=series
                        y_format=y_format
                        y_max=(which == hist::JobChart::GpuUtilPct).then_some(100.0)
                        window_ms=CHART_WINDOW_MS
                        max_gap_ms=gap
                        span=span
                        on_zoom=on_zoom
                        on_pick=on_pick
                    />
                </Show>
            }
        };
    let job_run = move || {
        let job = history.job.get().filter(|_| !live())?;
        let none = history.answer.with(|a| {
            a.as_ref()
                .is_some_and(|a| !a.series.iter().any(|s| hist::of_job(&job.key, &s.item)))
        });
        Some(view! {
            <div class="job-run" data-testid="job-run" data-job=job.key.clone()>
                <h3>
                    {format!("The run of {}", job.label)}
                    " "
                    <button
                        type="button"
                        class="small"
                        data-testid="job-run-close"
                        on:click=move |_| history.job.set(None)
                    >
                        "hide"
                    </button>
                </h3>
                {none.then(|| view! { <p class="small">"Nothing of this job is stored in this range."</p> })}
                <div class="charts">
                    {job_chart("Its GPU memory", hist::JobChart::GpuMemoryGib, axis_gib)}
                    {job_chart("Its GPU utilization", hist::JobChart::GpuUtilPct, axis_pct)}
                    {job_chart("Its reads and writes", hist::JobChart::IoMibS, axis_mib_s)}
                    {job_chart("Its CPU (% of one core)", hist::JobChart::CpuPct, axis_pct)}
                </div>
            </div>
        })
    };
    view! {
        <section class="section" aria-labelledby="charts-h" data-testid="charts">
            <h2 id="charts-h">{heading}</h2>
            <RangeControl />
            <HistoryStrip />
            {job_run}
            <div class="charts">
                <Show when=move || !gpu_mem.with(Vec::is_empty)>
                    {chart("GPU memory used", gpu_mem, true)}
                    {chart("GPU utilization", gpu_util, true)}
                </Show>
                {chart("Disk read", read, false)}
                {chart("Disk write", write, false)}
                {chart("Disk utilization", util, true)}
            </div>
        </section>
    }
}
