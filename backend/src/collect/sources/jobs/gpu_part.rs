//! The GPU part of each job, rebuilt every tick from the frame's GPUs: its memory on each GPU (or
//! MIG instance), its share of it, and the utilization when its processes are alone there.

use super::Measured;
use shared::{Bytes, Gpu, GpuProcess, Job, JobGpu, MigSlot};
use std::collections::BTreeSet;

/// The jobs with this tick's GPU part, biggest GPU memory first (unknown last).
pub(super) fn with_gpus(measured: &[Measured], gpus: &[Gpu]) -> Vec<Job> {
    let mut jobs: Vec<Job> = measured
        .iter()
        .map(|m| {
            let mut job = m.job.clone();
            job.gpus = gpus.iter().flat_map(|g| job_gpus(g, &m.gpu_pids)).collect();
            job
        })
        .collect();
    jobs.sort_by(|a, b| {
        b.gpu_memory()
            .map(|b| b.0)
            .cmp(&a.gpu_memory().map(|b| b.0))
            .then_with(|| (a.kind, &a.id).cmp(&(b.kind, &b.id)))
    });
    jobs
}

/// The job's parts of one GPU: one for its processes there, or, on a GPU in MIG mode, one per
/// MIG instance they run on (each instance is a memory pool of its own: docs/jobs.md#mig).
pub(super) fn job_gpus(gpu: &Gpu, pids: &BTreeSet<u32>) -> Vec<JobGpu> {
    let all = gpu.processes.as_deref().unwrap_or_default();
    let mut slots: Vec<Option<MigSlot>> = all
        .iter()
        .filter(|p| pids.contains(&p.pid))
        .map(|p| p.mig)
        .collect();
    slots.sort_unstable();
    slots.dedup();
    slots
        .into_iter()
        .filter_map(|slot| {
            let on: Vec<_> = all.iter().filter(|p| p.mig == slot).collect();
            let mine: Vec<_> = on
                .iter()
                .copied()
                .filter(|p| pids.contains(&p.pid))
                .collect();
            job_gpu(gpu, slot, &mine, mine.len() == on.len())
        })
        .collect()
}

/// The job's part of one GPU, or of one MIG instance of it (`slot`): its processes there
/// (`mine`), and whether they are `alone` there (then the utilization is theirs).
pub fn job_gpu(
    gpu: &Gpu,
    slot: Option<MigSlot>,
    mine: &[&GpuProcess],
    alone: bool,
) -> Option<JobGpu> {
    if mine.is_empty() {
        return None;
    }
    let memory = mine
        .iter()
        .filter_map(|p| p.used_bytes)
        .map(|b| b.0)
        .reduce(u64::saturating_add)
        .map(Bytes);
    // On an instance, its own memory and utilization; an instance not (or no longer) laid out
    // gives neither.
    let (total, utilization) = match slot {
        // Outside MIG mode, the GPU's. A process without its instance on a GPU in MIG mode has
        // a pool of its own nobody named: neither figure.
        None if gpu.mig.is_empty() => (
            gpu.memory.as_ref().map(|m| m.total_bytes),
            gpu.utilization_gpu_pct,
        ),
        None => (None, None),
        Some(slot) => gpu
            .mig
            .iter()
            .find(|i| i.slot == Some(slot))
            .map_or((None, None), |i| {
                (
                    i.memory.as_ref().map(|m| m.total_bytes),
                    i.utilization_gpu_pct,
                )
            }),
    };
    Some(JobGpu {
        index: gpu.index,
        uuid: gpu.uuid.clone(),
        memory_used_bytes: memory,
        memory_share_pct: memory.zip(total).and_then(|(m, t)| m.percent_of(t)),
        utilization_pct: if alone { utilization } else { None },
        mig: slot,
    })
}
