//! One device's process lists: compute and graphics through the `_v3` calls, or the `_v2` ones
//! where the driver lacks them (see [`super::versioned`]), merged by pid; read every
//! [`PROCESS_LIST_PERIOD`] and carried in the frames between reads with the time they were read.

use super::versioned::{Fallback, Generation};
use nvml_wrapper::Device;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use shared::{GpuProcess, MigSlot, ProcessApi};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often a device's process lists are read; memory and utilization are read every tick.
/// docs/architecture.md#5-what-a-frame-holds allows the slower cadence: the holders of GPU memory change when a job starts
/// or exits, which a few seconds show soon enough, while the lists cost four NVML calls and a
/// `/proc` read per process. Each frame says when its list was read (`processes_t_ms`).
pub const PROCESS_LIST_PERIOD: Duration = Duration::from_secs(3);

/// The latest process list of one device, shown until the next read.
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    pub list: Vec<GpuProcess>,
    pub api: ProcessApi,
    /// When it was read, on the monotonic clock (for the cadence) and in ms since the epoch
    /// (for the frame).
    pub read_at: Instant,
    pub t_ms: u64,
}

/// A process holding memory on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// `None`: NVML does not know.
    pub used: Option<u64>,
    /// The MIG instance it runs on, where the GPU is in MIG mode (the `_v3` and `_v2` lists say).
    pub mig: Option<MigSlot>,
}

/// A device's holders, ascending by pid.
pub type Holders = Vec<Holder>;

/// Whether the lists are due at `now`: never read in this session, or read a period ago.
pub fn due(carried: Option<&Carried>, now: Instant) -> bool {
    carried.is_none_or(|c| now.saturating_duration_since(c.read_at) >= PROCESS_LIST_PERIOD)
}

/// Compute and graphics processes merged by pid, with used bytes (`None`: NVML does not know),
/// and the generation of calls that answered (`v2` if either list needed the older call).
pub fn read(
    device: &Device<'_>,
    fallback: &mut Fallback,
) -> Result<(Holders, ProcessApi), NvmlError> {
    let (compute, c) = fallback.call(
        || device.running_compute_processes(),
        || device.running_compute_processes_v2(),
    )?;
    let (graphics, g) = match fallback.call(
        || device.running_graphics_processes(),
        || device.running_graphics_processes_v2(),
    ) {
        Ok(found) => found,
        Err(NvmlError::NotSupported) => (Vec::new(), c),
        Err(e) => return Err(e),
    };
    let api = if c == Generation::Older || g == Generation::Older {
        ProcessApi::V2
    } else {
        ProcessApi::V3
    };
    Ok((merge(compute, graphics), api))
}

/// A pid in both lists keeps the larger figure: NVML reports a process's memory on the device in
/// each list, so adding them would count it twice. Its MIG instance is the first list's that
/// names one.
fn merge(compute: Vec<ProcessInfo>, graphics: Vec<ProcessInfo>) -> Holders {
    let mut merged: BTreeMap<u32, Holder> = BTreeMap::new();
    for p in compute.into_iter().chain(graphics) {
        let used = match p.used_gpu_memory {
            UsedGpuMemory::Used(b) => Some(b),
            UsedGpuMemory::Unavailable => None,
        };
        let mig = p.gpu_instance_id.zip(p.compute_instance_id).map(
            |(gpu_instance_id, compute_instance_id)| MigSlot {
                gpu_instance_id,
                compute_instance_id,
            },
        );
        let entry = merged.entry(p.pid).or_insert(Holder {
            pid: p.pid,
            used: None,
            mig: None,
        });
        entry.used = entry.used.max(used);
        entry.mig = entry.mig.or(mig);
    }
    merged.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pid: u32, used: Option<u64>) -> ProcessInfo {
        ProcessInfo {
            pid,
            used_gpu_memory: used.map_or(UsedGpuMemory::Unavailable, UsedGpuMemory::Used),
            gpu_instance_id: None,
            compute_instance_id: None,
        }
    }

    fn holder(pid: u32, used: Option<u64>, mig: Option<(u32, u32)>) -> Holder {
        Holder {
            pid,
            used,
            mig: mig.map(|(g, c)| MigSlot {
                gpu_instance_id: g,
                compute_instance_id: c,
            }),
        }
    }

    #[test]
    fn lists_merge_by_pid_keeping_the_larger_figure() {
        let merged = merge(
            vec![info(7, Some(200)), info(9, None)],
            vec![info(7, Some(100)), info(3, Some(5))],
        );
        assert_eq!(
            merged,
            vec![
                holder(3, Some(5), None),
                holder(7, Some(200), None),
                holder(9, None, None)
            ]
        );
    }

    #[test]
    fn a_process_keeps_its_mig_instance_and_half_an_id_is_none() {
        let on = |pid, gi, ci| ProcessInfo {
            gpu_instance_id: gi,
            compute_instance_id: ci,
            ..info(pid, Some(10))
        };
        let merged = merge(
            vec![on(7, Some(1), Some(0)), on(8, Some(2), None)],
            vec![on(7, None, None), on(9, Some(13), Some(0))],
        );
        assert_eq!(
            merged,
            vec![
                holder(7, Some(10), Some((1, 0))),
                holder(8, Some(10), None),
                holder(9, Some(10), Some((13, 0)))
            ]
        );
    }

    #[test]
    fn lists_are_due_every_period() {
        let t0 = Instant::now();
        assert!(due(None, t0));
        let carried = Carried {
            list: Vec::new(),
            api: ProcessApi::V3,
            read_at: t0,
            t_ms: 0,
        };
        assert!(!due(Some(&carried), t0 + PROCESS_LIST_PERIOD / 2));
        assert!(due(Some(&carried), t0 + PROCESS_LIST_PERIOD));
    }
}
