//! The MIG (Multi-Instance GPU) functions: a GPU's MIG mode and MIG devices, a MIG device's
//! parent and instance ids. A script's `mig` list makes its GPU MIG-enabled.
//!
//! Calls meant for a GPU answer `INVALID_ARGUMENT` given a MIG device's handle, and calls meant
//! for a MIG device answer it given a GPU's (nvml.h: "if `device` ... is invalid").
//! `nvmlDeviceGetMaxMigDeviceCount` answers 0 on a GPU without MIG, as nvml.h documents.

use crate::abi::codes::*;
use crate::abi::{DEVICE_MIG_ENABLE, MAX_MIG_DEVICES};
use crate::live::{Handle, decode_handle, handle_for, mig_handle_for, with_handle, write_out};
use crate::script::{Device, MigScript};
use std::ffi::{c_uint, c_void};

/// Runs `f` on a GPU's handle (with the GPU's index); a MIG device's answers `INVALID_ARGUMENT`.
fn with_gpu(device: *mut c_void, f: impl FnOnce(usize, &Device) -> u32) -> u32 {
    let handle = decode_handle(device);
    with_handle(handle, |d, _, _| match handle {
        Handle::Gpu(index) => f(index, d),
        Handle::Mig { .. } => ERROR_INVALID_ARGUMENT,
    })
}

/// Runs `f` on a MIG device's handle (with its GPU's index); a GPU's answers `INVALID_ARGUMENT`.
fn with_mig(device: *mut c_void, f: impl FnOnce(usize, &MigScript) -> u32) -> u32 {
    let handle = decode_handle(device);
    with_handle(handle, |_, mig, _| match (handle, mig) {
        (Handle::Mig { parent, .. }, Some(m)) => f(parent, m),
        _ => ERROR_INVALID_ARGUMENT,
    })
}

/// `nvmlDeviceGetMigMode`: enabled now and after the next reset for a GPU with `mig`,
/// `NOT_SUPPORTED` for one without.
///
/// # Safety
/// `current` and `pending` must each be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: *mut c_void,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> u32 {
    with_gpu(device, |_, d| {
        if d.mig.is_none() {
            return ERROR_NOT_SUPPORTED;
        }
        if current.is_null() || pending.is_null() {
            return ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: both non-null and valid per the caller.
        unsafe {
            write_out(current, DEVICE_MIG_ENABLE);
            write_out(pending, DEVICE_MIG_ENABLE)
        }
    })
}

/// `nvmlDeviceGetMaxMigDeviceCount`: 7 on a GPU in MIG mode, 0 on one without.
///
/// # Safety
/// `count` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(
    device: *mut c_void,
    count: *mut c_uint,
) -> u32 {
    with_gpu(device, |_, d| {
        let max = if d.mig.is_some() { MAX_MIG_DEVICES } else { 0 };
        // SAFETY: forwarded from the caller.
        unsafe { write_out(count, max as c_uint) }
    })
}

/// `nvmlDeviceGetMigDeviceHandleByIndex`: MIG device `index` of a GPU in the script's order;
/// `NOT_FOUND` for an index below the maximum that the script leaves empty, `INVALID_ARGUMENT`
/// from the maximum (7, or 0 on a GPU without MIG) on.
///
/// # Safety
/// `mig_device` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    device: *mut c_void,
    index: c_uint,
    mig_device: *mut *mut c_void,
) -> u32 {
    let index = index as usize;
    with_gpu(device, |parent, d| {
        let Some(mig) = &d.mig else {
            return ERROR_INVALID_ARGUMENT;
        };
        if index >= MAX_MIG_DEVICES {
            return ERROR_INVALID_ARGUMENT;
        }
        if index >= mig.len() {
            return ERROR_NOT_FOUND;
        }
        // SAFETY: forwarded from the caller.
        unsafe { write_out(mig_device, mig_handle_for(parent, index)) }
    })
}

/// `nvmlDeviceIsMigDeviceHandle`: 1 for a MIG device's handle, 0 for a GPU's.
///
/// # Safety
/// `is_mig_device` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceIsMigDeviceHandle(
    device: *mut c_void,
    is_mig_device: *mut c_uint,
) -> u32 {
    with_handle(decode_handle(device), |_, mig, _| {
        // SAFETY: forwarded from the caller.
        unsafe { write_out(is_mig_device, c_uint::from(mig.is_some())) }
    })
}

/// `nvmlDeviceGetDeviceHandleFromMigDeviceHandle`: a MIG device's GPU.
///
/// # Safety
/// `device` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    mig_device: *mut c_void,
    device: *mut *mut c_void,
) -> u32 {
    // SAFETY: forwarded from the caller.
    with_mig(mig_device, |parent, _| unsafe {
        write_out(device, handle_for(parent))
    })
}

/// `nvmlDeviceGetGpuInstanceId`: a MIG device's GPU instance id.
///
/// # Safety
/// `id` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceId(device: *mut c_void, id: *mut c_uint) -> u32 {
    // SAFETY: forwarded from the caller.
    with_mig(device, |_, m| unsafe { write_out(id, m.gpu_instance_id) })
}

/// `nvmlDeviceGetComputeInstanceId`: a MIG device's compute instance id.
///
/// # Safety
/// `id` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeInstanceId(
    device: *mut c_void,
    id: *mut c_uint,
) -> u32 {
    // SAFETY: forwarded from the caller.
    with_mig(device, |_, m| unsafe {
        write_out(id, m.compute_instance_id)
    })
}
