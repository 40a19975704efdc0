//! Proptest strategies for the wire types, shared by the `prop_*` test binaries: numbers that
//! lean on the edges ([`float`], [`int`]), names drawn from small pools so duplicates happen,
//! every variant of a unit enum read from its JSON schema ([`one_of`]), and the test config.
//! `frame` builds frames and windows of them; `wire` the diagnosis, the samples and the messages.

#![allow(
    dead_code,
    reason = "each prop_* binary uses a different part of the strategies"
)]

pub mod frame;
pub mod wire;

use proptest::prelude::*;
use proptest::string::string_regex;
use proptest::test_runner::{FileFailurePersistence, RngAlgorithm};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;
use std::ops::Range;

pub const MIB: u64 = 1024 * 1024;
pub const GIB: u64 = 1024 * MIB;
pub const TIB: u64 = 1024 * GIB;
/// A plausible `t_ms` (November 2023), the base of generated clocks.
pub const T0_MS: u64 = 1_700_000_000_000;

/// `cases` cases, with failures kept in `file` (the default place is next to a `lib.rs`, which
/// `tests/` does not have). XorShift, not the default ChaCha: in a debug build the cipher took
/// a good share of the run, and these tests need no cryptographic randomness.
pub fn config(cases: u32, file: &'static str) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        rng_algorithm: RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    }
}

/// Which floats a strategy draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Floats {
    /// Anything, NaN and infinities included (what a sampler or an import could produce).
    Any,
    /// Any finite value: JSON has no NaN or infinity (serde_json writes them as `null`).
    Finite,
    /// Finite values serde_json reads back bit for bit. Without its `float_roundtrip` feature
    /// (not enabled here) it parses a number as `significand * 10^exponent` in f64 arithmetic,
    /// exact only while the significand, every written digit counted (`3670420539218090.0` has
    /// 17), fits in 53 bits and the power of ten is exact (up to 10^22); other values
    /// (`28.109456810344554`) come back an ulp or two off.
    Exact,
}

static FINITE_EDGES: [f64; 10] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f64::MIN_POSITIVE,
    f64::EPSILON,
    5e-324,
    f64::MAX,
    f64::MIN,
    // 2^53: above it not every integer is an f64.
    9_007_199_254_740_992.0,
];
/// Edges serde_json reads back exactly (`history.rs` tests `f64::MAX`).
static EXACT_EDGES: [f64; 6] = [0.0, -0.0, 1.0, -1.0, f64::MAX, f64::MIN];
static NON_FINITE: [f64; 3] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];

/// `v` to six decimals (integral from 10^9 on), which serde_json reads back exactly for the
/// typical ranges used here (below 10^14): the written form has at most 15 digits, a trailing
/// `.0` included, and no exponent below -6.
fn exact(v: f64) -> f64 {
    if v.abs() < 1e9 {
        (v * 1e6).round() / 1e6
    } else {
        v.round()
    }
}

/// Mostly `typical`, sometimes an edge (zero, the extremes, a subnormal) or any value of the
/// kind: with [`Floats::Any`] sometimes NaN or an infinity.
pub fn float(kind: Floats, typical: Range<f64>) -> BoxedStrategy<f64> {
    use proptest::num::f64 as F;
    if kind == Floats::Exact {
        // `m / 10^k` with `|m| < 10^14`, `k <= 15`: both exact, one rounding; written with at
        // most 14 digits (15 with an integer's `.0`) and an exponent of at least -15.
        let decimal = (-99_999_999_999_999i64..=99_999_999_999_999, 0i32..=15)
            .prop_map(|(m, k)| m as f64 / 10f64.powi(k));
        return prop_oneof![
            8 => typical.prop_map(exact),
            1 => proptest::sample::select(&EXACT_EDGES[..]),
            1 => decimal,
        ]
        .boxed();
    }
    let finite = prop_oneof![
        8 => typical,
        1 => proptest::sample::select(&FINITE_EDGES[..]),
        1 => F::POSITIVE | F::NEGATIVE | F::NORMAL | F::SUBNORMAL | F::ZERO,
    ];
    match kind {
        Floats::Any => prop_oneof![
            9 => finite,
            1 => proptest::sample::select(&NON_FINITE[..]),
        ]
        .boxed(),
        _ => finite.boxed(),
    }
}

static U64_EDGES: [u64; 5] = [0, 1, u64::MAX / 2, u64::MAX - 1, u64::MAX];

/// Mostly `typical`, sometimes an edge (0, 1, the middle, the top) or any value.
pub fn int(typical: Range<u64>) -> BoxedStrategy<u64> {
    prop_oneof![
        8 => typical,
        1 => proptest::sample::select(&U64_EDGES[..]),
        1 => any::<u64>(),
    ]
    .boxed()
}

/// [`int`] for `u32` fields.
pub fn int32(typical: Range<u32>) -> BoxedStrategy<u32> {
    prop_oneof![
        8 => typical,
        1 => Just(u32::MAX),
        1 => any::<u32>(),
    ]
    .boxed()
}

/// Present three times in four: absence is common, but the rules need data to run.
pub fn opt<S: Strategy>(s: S) -> impl Strategy<Value = Option<S::Value>> {
    proptest::option::weighted(0.75, s)
}

/// A name from `pool` (so two items often share one), else any printable text (multi-byte
/// characters included), else anything at all.
pub fn name(pool: &'static [&'static str]) -> BoxedStrategy<String> {
    // Compiled once here: a `&str` strategy compiles its regex for every value it draws.
    let regex = |r: &str| string_regex(r).unwrap_or_else(|e| panic!("{r}: {e}"));
    prop_oneof![
        6 => proptest::sample::select(pool).prop_map(str::to_owned),
        2 => regex("\\PC{0,16}"),
        1 => regex("(?s).{0,8}"),
    ]
    .boxed()
}

/// Every variant of a unit enum, read from its JSON schema (the `enum` list, or one `const` per
/// documented variant), so a variant added later is drawn without editing this file.
pub fn variants<T: JsonSchema + DeserializeOwned>() -> Vec<T> {
    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    match (k.as_str(), x) {
                        ("const", Value::String(s)) => out.push(s.clone()),
                        ("enum", Value::Array(items)) => {
                            out.extend(items.iter().filter_map(|i| i.as_str()).map(str::to_owned))
                        }
                        _ => strings(x, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
            _ => {}
        }
    }
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let mut names = Vec::new();
    strings(schema.as_value(), &mut names);
    let all: Vec<T> = names
        .into_iter()
        .filter_map(|n| serde_json::from_value(Value::String(n)).ok())
        .collect();
    assert!(
        !all.is_empty(),
        "no variant of {} in its schema",
        T::schema_name()
    );
    all
}

/// Any variant of a unit enum (see [`variants`]).
pub fn one_of<T>() -> BoxedStrategy<T>
where
    T: JsonSchema + DeserializeOwned + Clone + Debug + 'static,
{
    proptest::sample::select(variants::<T>()).boxed()
}
