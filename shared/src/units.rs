//! Unit newtypes: every number on the wire says what it measures. Each serializes as a bare number.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A size in bytes.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// A throughput in bytes per second.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct BytesPerSec(pub f64);

/// A percentage, 0 to 100 (not a 0..1 fraction).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct Percent(pub f64);

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

impl Bytes {
    pub const fn from_mib(mib: u64) -> Self {
        Bytes(mib * 1024 * 1024)
    }
    pub fn as_mib(self) -> f64 {
        self.0 as f64 / MIB
    }
    pub fn as_gib(self) -> f64 {
        self.0 as f64 / GIB
    }
    /// `self` as a percentage of `total`; `None` when `total` is zero (nothing to be a share of).
    pub fn percent_of(self, total: Bytes) -> Option<Percent> {
        (total.0 > 0).then(|| Percent(self.0 as f64 * 100.0 / total.0 as f64))
    }
}

impl BytesPerSec {
    /// Mebibytes per second (what `iostat -m` calls MB/s).
    pub fn as_mib_per_sec(self) -> f64 {
        self.0 / MIB
    }
}

/// Human-readable binary size: `1.5 GiB`, `512 MiB`, `980 B`.
pub fn format_bytes(b: Bytes) -> String {
    let v = b.0 as f64;
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    let mut x = v;
    while x >= 1024.0 && unit < UNITS.len() - 1 {
        x /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{} B", b.0)
    } else if x >= 100.0 {
        format!("{x:.0} {}", UNITS[unit])
    } else {
        format!("{x:.1} {}", UNITS[unit])
    }
}

/// Human-readable rate: `12.3 MiB/s`.
pub fn format_rate(r: BytesPerSec) -> String {
    format!("{}/s", format_bytes(Bytes(r.0.max(0.0).round() as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_of_handles_zero_total() {
        assert_eq!(Bytes(5).percent_of(Bytes(0)), None);
        assert_eq!(Bytes(50).percent_of(Bytes(200)), Some(Percent(25.0)));
    }

    #[test]
    fn mib_round_trip() {
        assert_eq!(Bytes::from_mib(81559).as_mib(), 81559.0);
        assert_eq!(Bytes::from_mib(2048).as_gib(), 2.0);
    }

    #[test]
    fn formats_sizes_and_rates() {
        assert_eq!(format_bytes(Bytes(980)), "980 B");
        assert_eq!(format_bytes(Bytes::from_mib(512)), "512 MiB");
        assert_eq!(format_bytes(Bytes(1536 * 1024 * 1024)), "1.5 GiB");
        assert_eq!(
            format_rate(BytesPerSec(10.0 * 1024.0 * 1024.0)),
            "10.0 MiB/s"
        );
    }

    #[test]
    fn units_serialize_as_bare_numbers() {
        assert_eq!(serde_json::to_string(&Bytes(7)).ok().as_deref(), Some("7"));
        assert_eq!(
            serde_json::to_string(&Percent(12.5)).ok().as_deref(),
            Some("12.5")
        );
    }
}
