//! A job's MIG instances as the GPU rules see them (docs/jobs.md#mig): each instance is a GPU of
//! its own for *GPU memory too high?* and *GPU starved?*, with its memory, its utilization
//! (absent on most drivers, so starvation is then unknown rather than guessed from the whole
//! GPU's) and its processes.

use super::ctx::Ctx;
use super::gpus::{GpuSeries, add_sample, series};
use super::trend::Subsample;
use crate::frame::{Frame, Gpu, GpuState, MigSlot};

/// The MIG instances of `frame`'s GPUs that have ids and a memory reading, by GPU index.
pub(crate) fn instances_of(frame: &Frame) -> Vec<(u32, MigSlot)> {
    frame
        .gpus
        .iter()
        .flat_map(|g| {
            g.mig
                .iter()
                .filter(|i| i.memory.is_some())
                .filter_map(move |i| Some((g.index, i.slot?)))
        })
        .collect()
}

/// Whether a finding's subject names a MIG instance ([`mig_subject`]).
pub(crate) fn is_instance_subject(subject: &str) -> bool {
    subject.starts_with("gpu ") && subject.contains(" mig ")
}

/// `gpu 0 mig 1/0`: a MIG instance as findings name it.
pub(crate) fn mig_subject(index: u32, slot: MigSlot) -> String {
    format!(
        "gpu {index} mig {}/{}",
        slot.gpu_instance_id, slot.compute_instance_id
    )
}

/// A MIG instance of a GPU as it is on its own: its memory, its utilization (absent on most
/// drivers) and its processes, frame by frame (docs/jobs.md#mig).
fn instance_of(g: &Gpu, slot: MigSlot) -> Option<Gpu> {
    let i = g.mig.iter().find(|i| i.slot == Some(slot))?;
    Some(Gpu {
        index: g.index,
        uuid: i.uuid.clone(),
        name: g.name.clone(),
        state: g.state,
        memory: i.memory,
        utilization_gpu_pct: i.utilization_gpu_pct,
        utilization_memory_pct: None,
        temperature_c: None,
        power_w: None,
        power_limit_w: None,
        processes: g.processes.as_ref().map(|list| {
            list.iter()
                .filter(|p| p.mig == Some(slot))
                .cloned()
                .collect()
        }),
        processes_t_ms: g.processes_t_ms,
        nvml_api: None,
        mig: Vec::new(),
    })
}

/// One series per MIG instance `(index, slot)`, read from each frame's instance as the GPUs'
/// series are from their GPUs; an instance absent from a frame counts as unavailable there.
pub(crate) fn gather_mig(ctx: &Ctx<'_>, parts: &[(u32, MigSlot)]) -> Vec<GpuSeries> {
    let th = ctx.th;
    let mut sub = Subsample::new(ctx.frames.len(), th.trend_max_points);
    let mut all: Vec<GpuSeries> = parts
        .iter()
        .map(|&(index, slot)| series(ctx, index, mig_subject(index, slot)))
        .collect();
    for f in ctx.frames {
        let keep = sub.next();
        let t_s = ctx.t_s(f);
        for (s, &(index, slot)) in all.iter_mut().zip(parts) {
            let parent = f.gpus.iter().find(|g| g.index == index);
            let instance = parent.and_then(|g| instance_of(g, slot));
            match (parent, &instance) {
                (Some(_), None) => {
                    s.unavailable += 1;
                    s.last_error = Some("MIG instance missing from the frame".to_owned());
                }
                _ => add_sample(
                    th,
                    s,
                    f,
                    instance.as_ref(),
                    keep,
                    t_s,
                    th.starved_util_mean_pct,
                ),
            }
        }
    }
    for (s, &(index, slot)) in all.iter_mut().zip(parts) {
        s.unavailable_now = ctx.frames.last().is_none_or(|f| {
            f.gpus
                .iter()
                .find(|g| g.index == index)
                .and_then(|g| instance_of(g, slot))
                .is_none_or(|g| g.state == GpuState::Lost || g.memory.is_none())
        });
    }
    all
}
