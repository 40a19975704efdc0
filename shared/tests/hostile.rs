//! A hostile recording: every numeric field of a frame at `u64::MAX`, `u32::MAX`, zero or the f64
//! extremes, `t_ms` jumping backwards, `interval_ms` 0 and `u64::MAX`. The diagnosis takes such a
//! window without a panic (debug builds check every overflow) and answers with a verdict.
//!
//! The frames are made here from the golden frame (`tests/fixtures/protocol/server-frame.json`) and
//! written to `tests/fixtures/recordings/hostile.ndjson`, which the backend's `check --from` test
//! feeds to the binary. The test fails when the file differs from what this code makes; regenerate
//! with `VRAMIO_BLESS=1 cargo test -p shared --test hostile`.

use serde_json::{Map, Value};
use shared::diagnosis::{Diagnosis, Thresholds, diagnose};
use shared::{Bytes, Frame};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// Fields that are `u32` in a frame (larger values would not parse at all).
const U32_FIELDS: &[&str] = &[
    "index",
    "pid",
    "cpu_count",
    "gpu_pids",
    "workers",
    "unreadable",
];

/// How a variant sets numbers: integers (by field name) and floats.
struct Variant {
    int: fn(&str) -> u64,
    float: f64,
}

fn max_int(field: &str) -> u64 {
    if U32_FIELDS.contains(&field) {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    }
}

const VARIANTS: &[Variant] = &[
    Variant {
        int: max_int,
        float: f64::MAX,
    },
    Variant {
        int: max_int,
        float: -f64::MAX,
    },
    Variant {
        int: |_| 0,
        float: f64::MAX,
    },
    Variant {
        int: |_| 0,
        float: 0.0,
    },
    Variant {
        int: |_| 1,
        float: f64::MIN_POSITIVE,
    },
    Variant {
        int: max_int,
        float: -0.0,
    },
];

/// Sets every number under `v` as `variant` says.
fn bend(v: &mut Value, field: &str, variant: &Variant) {
    match v {
        Value::Number(n) if n.is_f64() => *v = Value::from(variant.float),
        Value::Number(_) => *v = Value::from((variant.int)(field)),
        Value::Array(items) => items.iter_mut().for_each(|i| bend(i, field, variant)),
        Value::Object(map) => map.iter_mut().for_each(|(k, i)| bend(i, k, variant)),
        _ => {}
    }
}

fn template() -> Map<String, Value> {
    let text = std::fs::read_to_string(fixtures().join("protocol/server-frame.json"))
        .expect("golden frame fixture");
    let msg: Value = serde_json::from_str(&text).expect("fixture json");
    match msg.get("frame") {
        Some(Value::Object(frame)) => frame.clone(),
        other => panic!("no frame object in the fixture: {other:?}"),
    }
}

/// Time and interval per line: backwards jumps, both ends of the range, repeats.
const CLOCK: &[(u64, u64)] = &[
    (u64::MAX, u64::MAX),
    (0, 0),
    (u64::MAX - 1, 0),
    (1, u64::MAX),
    (u64::MAX / 2, 1000),
    (u64::MAX / 2, 1000),
    (1_764_500_000_000, u64::MAX),
    (1_764_499_999_000, 0),
    (u64::MAX, 1),
    (0, u64::MAX),
    (u64::MAX, u64::MAX),
    (u64::MAX / 2 + 1, 1000),
];

/// The hostile frames, in file order (not sorted by time).
fn hostile_frames() -> Vec<Frame> {
    let base = template();
    let mut frames = Vec::new();
    for (i, (t_ms, interval_ms)) in CLOCK.iter().enumerate() {
        let mut frame = base.clone();
        let mut body = Value::Object(frame.clone());
        bend(&mut body, "", &VARIANTS[i % VARIANTS.len()]);
        if let Value::Object(bent) = body {
            frame = bent;
        }
        frame.insert("seq".into(), Value::from(u64::MAX - i as u64));
        frame.insert("t_ms".into(), Value::from(*t_ms));
        frame.insert("interval_ms".into(), Value::from(*interval_ms));
        let frame: Frame = serde_json::from_value(Value::Object(frame)).expect("still a frame");
        frames.push(frame);
    }
    frames
}

fn ndjson(frames: &[Frame]) -> String {
    let mut out = String::new();
    for f in frames {
        out.push_str(&serde_json::to_string(f).expect("encodes"));
        out.push('\n');
    }
    out
}

