//! One pass over the window per GPU: memory level and trend points, utilization moments and
//! per-sample values, job presence, memory not held by the job, orphans, and availability.
//! The GPU rules (`gpu_memory`, `starvation`, `headroom`) read these series; none re-walks frames.

use super::ctx::Ctx;
use super::model::RuleId;
use super::stats::{Band, Dir, Moments, Tally};
use super::thresholds::Thresholds;
use super::trend::Subsample;
use crate::frame::{Frame, Gpu, GpuState, Presence, Source};

#[derive(Clone)]
pub(crate) struct GpuSeries {
    pub index: u32,
    pub subject: String,
    /// Used/total % against the pressure band (relaxed when the finding was held).
    pub mem: Tally,
    /// Samples with used/total below `headroom_mem_pct`.
    pub mem_low: u32,
    /// Newest total, bytes.
    pub total_bytes: Option<f64>,
    /// What processes can fill: total minus what the driver reserves (NVML v2 `used` never
    /// includes `reserved`; v1 has no reserved and counts it in `used`), the ceiling for
    /// time-to-OOM.
    pub usable_bytes: Option<f64>,
    /// Subsampled `(t_s, used bytes)` for the trend.
    pub points: Vec<(f64, f64)>,
    pub util: Moments,
    /// Utilization per frame of the window (`None` where not read).
    pub util_by_frame: Vec<Option<f64>>,
    /// Samples below `sawtooth_low_pct`.
    pub util_low: u32,
    /// Samples below the starvation mean threshold (for evidence).
    pub util_below_starved: u32,
    /// Samples in which a job held memory, of samples where that could be told (process lists are
    /// read on the trend subsample, see [`super::trend::Subsample`]).
    pub job: (u32, u32),
    /// Samples where device used minus the processes' sum exceeded the threshold, of samples
    /// where every process reported its memory; with the newest difference in bytes.
    pub unattributed: (u32, u32, Option<f64>),
    /// Samples with an orphan holder (a process that exited, not one merely hidden from this
    /// PID namespace), of samples with a process list; newest `(pid, bytes)`.
    pub orphan: (u32, u32, Option<(u32, f64)>),
    /// Whether any process on this GPU had a visible name (otherwise pids may just be hidden).
    pub named_process_seen: bool,
    /// Frames in which the GPU was lost, failing, or absent.
    pub unavailable: u32,
    /// Whether the newest frame has no memory reading for it.
    pub unavailable_now: bool,
    /// The newest error reported for it (frame `errors`, or its state).
    pub last_error: Option<String>,
}

/// The GPU at `pos` if its index matches (the usual case), else a search by index.
fn gpu_in(frame: &Frame, pos: usize, index: u32) -> Option<&Gpu> {
    match frame.gpus.get(pos) {
        Some(g) if g.index == index => Some(g),
        _ => frame.gpus.iter().find(|g| g.index == index),
    }
}

/// Every GPU index seen in the window, ascending. Frames with the same GPUs as the one before
/// (the usual case) cost one comparison per GPU.
fn indices(frames: &[Frame]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let mut prev: Option<&Frame> = None;
    for f in frames {
        let same = prev.is_some_and(|p| {
            p.gpus.len() == f.gpus.len()
                && p.gpus.iter().zip(&f.gpus).all(|(a, b)| a.index == b.index)
        });
        prev = Some(f);
        if same {
            continue;
        }
        for g in &f.gpus {
            if !out.contains(&g.index) {
                out.push(g.index);
            }
        }
    }
    out.sort_unstable();
    out
}

fn error_text(frame: &Frame, subject: &str, state: GpuState) -> String {
    frame
        .errors_for(Source::Gpu)
        .find(|e| e.item.as_deref().is_none_or(|i| i == subject))
        .map(|e| e.message.clone())
        .unwrap_or_else(|| match state {
            GpuState::Lost => "GPU is lost (fallen off the bus)".to_owned(),
            GpuState::Error | GpuState::Ok => "GPU readings failed".to_owned(),
        })
}

