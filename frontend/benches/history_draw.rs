//! The page's own work on a stored range, natively (docs/performance.md#history): a 7-day
//! answer of the charts' 72 series (8 GPUs' memory used and total and utilization, 16 disks'
//! reads, writes and utilization) at 1200 points each, decoded from its JSON, turned into each
//! chart's series and laid out as SVG paths. Run with `cargo bench -p frontend --bench
//! history_draw`; the wasm build in a browser is slower by a small factor.

use criterion::{Criterion, criterion_group, criterion_main};
use frontend::chart::geometry::layout_span;
use frontend::history::{Chart, series};
use shared::series::{Scope, Unit};
use shared::stored::{Answer, SeriesPoints};
use std::hint::black_box;
use std::time::Duration;

const POINTS: u64 = 1200;
const STEP_MS: u64 = 7 * 86_400_000 / POINTS;
const FROM_MS: u64 = 1_790_000_000_000;

/// A wandering value with noise, as the store's rolled-up points look.
fn wander(seed: u64, i: u64, scale: f64) -> (f64, f64, f64) {
    let x = (seed * 7919 + i * 104_729) % 1000;
    let mean = scale * (0.5 + 0.4 * ((i as f64 / 50.0 + seed as f64).sin())) + x as f64 / 1000.0;
    (mean * 0.8, mean, mean * 1.2 + 1.0 / 3.0)
}

fn one(scope: Scope, item: &str, metric: &str, unit: Unit, seed: u64, scale: f64) -> SeriesPoints {
    SeriesPoints {
        scope,
        item: item.to_owned(),
        metric: metric.to_owned(),
        unit,
        points: (0..POINTS)
            .map(|i| {
                let (lo, mean, hi) = wander(seed, i, scale);
                (FROM_MS + i * STEP_MS, lo, mean, hi)
            })
            .collect(),
    }
}

fn week() -> Answer {
    let mut series = Vec::new();
    for g in 0..8u64 {
        let item = g.to_string();
        series.push(one(
            Scope::Gpu,
            &item,
            "mem_used_bytes",
            Unit::Bytes,
            g,
            6.0e10,
        ));
        let total = (0..POINTS)
            .map(|i| (FROM_MS + i * STEP_MS, 8.5e10, 8.5e10, 8.5e10))
            .collect();
        series.push(SeriesPoints {
            scope: Scope::Gpu,
            item: item.clone(),
            metric: "mem_total_bytes".into(),
            unit: Unit::Bytes,
            points: total,
        });
        series.push(one(
            Scope::Gpu,
            &item,
            "util_pct",
            Unit::Percent,
            g + 100,
            80.0,
        ));
    }
    for d in 0..16u64 {
        let item = format!("nvme{d}n1");
        series.push(one(
            Scope::Disk,
            &item,
            "read_bytes_per_sec",
            Unit::BytesPerSec,
            d,
            5.0e8,
        ));
        series.push(one(
            Scope::Disk,
            &item,
            "write_bytes_per_sec",
            Unit::BytesPerSec,
            d + 50,
            2.0e8,
        ));
        series.push(one(
            Scope::Disk,
            &item,
            "util_pct",
            Unit::Percent,
            d + 200,
            60.0,
        ));
    }
    Answer {
        from_ms: FROM_MS,
        to_ms: FROM_MS + POINTS * STEP_MS,
        step_ms: STEP_MS,
        tiers: Vec::new(),
        series,
        segments: Vec::new(),
        events: Vec::new(),
        notices: Vec::new(),
    }
}

const CHARTS: [Chart; 5] = [
    Chart::GpuMemoryPct,
    Chart::GpuUtilPct,
    Chart::DiskReadMibS,
    Chart::DiskWriteMibS,
    Chart::DiskUtilPct,
];

fn history_draw(c: &mut Criterion) {
    let answer = week();
    let json = serde_json::to_string(&answer).expect("encode");
    println!(
        "history_draw: a 7-day answer of 72 series x {POINTS} points is {} bytes of JSON",
        json.len()
    );
    c.bench_function("history_7d_decode", |b| {
        b.iter(|| serde_json::from_str::<Answer>(black_box(&json)).expect("decode"))
    });
    c.bench_function("history_7d_series", |b| {
        b.iter(|| CHARTS.map(|chart| series(black_box(&answer), chart)))
    });
    let all = CHARTS.map(|chart| series(&answer, chart));
    let span = (answer.from_ms, answer.to_ms);
    c.bench_function("history_7d_layout", |b| {
        b.iter(|| {
            all.iter()
                .map(|s| layout_span(black_box(s), span, None, 3 * STEP_MS))
                .collect::<Vec<_>>()
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = history_draw
}
criterion_main!(benches);