/// The diagnosis reaches a page intact: JSON turns a NaN or an infinity into `null`, which a
/// required number then refuses.
fn round_trips(d: &Diagnosis) {
    let json = serde_json::to_string(d).expect("the diagnosis encodes");
    let back: Result<Diagnosis, _> = serde_json::from_str(&json);
    assert!(back.is_ok(), "{back:?}: {json}");
}

#[test]
fn the_fixture_is_what_this_test_makes() {
    let path = fixtures().join("recordings/hostile.ndjson");
    let want = ndjson(&hostile_frames());
    if std::env::var_os("VRAMIO_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, &want).expect("write fixture");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale: regenerate with VRAMIO_BLESS=1 cargo test -p shared --test hostile",
        path.display()
    );
}

#[test]
fn a_hostile_window_is_diagnosed_without_a_panic() {
    let frames = hostile_frames();
    let th = Thresholds::default();
    // Every window (each start, each end) and each with the previous diagnosis as hysteresis.
    for start in 0..frames.len() {
        let mut prev = None;
        for end in start + 1..=frames.len() {
            let d = diagnose(&frames[start..end], &th, prev.as_ref());
            assert!(
                d.window_s.is_some_and(|w| w.is_finite() && w >= 0.0),
                "window {start}..{end}: {:?}",
                d.window_s
            );
            round_trips(&d);
            prev = Some(d);
        }
    }
    // Sorted by time, as `check --from` reads them.
    let mut sorted = frames.clone();
    sorted.sort_by_key(|f| (f.t_ms, f.seq));
    round_trips(&diagnose(&sorted, &th, None));
}

#[test]
fn one_hostile_frame_among_sane_ones_is_diagnosed() {
    let sane: Frame = serde_json::from_value(Value::Object(template())).expect("golden frame");
    for hostile in hostile_frames() {
        let mut window = Vec::new();
        for k in 0..10u64 {
            let mut f = sane.clone();
            f.t_ms += k * 1000;
            f.seq += k;
            window.push(f);
        }
        window.insert(5, hostile);
        round_trips(&diagnose(&window, &Thresholds::default(), None));
    }
}

/// Values that climb to the extremes in even steps: every trend fit, projection and N-of-M tally
/// runs on numbers near the ends of their ranges.
#[test]
fn series_rising_to_the_extremes_are_diagnosed() {
    let sane: Frame = serde_json::from_value(Value::Object(template())).expect("golden frame");
    for (int_top, float_top) in [
        (u64::MAX, f64::MAX),
        (u64::MAX, -f64::MAX),
        (u64::MAX / 3, f64::MAX / 3.0),
    ] {
        let steps = 40u64;
        let window: Vec<Frame> = (0..steps)
            .map(|k| {
                let mut body = Value::Object(template());
                let int = (int_top / steps).saturating_mul(k + 1);
                let float = float_top / steps as f64 * (k + 1) as f64;
                bend_to(&mut body, "", int, float);
                let mut f: Frame = serde_json::from_value(body).expect("still a frame");
                f.t_ms = sane.t_ms + k * 1000;
                f.seq = sane.seq + k;
                f.interval_ms = 1000;
                if let Some(m) = f.mounts.first_mut() {
                    // Free space falls as used space climbs, as on a filling disk.
                    m.available_bytes = Some(Bytes(u64::MAX - m.used_bytes.map_or(0, |b| b.0)));
                }
                f
            })
            .collect();
        let d = diagnose(&window, &Thresholds::default(), None);
        round_trips(&d);
        let again = diagnose(&window, &Thresholds::default(), Some(&d));
        round_trips(&again);
    }
}

/// Sets every integer to `int` (capped for `u32` fields) and every float to `float`.
fn bend_to(v: &mut Value, field: &str, int: u64, float: f64) {
    match v {
        Value::Number(n) if n.is_f64() => *v = Value::from(float),
        Value::Number(_) if U32_FIELDS.contains(&field) => {
            *v = Value::from(int.min(u64::from(u32::MAX)))
        }
        Value::Number(_) => *v = Value::from(int),
        Value::Array(items) => items.iter_mut().for_each(|i| bend_to(i, field, int, float)),
        Value::Object(map) => map.iter_mut().for_each(|(k, i)| bend_to(i, k, int, float)),
        _ => {}
    }
}
