//! One device's memory: `nvmlDeviceGetMemoryInfo_v2` (total, used, reserved, free), or v1
//! `nvmlDeviceGetMemoryInfo` (no reserved; its `used` includes what v2 calls reserved) where v2
//! is missing or fails (see [`super::versioned`]).

use super::versioned::{Fallback, Generation};
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::nvmlMemory_t;
use shared::{Bytes, GpuMemory, MemoryApi};

/// The memory of `device`, through v2 or, where the driver lacks it, v1.
pub fn read(
    nvml: &Nvml,
    device: &Device<'_>,
    fallback: &mut Fallback,
) -> Result<(GpuMemory, MemoryApi), NvmlError> {
    let (memory, generation) = fallback.call(
        || {
            device.memory_info().map(|m| GpuMemory {
                total_bytes: Bytes(m.total),
                used_bytes: Bytes(m.used),
                reserved_bytes: Some(Bytes(m.reserved)),
                free_bytes: Bytes(m.free),
            })
        },
        || {
            v1(nvml, device).map(|m| GpuMemory {
                total_bytes: Bytes(m.total),
                used_bytes: Bytes(m.used),
                reserved_bytes: None,
                free_bytes: Bytes(m.free),
            })
        },
    )?;
    let api = match generation {
        Generation::Newer => MemoryApi::V2,
        Generation::Older => MemoryApi::V1,
    };
    Ok((memory, api))
}

/// `nvmlDeviceGetMemoryInfo`, which nvml-wrapper 0.13 does not wrap. A library without the
/// symbol answers `FailedToLoadSymbol`.
fn v1(nvml: &Nvml, device: &Device<'_>) -> Result<nvmlMemory_t, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlDeviceGetMemoryInfo.as_ref())?;
    let mut info = nvmlMemory_t {
        total: 0,
        free: 0,
        used: 0,
    };
    // SAFETY: `device` is a handle of this NVML session (it borrows `nvml`, so the library is
    // still initialised), and `info` is a valid, writable `nvmlMemory_t` for the call to fill.
    nvml_try(unsafe { sym(device.handle(), &mut info) })?;
    Ok(info)
}
