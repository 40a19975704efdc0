//! A GPU's MIG instances (docs/jobs.md#mig): whether the GPU is in MIG mode, and each instance's
//! ids, uuid, memory and (where the driver has it) utilization, through the MIG device handles.
//!
//! The layout (which instances exist, their ids and uuids) changes only when an administrator
//! re-partitions the GPU, so it is read with the process lists ([`super::processes::due`]);
//! each instance's memory is read every tick, as the GPU's is.

use super::memory;
use super::versioned::Fallback;
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::NVML_DEVICE_MIG_ENABLE;
use shared::{MigInstance, MigSlot, Percent};

/// NVML numbers a GPU's MIG devices 0 to 6.
pub const MAX_MIG_DEVICES: u32 = 7;

/// One instance as last laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Laid {
    pub index: u32,
    pub slot: Option<MigSlot>,
    pub uuid: Option<String>,
}

/// Whether `device` is in MIG mode now. A GPU that cannot do MIG, or a driver without the call,
/// is not.
pub fn enabled(device: &Device<'_>) -> Result<bool, NvmlError> {
    match device.mig_mode() {
        Ok(mode) => Ok(mode.current == NVML_DEVICE_MIG_ENABLE),
        Err(
            NvmlError::NotSupported
            | NvmlError::FailedToLoadSymbol(_)
            | NvmlError::FunctionNotFound,
        ) => Ok(false),
        Err(e) => Err(e),
    }
}

/// What a read of the instances gives: them, and what NVML refused on the way (for the frame's
/// errors: a refused figure is absent, and says why).
pub type Read<T> = (Vec<T>, Vec<String>);

/// The instances of a GPU in MIG mode: each MIG device index NVML has a handle for, with its
/// ids and uuid (absent where NVML refused them, with a note). A lost GPU is an error; an index
/// without an instance is skipped.
pub fn layout(nvml: &Nvml, device: &Device<'_>) -> Result<Read<Laid>, NvmlError> {
    let max = device.mig_device_count()?.min(MAX_MIG_DEVICES);
    let mut laid = Vec::new();
    let mut refused = Vec::new();
    for index in 0..max {
        let mig = match device.mig_device_by_index(index) {
            Ok(mig) => mig,
            Err(NvmlError::NotFound | NvmlError::InvalidArg) => continue,
            Err(e) => return Err(e),
        };
        let slot = match slot(nvml, &mig) {
            Ok(slot) => Some(slot),
            Err(NvmlError::GpuLost) => return Err(NvmlError::GpuLost),
            Err(e) => {
                refused.push(format!("MIG device {index}: instance ids: {e}"));
                None
            }
        };
        let uuid = match mig.uuid() {
            Ok(uuid) => Some(uuid),
            Err(NvmlError::GpuLost) => return Err(NvmlError::GpuLost),
            Err(e) => {
                refused.push(format!("MIG device {index}: uuid: {e}"));
                None
            }
        };
        laid.push(Laid { index, slot, uuid });
    }
    Ok((laid, refused))
}

/// Each laid-out instance's memory and utilization now. An instance whose handle is gone (the
/// GPU was re-partitioned since) is left out, with a note; the caller lays the GPU out again.
pub fn read(
    nvml: &Nvml,
    device: &Device<'_>,
    laid: &[Laid],
    fallback: &mut Fallback,
) -> Result<Read<MigInstance>, NvmlError> {
    let mut instances = Vec::with_capacity(laid.len());
    let mut refused = Vec::new();
    for l in laid {
        let mig = match device.mig_device_by_index(l.index) {
            Ok(mig) => mig,
            Err(NvmlError::GpuLost) => return Err(NvmlError::GpuLost),
            Err(e) => {
                refused.push(format!("MIG device {}: {e}", l.index));
                continue;
            }
        };
        let memory = match memory::read(nvml, &mig, fallback) {
            Ok((m, _)) => Some(m),
            Err(NvmlError::GpuLost) => return Err(NvmlError::GpuLost),
            Err(e) => {
                refused.push(format!("MIG device {}: memory: {e}", l.index));
                None
            }
        };
        // Most drivers answer NOT_SUPPORTED: per-instance utilization is then absent, never 0.
        let utilization = mig
            .utilization_rates()
            .ok()
            .map(|u| Percent(f64::from(u.gpu)));
        instances.push(MigInstance {
            index: l.index,
            slot: l.slot,
            uuid: l.uuid.clone(),
            memory,
            utilization_gpu_pct: utilization,
        });
    }
    Ok((instances, refused))
}

/// `nvmlDeviceGetGpuInstanceId` and `nvmlDeviceGetComputeInstanceId` of a MIG device handle,
/// which nvml-wrapper 0.13 does not wrap.
fn slot(nvml: &Nvml, mig: &Device<'_>) -> Result<MigSlot, NvmlError> {
    let gi = nvml_sym(nvml.lib().nvmlDeviceGetGpuInstanceId.as_ref())?;
    let ci = nvml_sym(nvml.lib().nvmlDeviceGetComputeInstanceId.as_ref())?;
    let (mut gpu_instance_id, mut compute_instance_id) = (0, 0);
    // SAFETY: `mig` is a handle of this NVML session (it borrows `nvml`, so the library is still
    // initialised), and each out-pointer is a valid, writable `c_uint` for the call to fill.
    unsafe {
        nvml_try(gi(mig.handle(), &mut gpu_instance_id))?;
        nvml_try(ci(mig.handle(), &mut compute_instance_id))?;
    }
    Ok(MigSlot {
        gpu_instance_id,
        compute_instance_id,
    })
}
