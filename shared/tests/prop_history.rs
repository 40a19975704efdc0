//! Property tests of the chart samples' wire form (`history::Sample`): a sample whose figures are
//! on the 0.01 grid comes back equal from its JSON; any other keeps every finite figure (rounded
//! to 0.01), loses only NaN and infinities, and reads back to the same JSON; the sample of any
//! frame encodes and decodes.

mod strategies;

use proptest::prelude::*;
use shared::history::Sample;
use strategies::frame::frame;
use strategies::wire::sample;
use strategies::{Floats, config, float};

fn encode(s: &Sample) -> Result<String, TestCaseError> {
    serde_json::to_string(s).map_err(|e| TestCaseError::fail(e.to_string()))
}

fn decode(json: &str) -> Result<Sample, TestCaseError> {
    serde_json::from_str(json).map_err(|e| TestCaseError::fail(format!("{e}: {json}")))
}

/// Figures on the 0.01 grid, which the wire's rounding leaves as they are: for `|c| <= 10^15`
/// (exact in an f64), `c / 100.0` times 100 is within 0.25 of `c` and rounds back to it.
fn on_grid() -> BoxedStrategy<f64> {
    prop_oneof![
        4 => (-10_000i64..=10_000).prop_map(|c| c as f64 / 100.0),
        1 => (-1_000_000_000_000_000i64..=1_000_000_000_000_000).prop_map(|c| c as f64 / 100.0),
    ]
    .boxed()
}

/// Every figure of `s` in order, GPUs then disks.
fn figures(s: &Sample) -> Vec<Option<f64>> {
    let mut out = Vec::new();
    for g in &s.gpus {
        out.extend([g.mem_pct, g.util_pct]);
    }
    for d in &s.disks {
        out.extend([d.read_mib_s, d.write_mib_s, d.util_pct]);
    }
    out
}

proptest! {
    #![proptest_config(config(
        1024,
        concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/prop_history.txt"),
    ))]

    #[test]
    fn samples_on_the_grid_round_trip(s in sample(on_grid())) {
        let back = decode(&encode(&s)?)?;
        prop_assert_eq!(back, s);
    }

    /// Any figure: present exactly when finite, within half a hundredth of what was sampled;
    /// and (for figures the wire rounds) a second trip through the wire changes nothing.
    #[test]
    fn any_sample_keeps_its_finite_figures(s in sample(float(Floats::Any, -1e6..1e6))) {
        let json = encode(&s)?;
        let back = decode(&json)?;
        prop_assert_eq!((back.seq, back.t_ms), (s.seq, s.t_ms));
        prop_assert_eq!(back.gpus.len(), s.gpus.len());
        prop_assert_eq!(back.disks.len(), s.disks.len());
        for (g, h) in s.gpus.iter().zip(&back.gpus) {
            prop_assert_eq!(g.index, h.index);
        }
        for (d, e) in s.disks.iter().zip(&back.disks) {
            prop_assert_eq!(&d.name, &e.name);
        }
        for (sent, got) in figures(&s).into_iter().zip(figures(&back)) {
            match (sent.filter(|v| v.is_finite()), got) {
                (None, None) => {}
                (Some(v), Some(w)) => prop_assert!(
                    (v - w).abs() <= 0.005 + 4.0 * v.abs() * f64::EPSILON,
                    "{} came back as {}", v, w
                ),
                (v, w) => prop_assert!(false, "{:?} came back as {:?}: {}", v, w, json),
            }
        }
        // Below 10^13 the wire rounds to hundredths, which serde_json reads back exactly; above
        // it a figure is sent as it is, and read back within an ulp or two (see
        // `strategies::Floats::Exact`).
        if figures(&s).into_iter().flatten().all(|v| v.abs() < 1e13) {
            prop_assert_eq!(encode(&back)?, json);
        }
    }

}

proptest! {
    // Fewer cases: a whole frame costs far more to draw than a sample.
    #![proptest_config(config(
        256,
        concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/prop_history.txt"),
    ))]

    /// The sample of any frame (NaN, infinities, zero totals) encodes and decodes.
    #[test]
    fn the_sample_of_any_frame_goes_on_the_wire(f in frame(Floats::Any)) {
        let s = Sample::of(&f);
        let back = decode(&encode(&s)?)?;
        prop_assert_eq!(back.gpus.len(), f.gpus.len());
        prop_assert_eq!(back.disks.len(), f.block_devices.len());
    }
}
