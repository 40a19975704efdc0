//! The unversioned NVML functions: init and shutdown, error strings, the driver version, device
//! count and handles, and the per-device readings that have a single generation. Given a MIG
//! device's handle, the uuid is the MIG device's, the name its GPU's, and utilization,
//! temperature and power are `NOT_SUPPORTED` (NVML has no per-instance figures for them).

use crate::abi::codes::*;
use crate::abi::{TEMPERATURE_GPU, Utilization};
use crate::live::{
    handle_for, init, live, round_u32, with_device, with_device_handle, write_c_string, write_out,
};
use std::ffi::{CStr, c_char, c_uint, c_void};

/// `nvmlInit_v2`: reads the script, restarts the clock.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> u32 {
    init()
}

/// `nvmlInitWithFlags`: as `nvmlInit_v2`; the flags are ignored.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> u32 {
    init()
}

/// `nvmlShutdown`: drops the script when the last init is matched.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> u32 {
    let mut guard = live();
    match guard.as_mut() {
        None => ERROR_UNINITIALIZED,
        Some(l) => {
            l.refs = l.refs.saturating_sub(1);
            if l.refs == 0 {
                *guard = None;
            }
            SUCCESS
        }
    }
}

/// `nvmlErrorString`: a static description of a return code.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: u32) -> *const c_char {
    let s: &'static CStr = match result {
        SUCCESS => c"Success",
        ERROR_UNINITIALIZED => c"Uninitialized",
        ERROR_INVALID_ARGUMENT => c"Invalid Argument",
        ERROR_NOT_SUPPORTED => c"Not Supported",
        ERROR_NOT_FOUND => c"Not Found",
        ERROR_INSUFFICIENT_SIZE => c"Insufficient Size",
        ERROR_FUNCTION_NOT_FOUND => c"Function Not Found",
        ERROR_GPU_IS_LOST => c"GPU is lost",
        ERROR_ARGUMENT_VERSION_MISMATCH => c"Argument version mismatch",
        _ => c"Unknown Error",
    };
    s.as_ptr()
}

/// `nvmlSystemGetDriverVersion`.
///
/// # Safety
/// `version` must be valid for `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(version: *mut c_char, length: c_uint) -> u32 {
    let guard = live();
    let Some(l) = guard.as_ref() else {
        return ERROR_UNINITIALIZED;
    };
    match &l.scenario.driver_version {
        None => ERROR_NOT_SUPPORTED,
        // SAFETY: forwarded from the caller.
        Some(v) => unsafe { write_c_string(v, version, length) },
    }
}

/// `nvmlDeviceGetCount_v2`: GPUs only, MIG devices are reached through their GPU.
///
/// # Safety
/// `count` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> u32 {
    let guard = live();
    let Some(l) = guard.as_ref() else {
        return ERROR_UNINITIALIZED;
    };
    // SAFETY: forwarded from the caller.
    unsafe { write_out(count, l.scenario.devices.len() as c_uint) }
}

/// `nvmlDeviceGetHandleByIndex_v2`: the handle is the index plus one, as a pointer.
///
/// # Safety
/// `device` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut *mut c_void,
) -> u32 {
    let index = index as usize;
    // SAFETY: forwarded from the caller.
    with_device(index, |_, _| unsafe {
        write_out(device, handle_for(index))
    })
}

/// `nvmlDeviceGetUUID`: a MIG device's own uuid for its handle.
///
/// # Safety
/// `uuid` must be valid for `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: *mut c_void,
    uuid: *mut c_char,
    length: c_uint,
) -> u32 {
    // SAFETY: forwarded from the caller.
    with_device_handle(device, |d, mig, _| unsafe {
        write_c_string(mig.map_or(&d.uuid, |m| &m.uuid), uuid, length)
    })
}

/// `nvmlDeviceGetName`: a MIG device answers its GPU's name.
///
/// # Safety
/// `name` must be valid for `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: *mut c_void,
    name: *mut c_char,
    length: c_uint,
) -> u32 {
    // SAFETY: forwarded from the caller.
    with_device_handle(device, |d, _, _| unsafe {
        write_c_string(&d.name, name, length)
    })
}

/// `nvmlDeviceGetUtilizationRates`.
///
/// # Safety
/// `utilization` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    device: *mut c_void,
    utilization: *mut Utilization,
) -> u32 {
    with_device_handle(device, |d, mig, t| {
        if mig.is_some() {
            return ERROR_NOT_SUPPORTED;
        }
        let s = d.sample_at(t);
        if s.util_gpu.is_none() && s.util_mem.is_none() {
            return ERROR_NOT_SUPPORTED;
        }
        let value = Utilization {
            gpu: round_u32(s.util_gpu.unwrap_or(0.0)),
            memory: round_u32(s.util_mem.unwrap_or(0.0)),
        };
        // SAFETY: forwarded from the caller.
        unsafe { write_out(utilization, value) }
    })
}

/// `nvmlDeviceGetTemperature` (GPU sensor only), in degrees C.
///
/// # Safety
/// `temp` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: *mut c_void,
    sensor: c_uint,
    temp: *mut c_uint,
) -> u32 {
    if sensor != TEMPERATURE_GPU {
        return ERROR_INVALID_ARGUMENT;
    }
    with_device_handle(device, |d, mig, t| {
        match d.sample_at(t).temperature_c.filter(|_| mig.is_none()) {
            None => ERROR_NOT_SUPPORTED,
            // SAFETY: forwarded from the caller.
            Some(c) => unsafe { write_out(temp, round_u32(c)) },
        }
    })
}

/// `nvmlDeviceGetPowerUsage`, in milliwatts.
///
/// # Safety
/// `power` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(device: *mut c_void, power: *mut c_uint) -> u32 {
    with_device_handle(device, |d, mig, t| {
        match d.sample_at(t).power_w.filter(|_| mig.is_none()) {
            None => ERROR_NOT_SUPPORTED,
            // SAFETY: forwarded from the caller.
            Some(w) => unsafe { write_out(power, round_u32(w * 1000.0)) },
        }
    })
}

/// `nvmlDeviceGetEnforcedPowerLimit`, in milliwatts.
///
/// # Safety
/// `limit` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(
    device: *mut c_void,
    limit: *mut c_uint,
) -> u32 {
    with_device_handle(device, |d, mig, _| {
        match d.power_limit_w.filter(|_| mig.is_none()) {
            None => ERROR_NOT_SUPPORTED,
            // SAFETY: forwarded from the caller.
            Some(w) => unsafe { write_out(limit, round_u32(w * 1000.0)) },
        }
    })
}
