//! Several files' samples merged into one timeline of frames: by their timestamps, a sample
//! joining the frame of another file's sample less than half an interval before it; a file
//! without timestamps aligned by order at the interval, from the first timestamp of the others
//! (or from `origin_ms`).

use super::convert;
use super::model::Sample;
use shared::Frame;
use std::collections::VecDeque;

/// How to lay samples out in time.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// `--interval`: the step of files without timestamps. The frames' `interval_ms` is the
    /// median step of the first timestamped file's first samples, or this without one.
    pub step_ms: u64,
    /// Where files without timestamps start when no file has any (the first file's modification
    /// time); `None` when that could not be read: the Unix epoch.
    pub origin_ms: Option<u64>,
}

/// Samples looked at to infer the interval.
const INFER_FROM: usize = 16;

/// One input with the samples read ahead of the merge.
struct Lane<I> {
    samples: I,
    ahead: VecDeque<Sample>,
    timed: bool,
    /// Samples taken so far (the position of an untimed one).
    taken: u64,
}

impl<I: Iterator<Item = Sample>> Lane<I> {
    fn peek(&mut self) -> Option<&Sample> {
        if self.ahead.is_empty() {
            self.ahead.extend(self.samples.next());
        }
        self.ahead.front()
    }
}

/// Merges `inputs` into frames for `host`, handing each to `emit` in time order. Returns the
/// notes about the layout (a file aligned by order, the interval inferred).
pub fn assemble<I: Iterator<Item = Sample>>(
    inputs: Vec<(String, I)>,
    host: &str,
    layout: Layout,
    mut emit: impl FnMut(Frame),
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut lanes: Vec<(String, Lane<I>)> = inputs
        .into_iter()
        .map(|(label, mut samples)| {
            let ahead: VecDeque<Sample> = samples.by_ref().take(INFER_FROM).collect();
            let timed = ahead.iter().any(|s| s.t_ms.is_some());
            (
                label,
                Lane {
                    samples,
                    ahead,
                    timed,
                    taken: 0,
                },
            )
        })
        .collect();
    let inferred = lanes
        .iter()
        .find(|(_, l)| l.timed)
        .and_then(|(_, l)| median_step(l.ahead.iter().filter_map(|s| s.t_ms)));
    let step = layout.step_ms.max(1);
    let interval_ms = inferred.unwrap_or(step).max(1);
    if let Some(ms) = inferred {
        notes.push(format!("the samples are {ms} ms apart (the median step)"));
    }
    let origin = lanes
        .iter()
        .filter_map(|(_, l)| l.ahead.iter().find_map(|s| s.t_ms))
        .min()
        .or(layout.origin_ms)
        .unwrap_or(0);
    for (label, lane) in &lanes {
        if !lane.timed && !lane.ahead.is_empty() {
            notes.push(format!(
                "{label}: no timestamps, so its samples are aligned by order, {step} ms apart (--interval) from the start"
            ));
        }
    }
    let time_of = |lane: &mut Lane<I>| -> Option<u64> {
        let taken = lane.taken;
        let timed = lane.timed;
        let s = lane.peek()?;
        Some(match (timed, s.t_ms) {
            (true, Some(t)) => t,
            // A sample without a time in a timed file goes with the one before it.
            (true, None) => origin,
            (false, _) => origin.saturating_add(taken.saturating_mul(step)),
        })
    };
    let mut seq = 0u64;
    let mut bucket: Vec<(usize, Sample)> = Vec::new();
    let mut bucket_t = 0u64;
    loop {
        // The lane whose next sample is earliest.
        let next = lanes
            .iter_mut()
            .enumerate()
            .filter_map(|(i, (_, lane))| time_of(lane).map(|t| (t, i)))
            .min();
        let Some((t, i)) = next else { break };
        let lane = &mut lanes[i].1;
        let Some(sample) = lane.ahead.pop_front() else {
            break;
        };
        lane.taken += 1;
        let joins = !bucket.is_empty()
            && t.saturating_sub(bucket_t) < interval_ms.div_ceil(2)
            && !bucket.iter().any(|(j, _)| *j == i);
        if !joins && !bucket.is_empty() {
            seq += 1;
            emit(flush(host, seq, bucket_t, interval_ms, &bucket));
            bucket.clear();
        }
        if bucket.is_empty() {
            bucket_t = t;
        }
        bucket.push((i, sample));
    }
    if !bucket.is_empty() {
        seq += 1;
        emit(flush(host, seq, bucket_t, interval_ms, &bucket));
    }
    notes
}

fn flush(host: &str, seq: u64, t_ms: u64, interval_ms: u64, bucket: &[(usize, Sample)]) -> Frame {
    let samples: Vec<&Sample> = bucket.iter().map(|(_, s)| s).collect();
    convert::frame(host, seq, t_ms, interval_ms, &samples)
}

