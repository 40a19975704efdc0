//! The NVML calls that come in generations, in both: memory v2 (`nvmlDeviceGetMemoryInfo_v2`,
//! with `reserved`) and v1 (`nvmlDeviceGetMemoryInfo`), and the process lists `_v3` and `_v2`.
//!
//! Built as `fake-nvml-legacy` (`cfg(fake_nvml_legacy)`) the newer symbols do not exist at all, as
//! on a driver before R510. Otherwise both generations are exported, as on a current driver, and a
//! device's `new_api` switch can make the newer ones fail the call while the older ones answer.
//!
//! Given a MIG device's handle, memory is the MIG device's (its `memory_total_mib`, used by the
//! processes of its GPU instance, nothing reserved) and the process lists hold its processes only.

use crate::abi::codes::*;
#[cfg(not(fake_nvml_legacy))]
use crate::abi::{MEMORY_V2_VERSION, MemoryV2};
use crate::abi::{MemoryV1, NO_INSTANCE, ProcessInfo, VALUE_NOT_AVAILABLE};
use crate::live::{mib_to_bytes, with_device_handle, write_out};
use crate::script::{Device, MigScript, NewApi, ProcessKind};
use std::ffi::{c_uint, c_void};

/// What a newer call answers on this device instead of its reading, if it fails (`new_api`).
fn new_api_failure(d: &Device) -> Option<u32> {
    match d.new_api {
        NewApi::Ok => None,
        NewApi::FunctionNotFound => Some(ERROR_FUNCTION_NOT_FOUND),
        NewApi::Unknown => Some(ERROR_UNKNOWN),
    }
}

/// Device memory at `t` in bytes as v2 splits it; `None` before any used figure is scripted. A
/// MIG device always has one: what its GPU instance's processes use.
struct MemoryBytes {
    total: u64,
    reserved: u64,
    used: u64,
    free: u64,
}

fn memory_bytes(d: &Device, mig: Option<&MigScript>, t: f64) -> Option<MemoryBytes> {
    let (total_mib, reserved_mib, used_mib) = match mig {
        None => (
            d.memory_total_mib,
            d.memory_reserved_mib,
            d.sample_at(t).memory_used_mib?,
        ),
        Some(m) => (
            m.memory_total_mib,
            0.0,
            d.instance_used_mib(m.gpu_instance_id, t),
        ),
    };
    let total = mib_to_bytes(total_mib);
    let reserved = mib_to_bytes(reserved_mib);
    let used = mib_to_bytes(used_mib);
    Some(MemoryBytes {
        total,
        reserved,
        used,
        free: total.saturating_sub(reserved).saturating_sub(used),
    })
}

/// `nvmlDeviceGetMemoryInfo_v2`: checks the struct version like the real library.
///
/// # Safety
/// `memory` must be null or valid for reads and writes of `nvmlMemory_v2_t`.
#[cfg(not(fake_nvml_legacy))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: *mut c_void,
    memory: *mut MemoryV2,
) -> u32 {
    if memory.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null and valid per the caller.
    if unsafe { (*memory).version } != MEMORY_V2_VERSION {
        return ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    with_device_handle(device, |d, mig, t| {
        if let Some(code) = new_api_failure(d) {
            return code;
        }
        let Some(m) = memory_bytes(d, mig, t) else {
            return ERROR_NOT_SUPPORTED;
        };
        let value = MemoryV2 {
            version: MEMORY_V2_VERSION,
            total: m.total,
            reserved: m.reserved,
            free: m.free,
            used: m.used,
        };
        // SAFETY: as above.
        unsafe { write_out(memory, value) }
    })
}

/// `nvmlDeviceGetMemoryInfo` (v1): no reserved figure; `used` includes what v2 calls reserved.
///
/// # Safety
/// `memory` must be null or valid for a write of `nvmlMemory_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    device: *mut c_void,
    memory: *mut MemoryV1,
) -> u32 {
    with_device_handle(device, |d, mig, t| {
        let Some(m) = memory_bytes(d, mig, t) else {
            return ERROR_NOT_SUPPORTED;
        };
        let value = MemoryV1 {
            total: m.total,
            free: m.free,
            used: m.used.saturating_add(m.reserved).min(m.total),
        };
        // SAFETY: forwarded from the caller.
        unsafe { write_out(memory, value) }
    })
}

/// The process list of one kind, with NVML's buffer-size protocol. `newer`: this is a `_v3`
/// call, which fails as the device's `new_api` says. A GPU lists all its processes, a MIG device
/// those in its instance; each carries its instance's ids, `0xFFFFFFFF` for none.
///
/// # Safety
/// `count` must be valid for reads and writes; `infos` null or valid for `*count` entries.
unsafe fn running_processes(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
    kind: ProcessKind,
    newer: bool,
) -> u32 {
    if count.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    with_device_handle(device, |d, mig, t| {
        if let Some(code) = new_api_failure(d).filter(|_| newer) {
            return code;
        }
        let list: Vec<ProcessInfo> = d
            .sample_at(t)
            .processes
            .iter()
            .filter(|p| p.kind == kind)
            .filter(|p| mig.is_none_or(|m| p.instance == Some(m.ids())))
            .map(|p| ProcessInfo {
                pid: p.pid,
                used_gpu_memory: p.used_mib.map_or(VALUE_NOT_AVAILABLE, mib_to_bytes),
                gpu_instance_id: p.instance.map_or(NO_INSTANCE, |i| i.gpu_instance_id),
                compute_instance_id: p.instance.map_or(NO_INSTANCE, |i| i.compute_instance_id),
            })
            .collect();
        // SAFETY: `count` is non-null and valid per the caller.
        let capacity = unsafe { *count } as usize;
        let needed = list.len() as c_uint;
        // SAFETY: as above.
        unsafe { *count = needed };
        if list.is_empty() {
            return SUCCESS;
        }
        if infos.is_null() || capacity < list.len() {
            return ERROR_INSUFFICIENT_SIZE;
        }
        // SAFETY: `infos` holds `capacity >= list.len()` entries per the caller.
        unsafe { std::ptr::copy_nonoverlapping(list.as_ptr(), infos, list.len()) };
        SUCCESS
    })
}

/// `nvmlDeviceGetComputeRunningProcesses_v3`.
///
/// # Safety
/// `count` must be valid for reads and writes; `infos` null or valid for `*count` entries.
#[cfg(not(fake_nvml_legacy))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { running_processes(device, count, infos, ProcessKind::Compute, true) }
}

/// `nvmlDeviceGetGraphicsRunningProcesses_v3`.
///
/// # Safety
/// `count` must be valid for reads and writes; `infos` null or valid for `*count` entries.
#[cfg(not(fake_nvml_legacy))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v3(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { running_processes(device, count, infos, ProcessKind::Graphics, true) }
}

/// `nvmlDeviceGetComputeRunningProcesses_v2` (`nvmlProcessInfo_v2_t`, the same layout).
///
/// # Safety
/// `count` must be valid for reads and writes; `infos` null or valid for `*count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v2(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { running_processes(device, count, infos, ProcessKind::Compute, false) }
}

/// `nvmlDeviceGetGraphicsRunningProcesses_v2`.
///
/// # Safety
/// `count` must be valid for reads and writes; `infos` null or valid for `*count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v2(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { running_processes(device, count, infos, ProcessKind::Graphics, false) }
}
