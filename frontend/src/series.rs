//! Chart series from a host's sample history: one line per GPU or per block device.
//!
//! Reads the `Ring<Sample>` the store keeps (`model.rs`) and produces the generic
//! [`Series`](crate::chart::Series) the chart draws. A GPU or device absent from a sample is a gap
//! there; each keeps its colour across charts (colour by sorted position).

use crate::chart::Series;
use crate::model::{DiskSample, GpuSample, Sample};
use shared::window::Ring;

/// Distinct line colours readable on light and dark backgrounds (16, one per series at most).
const PALETTE: [&str; 16] = [
    "#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#edc948", "#b07aa1", "#76b7b2", "#ff9da7",
    "#9c755f", "#8cd17d", "#a0cbe8", "#ffbe7d", "#d37295", "#86bcb6", "#bab0ac", "#499894",
];

pub fn color(i: usize) -> String {
    PALETTE[i % PALETTE.len()].to_owned()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMetric {
    MemoryPct,
    UtilPct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskMetric {
    ReadMibS,
    WriteMibS,
    UtilPct,
}

fn gpu_value(g: &GpuSample, m: GpuMetric) -> Option<f64> {
    match m {
        GpuMetric::MemoryPct => g.mem_pct,
        GpuMetric::UtilPct => g.util_pct,
    }
}

fn disk_value(d: &DiskSample, m: DiskMetric) -> Option<f64> {
    match m {
        DiskMetric::ReadMibS => d.read_mib_s,
        DiskMetric::WriteMibS => d.write_mib_s,
        DiskMetric::UtilPct => d.util_pct,
    }
}

/// The samples within `window_ms` of the newest one.
fn recent(history: &Ring<Sample>, window_ms: u64) -> impl Iterator<Item = &Sample> {
    let from = history
        .last()
        .map_or(0, |s| s.t_ms.saturating_sub(window_ms));
    history.after(move |s| s.t_ms < from)
}

/// One series per GPU index seen in the window, by index.
pub fn gpu_series(history: &Ring<Sample>, metric: GpuMetric, window_ms: u64) -> Vec<Series> {
    let mut keys: Vec<u32> = recent(history, window_ms)
        .flat_map(|s| s.gpus.iter().map(|g| g.index))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.iter()
        .enumerate()
        .map(|(i, &index)| Series {
            label: format!("GPU {index}"),
            color: color(i),
            points: recent(history, window_ms)
                .map(|s| {
                    let v = s.gpus.iter().find(|g| g.index == index);
                    (s.t_ms, v.and_then(|g| gpu_value(g, metric)))
                })
                .collect(),
            band: Vec::new(),
        })
        .collect()
}

/// One series per block device seen in the window, by name.
pub fn disk_series(history: &Ring<Sample>, metric: DiskMetric, window_ms: u64) -> Vec<Series> {
    let mut keys: Vec<&str> = recent(history, window_ms)
        .flat_map(|s| s.disks.iter().map(|d| d.name.as_str()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.iter()
        .enumerate()
        .map(|(i, &name)| Series {
            label: name.to_owned(),
            color: color(i),
            points: recent(history, window_ms)
                .map(|s| {
                    let v = s.disks.iter().find(|d| d.name == name);
                    (s.t_ms, v.and_then(|d| disk_value(d, metric)))
                })
                .collect(),
            band: Vec::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seq: u64, gpus: &[(u32, Option<f64>)], disks: &[(&str, Option<f64>)]) -> Sample {
        Sample {
            seq,
            t_ms: seq * 1000,
            gpus: gpus
                .iter()
                .map(|&(index, v)| GpuSample {
                    index,
                    mem_pct: v,
                    util_pct: v.map(|v| v / 2.0),
                })
                .collect(),
            disks: disks
                .iter()
                .map(|&(name, v)| DiskSample {
                    name: name.to_owned(),
                    read_mib_s: v,
                    write_mib_s: None,
                    util_pct: v,
                })
                .collect(),
        }
    }

    #[test]
    fn one_series_per_gpu_with_gaps_where_it_was_missing() {
        let mut ring = Ring::new(10);
        ring.push(sample(1, &[(1, Some(10.0))], &[]));
        ring.push(sample(2, &[(0, Some(50.0)), (1, None)], &[]));
        ring.push(sample(3, &[(0, Some(60.0)), (1, Some(30.0))], &[]));
        let s = gpu_series(&ring, GpuMetric::MemoryPct, 60_000);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].label, "GPU 0");
        assert_eq!(
            s[0].points,
            vec![(1000, None), (2000, Some(50.0)), (3000, Some(60.0))]
        );
        assert_eq!(
            s[1].points,
            vec![(1000, Some(10.0)), (2000, None), (3000, Some(30.0))]
        );
        assert_ne!(s[0].color, s[1].color);
        let util = gpu_series(&ring, GpuMetric::UtilPct, 60_000);
        assert_eq!(util[0].points[2], (3000, Some(30.0)));
    }

    #[test]
    fn only_the_window_is_drawn() {
        let mut ring = Ring::new(100);
        for seq in 1..=10 {
            ring.push(sample(seq, &[], &[("vda", Some(seq as f64))]));
        }
        let s = disk_series(&ring, DiskMetric::ReadMibS, 3000);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].label, "vda");
        let ts: Vec<u64> = s[0].points.iter().map(|p| p.0).collect();
        assert_eq!(ts, vec![7000, 8000, 9000, 10_000]);
        let w = disk_series(&ring, DiskMetric::WriteMibS, 3000);
        assert!(w[0].points.iter().all(|p| p.1.is_none()));
        assert!(gpu_series(&Ring::new(4), GpuMetric::UtilPct, 1000).is_empty());
    }

    #[test]
    fn sixteen_series_have_sixteen_colours() {
        let mut colours: Vec<String> = (0..16).map(color).collect();
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), 16);
    }
}