/// One pass over the frames (frame-major, so each frame's GPUs are read while in cache).
pub(crate) fn gather(ctx: &Ctx<'_>) -> Vec<GpuSeries> {
    let th = ctx.th;
    let n = ctx.frames.len();
    let mut sub = Subsample::new(n, th.trend_max_points);
    let starvation_held = ctx.prev.is_some_and(|p| p.verdict.is_starvation());
    let starved_below = if starvation_held {
        th.starved_util_mean_pct + th.hysteresis_pct_points
    } else {
        th.starved_util_mean_pct
    };
    let mut all: Vec<(u32, GpuSeries)> = indices(ctx.frames)
        .into_iter()
        .map(|index| (index, series(ctx, index, format!("gpu {index}"))))
        .collect();
    for f in ctx.frames {
        let keep = sub.next();
        let t_s = ctx.t_s(f);
        for (pos, (index, s)) in all.iter_mut().enumerate() {
            let g = gpu_in(f, pos, *index);
            add_sample(th, s, f, g, keep, t_s, starved_below);
        }
    }
    for (pos, (index, s)) in all.iter_mut().enumerate() {
        s.unavailable_now = ctx.frames.last().is_none_or(|f| {
            gpu_in(f, pos, *index).is_none_or(|g| g.state == GpuState::Lost || g.memory.is_none())
        });
    }
    all.into_iter().map(|(_, s)| s).collect()
}

/// An empty series for GPU `index`, named `subject`.
pub(super) fn series(ctx: &Ctx<'_>, index: u32, subject: String) -> GpuSeries {
    let th = ctx.th;
    let n = ctx.frames.len();
    let band = ctx.band(
        Band {
            warn: th.gpu_mem_warn_pct,
            crit: Some(th.gpu_mem_crit_pct),
            dir: Dir::AtLeast,
        },
        RuleId::GpuMemoryPressure,
        &subject,
    );
    GpuSeries {
        index,
        mem: Tally::new(band),
        mem_low: 0,
        total_bytes: None,
        usable_bytes: None,
        points: Vec::with_capacity((th.trend_max_points as usize).min(n) + 1),
        util: Moments::default(),
        util_by_frame: Vec::with_capacity(n),
        util_low: 0,
        util_below_starved: 0,
        job: (0, 0),
        unattributed: (0, 0, None),
        orphan: (0, 0, None),
        named_process_seen: false,
        unavailable: 0,
        unavailable_now: false,
        last_error: None,
        subject,
    }
}

pub(super) fn add_sample(
    th: &Thresholds,
    s: &mut GpuSeries,
    f: &Frame,
    g: Option<&Gpu>,
    keep: bool,
    t_s: f64,
    starved_below: f64,
) {
    let util = g.and_then(|g| g.utilization_gpu_pct).map(|p| p.0);
    s.util_by_frame.push(util);
    if let Some(u) = util {
        s.util.add(u);
        s.util_low += u32::from(u < th.sawtooth_low_pct);
        s.util_below_starved += u32::from(u < starved_below);
    }
    // Memory counts whenever it was read: a GPU in `Error` state because an optional reading
    // (temperature, power, the process list) failed still has a valid memory figure.
    let (Some(g), Some(mem)) = (
        g.filter(|g| g.state != GpuState::Lost),
        g.and_then(|g| g.memory),
    ) else {
        s.unavailable += 1;
        s.last_error = Some(match g {
            Some(g) => error_text(f, &s.subject, g.state),
            None => "GPU missing from the frame".to_owned(),
        });
        return;
    };
    let used = mem.used_bytes.0 as f64;
    s.total_bytes = Some(mem.total_bytes.0 as f64);
    let reserved = mem.reserved_bytes.map_or(0, |b| b.0);
    s.usable_bytes = Some(mem.total_bytes.0.saturating_sub(reserved) as f64);
    if let Some(p) = mem.used_pct() {
        s.mem.add(p.0);
        s.mem_low += u32::from(p.0 < th.headroom_mem_pct);
    }
    if keep {
        s.points.push((t_s, used));
    }
    // Process lists change slowly (and NVML may refresh them at a slower cadence): they are read
    // on the trend subsample only, which bounds the pointer chasing per window.
    if !keep {
        return;
    }
    let Some(procs) = &g.processes else {
        s.job.1 += 1;
        s.job.0 += u32::from(used >= th.job_min_gpu_bytes);
        return;
    };
    s.job.1 += 1;
    s.job.0 += u32::from(!procs.is_empty());
    s.orphan.1 += 1;
    let mut sum = Some(0.0);
    let mut orphan = None;
    for p in procs {
        s.named_process_seen |= p.name.is_some();
        let bytes = p.used_bytes.map(|b| b.0 as f64);
        sum = sum.zip(bytes).map(|(a, b)| a + b);
        if p.presence == Presence::Exited
            && let Some(b) = bytes.filter(|b| *b > th.orphan_min_bytes)
        {
            orphan = Some((p.pid, b));
        }
    }
    if let Some(o) = orphan {
        s.orphan.0 += 1;
        s.orphan.2 = Some(o);
    }
    if let Some(sum) = sum {
        let diff = used - sum;
        s.unattributed.1 += 1;
        s.unattributed.0 += u32::from(diff > th.gpu_unattributed_bytes);
        s.unattributed.2 = Some(diff);
    }
}
