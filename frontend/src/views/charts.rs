//! The live charts: GPU memory and utilization per GPU, disk read, write and util per device, over
//! the last 15 minutes. Series come from the store's history through `series.rs`; drawing is the
//! generic `Chart`.

use crate::chart::{Chart, Series};
use crate::format::{axis_mib_s, axis_pct};
use crate::model::CHART_WINDOW_MS;
use crate::series::{DiskMetric, GpuMetric, disk_series, gpu_series};
use crate::store::{Store, max_gap_ms, use_store};
use leptos::prelude::*;

fn gpu(store: Store, metric: GpuMetric) -> Memo<Vec<Series>> {
    Memo::new(move |_| {
        store
            .with_history(|h| gpu_series(h, metric, CHART_WINDOW_MS))
            .unwrap_or_default()
    })
}

fn disk(store: Store, metric: DiskMetric) -> Memo<Vec<Series>> {
    Memo::new(move |_| {
        store
            .with_history(|h| disk_series(h, metric, CHART_WINDOW_MS))
            .unwrap_or_default()
    })
}

#[component]
pub fn ChartsSection() -> impl IntoView {
    let store = use_store();
    let gap = Signal::derive(move || max_gap_ms(store.interval_ms.get()));
    let gpu_mem = gpu(store, GpuMetric::MemoryPct);
    let gpu_util = gpu(store, GpuMetric::UtilPct);
    let read = disk(store, DiskMetric::ReadMibS);
    let write = disk(store, DiskMetric::WriteMibS);
    let util = disk(store, DiskMetric::UtilPct);
    view! {
        <section class="section" aria-labelledby="charts-h">
            <h2 id="charts-h">"Last 15 minutes"</h2>
            <div class="charts">
                <Show when=move || !gpu_mem.with(Vec::is_empty)>
                    <Chart
                        title="GPU memory used"
                        series=gpu_mem
                        y_format=axis_pct
                        y_max=100.0
                        window_ms=CHART_WINDOW_MS
                        max_gap_ms=gap
                    />
                    <Chart
                        title="GPU utilization"
                        series=gpu_util
                        y_format=axis_pct
                        y_max=100.0
                        window_ms=CHART_WINDOW_MS
                        max_gap_ms=gap
                    />
                </Show>
                <Chart
                    title="Disk read"
                    series=read
                    y_format=axis_mib_s
                    window_ms=CHART_WINDOW_MS
                    max_gap_ms=gap
                />
                <Chart
                    title="Disk write"
                    series=write
                    y_format=axis_mib_s
                    window_ms=CHART_WINDOW_MS
                    max_gap_ms=gap
                />
                <Chart
                    title="Disk utilization"
                    series=util
                    y_format=axis_pct
                    y_max=100.0
                    window_ms=CHART_WINDOW_MS
                    max_gap_ms=gap
                />
            </div>
        </section>
    }
}
