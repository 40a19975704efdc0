//! Chart samples: the few numbers of one frame the page's charts draw (per GPU memory and
//! utilization, per disk read, write and utilization), so 15 minutes of history stay small in
//! the page, and on the wire when a replay jumps (`history` messages: about a tenth of the bytes
//! of the frames they stand for).
//!
//! On the wire a sample is `{"seq","t","g":[[index,mem_pct,util_pct]...],"d":[[name,read_mib_s,
//! write_mib_s,util_pct]...]}`, figures rounded to 0.01 (what a chart can show), `null` where the
//! frame had none.

use crate::frame::Frame;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The chart numbers of one frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sample {
    pub seq: u64,
    #[serde(rename = "t")]
    pub t_ms: u64,
    #[serde(rename = "g")]
    pub gpus: Vec<GpuSample>,
    #[serde(rename = "d")]
    pub disks: Vec<DiskSample>,
}

/// `[index, mem_pct, util_pct]` on the wire.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(with = "(u32, Option<f64>, Option<f64>)")]
pub struct GpuSample {
    pub index: u32,
    pub mem_pct: Option<f64>,
    pub util_pct: Option<f64>,
}

/// `[name, read_mib_s, write_mib_s, util_pct]` on the wire.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(with = "(String, Option<f64>, Option<f64>, Option<f64>)")]
pub struct DiskSample {
    pub name: String,
    pub read_mib_s: Option<f64>,
    pub write_mib_s: Option<f64>,
    pub util_pct: Option<f64>,
}

impl Sample {
    pub fn of(frame: &Frame) -> Self {
        Sample {
            seq: frame.seq,
            t_ms: frame.t_ms,
            gpus: frame
                .gpus
                .iter()
                .map(|g| GpuSample {
                    index: g.index,
                    mem_pct: g.memory.and_then(|m| m.used_pct()).map(|p| p.0),
                    util_pct: g.utilization_gpu_pct.map(|p| p.0),
                })
                .collect(),
            disks: frame
                .block_devices
                .iter()
                .map(|d| DiskSample {
                    name: d.name.clone(),
                    read_mib_s: d.read_bytes_per_sec.map(|r| r.as_mib_per_sec()),
                    write_mib_s: d.write_bytes_per_sec.map(|r| r.as_mib_per_sec()),
                    util_pct: d.util_pct.map(|p| p.0),
                })
                .collect(),
        }
    }
}

/// From this magnitude on a figure is sent as it is: an f64 there has no hundredths to round to
/// (its spacing nears 0.01), and scaling it by 100 would change its last bits, or near the f64
/// limit overflow to infinity, which JSON writes as `null` (a reading lost).
const ROUNDED_BELOW: f64 = (1u64 << 51) as f64 / 100.0;

/// A figure as the wire carries it: rounded to 0.01 (see [`ROUNDED_BELOW`]), and only if finite.
fn wire(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite()).map(|v| {
        if v.abs() < ROUNDED_BELOW {
            (v * 100.0).round() / 100.0
        } else {
            v
        }
    })
}

impl Serialize for GpuSample {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.index, wire(self.mem_pct), wire(self.util_pct)).serialize(s)
    }
}

impl<'de> Deserialize<'de> for GpuSample {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (index, mem_pct, util_pct) = <(u32, Option<f64>, Option<f64>)>::deserialize(d)?;
        Ok(GpuSample {
            index,
            mem_pct,
            util_pct,
        })
    }
}

impl Serialize for DiskSample {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (
            &self.name,
            wire(self.read_mib_s),
            wire(self.write_mib_s),
            wire(self.util_pct),
        )
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for DiskSample {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (name, read_mib_s, write_mib_s, util_pct) =
            <(String, Option<f64>, Option<f64>, Option<f64>)>::deserialize(d)?;
        Ok(DiskSample {
            name,
            read_mib_s,
            write_mib_s,
            util_pct,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_form_is_compact_rounded_and_keeps_absence() {
        let s = Sample {
            seq: 7,
            t_ms: 1000,
            gpus: vec![GpuSample {
                index: 3,
                mem_pct: Some(39.235_584_437),
                util_pct: None,
            }],
            disks: vec![DiskSample {
                name: "nvme0n1".into(),
                read_mib_s: Some(f64::NAN),
                write_mib_s: Some(0.004),
                util_pct: Some(12.5),
            }],
        };
        let json = serde_json::to_string(&s).expect("json");
        assert_eq!(
            json,
            r#"{"seq":7,"t":1000,"g":[[3,39.24,null]],"d":[["nvme0n1",null,0.0,12.5]]}"#
        );
        let back: Sample = serde_json::from_str(&json).expect("parses");
        assert_eq!(back.gpus[0].mem_pct, Some(39.24));
        assert_eq!(back.gpus[0].util_pct, None);
        assert_eq!(back.disks[0].read_mib_s, None, "NaN is no reading");
        for bad in [
            r#"{"seq":1,"t":1,"g":[[1]],"d":[]}"#,
            r#"{"seq":1,"t":1,"g":[["x",1,1]],"d":[]}"#,
            r#"{"seq":1,"t":1,"g":[],"d":[[1,2,3,4]]}"#,
            r#"{"seq":-1,"t":1,"g":[],"d":[]}"#,
        ] {
            assert!(serde_json::from_str::<Sample>(bad).is_err(), "{bad}");
        }
    }

    /// A figure above `f64::MAX / 100` overflowed to infinity when rounded, and came back
    /// `None`: a reading lost on the wire. Found by `tests/prop_history.rs`.
    #[test]
    fn a_figure_near_the_f64_limit_is_not_lost() {
        let s = Sample {
            seq: 1,
            t_ms: 1,
            gpus: vec![GpuSample {
                index: 0,
                mem_pct: Some(f64::MAX),
                util_pct: Some(-f64::MAX),
            }],
            disks: Vec::new(),
        };
        let json = serde_json::to_string(&s).expect("json");
        let back: Sample = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, s, "{json}");
    }
}
