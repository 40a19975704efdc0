//! Cost of laying out one chart as the page draws it: 16 series of 900 points (15 minutes at
//! 1 Hz) into SVG paths (docs/architecture.md#8-performance-targets: a redraw within 8 ms a frame). Run natively with
//! `cargo bench -p frontend`; the wasm build in a browser is slower by a small factor.

use criterion::{Criterion, criterion_group, criterion_main};
use frontend::chart::geometry::{Series, layout};
use std::hint::black_box;
use std::time::Duration;

fn sixteen_series() -> Vec<Series> {
    (0..16u64)
        .map(|k| Series {
            label: format!("s{k}"),
            color: "red".into(),
            points: (0..900u64)
                .map(|i| (i * 1000, Some((i + k) as f64 % 100.0)))
                .collect(),
            band: Vec::new(),
        })
        .collect()
}

fn chart_layout(c: &mut Criterion) {
    let all = sixteen_series();
    c.bench_function("chart_layout_16x900", |b| {
        b.iter(|| layout(black_box(&all), 900_000, Some(100.0), 5000))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = chart_layout
}
criterion_main!(benches);
