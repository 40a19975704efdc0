//! Cost of decoding one server message: the golden `frame`, `backfill` and `diagnosis` fixtures
//! (tests/fixtures/protocol) through `ServerMsg::from_json` (the two-pass decoder the browser
//! and a hub use) and through serde's derived decoder, which buffers the message first
//! (docs/performance.md#first-load).

use criterion::{Criterion, criterion_group, criterion_main};
use shared::ServerMsg;
use std::hint::black_box;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../tests/fixtures/protocol/server-{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn decode(c: &mut Criterion) {
    for name in ["frame", "backfill", "diagnosis"] {
        let text = fixture(name);
        c.bench_function(&format!("decode/{name}/from_json"), |b| {
            b.iter(|| ServerMsg::from_json(black_box(&text)).expect("decodes"))
        });
        c.bench_function(&format!("decode/{name}/derived"), |b| {
            b.iter(|| serde_json::from_str::<ServerMsg>(black_box(&text)).expect("decodes"))
        });
    }
}

criterion_group!(benches, decode);
criterion_main!(benches);