/// The median of the positive steps between consecutive times.
fn median_step(times: impl Iterator<Item = u64>) -> Option<u64> {
    let times: Vec<u64> = times.collect();
    let mut steps: Vec<u64> = times
        .windows(2)
        .filter_map(|w| w[1].checked_sub(w[0]))
        .filter(|d| *d > 0)
        .collect();
    steps.sort_unstable();
    steps.get(steps.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::model::{DiskRow, GpuRow};

    fn gpu_sample(t_ms: Option<u64>, used_mib: u64) -> Sample {
        Sample {
            t_ms,
            gpus: vec![GpuRow {
                index: Some(0),
                memory_total_bytes: Some(80 << 30),
                memory_used_bytes: Some(used_mib << 20),
                util_gpu_pct: Some(50.0),
                ..GpuRow::default()
            }],
            ..Sample::default()
        }
    }

    fn disk_sample(t_ms: Option<u64>, read_mb: f64) -> Sample {
        Sample {
            t_ms,
            disks: vec![DiskRow {
                device: "nvme0n1".into(),
                read_bytes_per_sec: Some(read_mb * 1e6),
                ..DiskRow::default()
            }],
            ..Sample::default()
        }
    }

    fn run(
        inputs: Vec<(String, std::vec::IntoIter<Sample>)>,
        layout: Layout,
    ) -> (Vec<Frame>, Vec<String>) {
        let mut frames = Vec::new();
        let notes = assemble(inputs, "h", layout, |f| frames.push(f));
        (frames, notes)
    }

    const T: u64 = 1_700_000_000_000;
    const AUTO: Layout = Layout {
        step_ms: 1000,
        origin_ms: None,
    };

    #[test]
    fn two_timed_files_merge_by_time_within_half_an_interval() {
        let gpu: Vec<Sample> = (0..5)
            .map(|i| gpu_sample(Some(T + i * 1000), 100 * i))
            .collect();
        // iostat's reports land 300 ms after the GPU rows, and start a second later.
        let io: Vec<Sample> = (1..5)
            .map(|i| disk_sample(Some(T + i * 1000 + 300), 10.0))
            .collect();
        let (frames, notes) = run(
            vec![
                ("gpu.csv".into(), gpu.into_iter()),
                ("io.txt".into(), io.into_iter()),
            ],
            AUTO,
        );
        assert_eq!(frames.len(), 5, "{frames:#?}");
        assert_eq!(frames[0].block_devices.len(), 0);
        assert!(
            frames[1..]
                .iter()
                .all(|f| f.gpus.len() == 1 && f.block_devices.len() == 1)
        );
        assert_eq!(frames[2].t_ms, T + 2000);
        assert_eq!(
            frames.iter().map(|f| f.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert!(frames.iter().all(|f| f.interval_ms == 1000));
        assert!(
            notes.iter().any(|n| n.contains("1000 ms apart")),
            "{notes:?}"
        );
    }

    #[test]
    fn an_untimed_file_is_aligned_by_order_from_the_timed_ones_start() {
        let gpu: Vec<Sample> = (0..3).map(|i| gpu_sample(Some(T + i * 2000), 10)).collect();
        let io: Vec<Sample> = (0..3).map(|_| disk_sample(None, 5.0)).collect();
        let (frames, notes) = run(
            vec![
                ("gpu.csv".into(), gpu.into_iter()),
                ("io.txt".into(), io.into_iter()),
            ],
            Layout {
                step_ms: 2000,
                origin_ms: None,
            },
        );
        assert_eq!(frames.len(), 3, "{frames:#?}");
        assert!(
            frames
                .iter()
                .all(|f| f.gpus.len() == 1 && f.block_devices.len() == 1)
        );
        assert!(
            notes.iter().any(|n| n.contains("io.txt: no timestamps")),
            "{notes:?}"
        );
    }

    #[test]
    fn gaps_stay_gaps_and_what_a_log_lacks_stays_absent() {
        let gpu = vec![
            gpu_sample(Some(T), 1),
            gpu_sample(Some(T + 1000), 2),
            gpu_sample(Some(T + 60_000), 3),
        ];
        let (frames, _) = run(vec![("gpu.csv".into(), gpu.into_iter())], AUTO);
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[2].t_ms, T + 60_000);
        let f = &frames[0];
        assert!(f.system.is_none() && f.mounts.is_empty() && f.block_devices.is_empty());
        let g = &f.gpus[0];
        assert_eq!(g.uuid, None);
        assert_eq!(g.temperature_c, None);
        assert_eq!(g.processes, None);
    }

    #[test]
    fn a_gpu_without_memory_says_what_is_missing() {
        let mut s = gpu_sample(Some(T), 1);
        s.gpus[0].memory_used_bytes = None;
        s.gpus[0].memory_total_bytes = None;
        let (frames, _) = run(vec![("gpu.csv".into(), vec![s].into_iter())], AUTO);
        assert_eq!(frames[0].gpus[0].memory, None);
        assert_eq!(frames[0].errors.len(), 1);
        assert!(
            frames[0].errors[0]
                .message
                .contains("memory.used or memory.total"),
            "{:?}",
            frames[0].errors
        );
    }
}
