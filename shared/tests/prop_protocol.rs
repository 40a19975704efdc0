//! Property tests of the `/ws` protocol: every server and client message, of every variant,
//! comes back equal from its JSON (`decode(encode(m)) == m`, with serde_json as on the wire).
//! Floats are finite (JSON has no NaN or infinity) and of the kind serde_json reads back bit for
//! bit ([`Floats::Exact`]); any other finite float comes back within a few ulps, with no field
//! lost or added.

mod strategies;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::Value;
use shared::diagnosis::{NODES, RuleId, Verdict};
use shared::{ClientMsg, ServerMsg, Source};
use std::collections::BTreeSet;
use strategies::wire::{client_msg, server_msg};
use strategies::{Floats, config, variants};

/// Chart figures as the wire carries them, on the 0.01 grid (see `prop_history`).
fn figure() -> BoxedStrategy<f64> {
    (-1_000_000_000i64..1_000_000_000)
        .prop_map(|c| c as f64 / 100.0)
        .boxed()
}

fn round_trip<T>(m: &T) -> Result<(), TestCaseError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_string(m).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: T =
        serde_json::from_str(&json).map_err(|e| TestCaseError::fail(format!("{e}: {json}")))?;
    prop_assert_eq!(&back, m, "{}", json);
    Ok(())
}

/// The `type` of every variant, from the message's JSON schema.
fn schema_types<T: schemars::JsonSchema>() -> BTreeSet<String> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let variants = schema
        .as_value()
        .get("oneOf")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    variants
        .iter()
        .filter_map(|v| v.pointer("/properties/type/const")?.as_str())
        .map(str::to_owned)
        .collect()
}

/// The `type` each strategy draws over 300 cases: a variant of 11 is missed with a chance below
/// 10^-11, and the runner is deterministic.
fn drawn_types<S>(s: S) -> BTreeSet<String>
where
    S: Strategy,
    S::Value: serde::Serialize,
{
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..300)
        .filter_map(|_| {
            let m = s.new_tree(&mut runner).ok()?.current();
            let v = serde_json::to_value(&m).ok()?;
            Some(v.get("type")?.as_str()?.to_owned())
        })
        .collect()
}

/// `ServerMsg::from_json` knows every `type` of the schema: none is refused as unknown, and the
/// error for an unknown one lists them all.
#[test]
fn from_json_knows_every_type_of_the_schema() {
    let types = schema_types::<ServerMsg>();
    assert!(types.len() >= 11, "{types:?}");
    for t in &types {
        let text = format!(r#"{{"type":"{t}"}}"#);
        if let Err(e) = ServerMsg::from_json(&text) {
            assert!(!e.to_string().contains("unknown variant"), "{t}: {e}");
        }
    }
    let err = ServerMsg::from_json(r#"{"type":"nope"}"#).expect_err("unknown");
    for t in &types {
        assert!(err.to_string().contains(&format!("`{t}`")), "{t}: {err}");
    }
}

#[test]
fn the_strategies_draw_every_variant() {
    let server = schema_types::<ServerMsg>();
    assert!(server.len() >= 11, "{server:?}");
    assert_eq!(drawn_types(server_msg(Floats::Exact, figure())), server);
    let client = schema_types::<ClientMsg>();
    assert!(client.len() >= 2, "{client:?}");
    assert_eq!(drawn_types(client_msg()), client);
}

/// `have` holds exactly the values of `want`, in any order (a schema lists documented variants
/// apart from the others).
fn same_set<T: PartialEq + std::fmt::Debug>(have: Vec<T>, want: &[T]) {
    assert!(
        have.len() == want.len() && want.iter().all(|w| have.contains(w)),
        "{have:?} against {want:?}"
    );
}

/// The enum lists the strategies draw from (read from the schemas) match the crate's own lists.
#[test]
fn the_enum_strategies_know_every_variant() {
    same_set(variants::<Verdict>(), &Verdict::ALL);
    same_set(variants::<RuleId>(), &RuleId::ALL);
    same_set(variants::<shared::diagnosis::NodeId>(), &NODES);
    same_set(variants::<Source>(), &Source::ALL);
}

/// How many representable f64 lie between `a` and `b` (both finite, or the same).
fn ulps(a: f64, b: f64) -> u64 {
    // Maps the floats onto the integers in order, -0.0 and 0.0 both to 0.
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    key(a).abs_diff(key(b))
}

/// `back` is `sent` with every float within 4 ulps: serde_json's parse is off by one or two at
/// most (see [`Floats::Exact`]); a field lost, added or changed shows.
fn close(sent: &Value, back: &Value, at: &str) -> Result<(), TestCaseError> {
    match (sent, back) {
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            prop_assert!(ulps(a, b) <= 4, "{}: {} came back as {}", at, a, b);
        }
        (Value::Array(a), Value::Array(b)) => {
            prop_assert_eq!(a.len(), b.len(), "{}", at);
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                close(x, y, &format!("{at}/{i}"))?;
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            prop_assert_eq!(keys(a), keys(b), "{}", at);
            for (k, x) in a {
                close(x, &b[k], &format!("{at}/{k}"))?;
            }
        }
        _ => prop_assert_eq!(sent, back, "{}", at),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(
        512,
        concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/prop_protocol.txt"),
    ))]

    #[test]
    fn server_messages_round_trip(m in server_msg(Floats::Exact, figure())) {
        round_trip(&m)?;
        // The decoder the page and a hub use reads what the server writes to the same message.
        let json = serde_json::to_string(&m).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = ServerMsg::from_json(&json)
            .map_err(|e| TestCaseError::fail(format!("from_json: {e}: {json}")))?;
        prop_assert_eq!(&back, &m, "{}", json);
    }

    #[test]
    fn client_messages_round_trip(m in client_msg()) {
        round_trip(&m)?;
    }

    /// Any finite float (subnormals, the extremes, 17 significant digits) comes back within a
    /// few ulps, and nothing else changes.
    #[test]
    fn server_messages_with_any_finite_float_round_trip_closely(
        m in server_msg(Floats::Finite, figure()),
    ) {
        let fail = |e: serde_json::Error| TestCaseError::fail(e.to_string());
        // Both sides as `Value`s made from the messages (no parsing, so no rounding).
        let sent = serde_json::to_value(&m).map_err(fail)?;
        let text = serde_json::to_string(&m).map_err(fail)?;
        let back: ServerMsg = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        let again = serde_json::to_value(&back).map_err(fail)?;
        close(&sent, &again, "")?;
    }
}
