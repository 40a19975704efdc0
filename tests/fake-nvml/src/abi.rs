//! NVML's C ABI as far as the fake speaks it: return codes and the structs it fills.

use std::ffi::c_uint;

/// NVML return codes (`nvmlReturn_t` in nvml.h).
pub mod codes {
    pub const SUCCESS: u32 = 0;
    pub const ERROR_UNINITIALIZED: u32 = 1;
    pub const ERROR_INVALID_ARGUMENT: u32 = 2;
    pub const ERROR_NOT_SUPPORTED: u32 = 3;
    pub const ERROR_NOT_FOUND: u32 = 6;
    pub const ERROR_INSUFFICIENT_SIZE: u32 = 7;
    pub const ERROR_FUNCTION_NOT_FOUND: u32 = 13;
    pub const ERROR_GPU_IS_LOST: u32 = 15;
    pub const ERROR_ARGUMENT_VERSION_MISMATCH: u32 = 25;
    pub const ERROR_UNKNOWN: u32 = 999;
}

/// `NVML_VALUE_NOT_AVAILABLE` as a `c_ulonglong`: "used memory not known".
pub const VALUE_NOT_AVAILABLE: u64 = u64::MAX;

/// `NVML_DEVICE_MIG_ENABLE`, what `nvmlDeviceGetMigMode` reports on a GPU in MIG mode.
pub const DEVICE_MIG_ENABLE: c_uint = 1;

/// The most MIG devices a GPU holds (`nvmlDeviceGetMaxMigDeviceCount` on an A100 or H100).
pub const MAX_MIG_DEVICES: usize = 7;

/// The `gpuInstanceId` / `computeInstanceId` of a process that is not in a MIG instance.
pub const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

/// `NVML_TEMPERATURE_GPU`, the only sensor NVML has.
pub const TEMPERATURE_GPU: c_uint = 0;

/// `nvmlMemory_t`, what `nvmlDeviceGetMemoryInfo` (v1) fills: no version, no reserved.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemoryV1 {
    pub total: u64,
    pub free: u64,
    pub used: u64,
}

/// `nvmlMemory_v2_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemoryV2 {
    pub version: c_uint,
    pub total: u64,
    pub reserved: u64,
    pub free: u64,
    pub used: u64,
}

/// `NVML_STRUCT_VERSION(Memory, 2)`: the size of the struct with the version in the top byte.
pub const MEMORY_V2_VERSION: c_uint = (size_of::<MemoryV2>() as c_uint) | (2 << 24);

/// `nvmlUtilization_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Utilization {
    pub gpu: c_uint,
    pub memory: c_uint,
}

/// `nvmlProcessInfo_t` (= `nvmlProcessInfo_v2_t`), what the `_v3` process-list calls fill, and
/// the `_v2` ones too (`nvmlProcessInfo_v2_t` has the same layout).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProcessInfo {
    pub pid: c_uint,
    pub used_gpu_memory: u64,
    pub gpu_instance_id: c_uint,
    pub compute_instance_id: c_uint,
}
