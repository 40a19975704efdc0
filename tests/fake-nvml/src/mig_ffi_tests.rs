//! The MIG calls, and the per-device calls given MIG handles, called through the C layer.

use crate::abi::codes::*;
use crate::abi::{MEMORY_V2_VERSION, MemoryV1, MemoryV2, ProcessInfo};
use crate::exports::*;
use crate::ffi_tests::use_script;
use crate::live::{handle_for, mig_handle_for};
use crate::mig::*;
use crate::versioned::*;
use std::ffi::{CStr, c_char, c_uint, c_void};

const SCRIPT: &str = r#"{"devices":[
  {"name":"NVIDIA A100-SXM4-40GB","uuid":"GPU-a","memory_total_mib":40960,"power_limit_w":400,
   "memory_reserved_mib":512,
   "mig":[{"gpu_instance_id":1,"compute_instance_id":0,"uuid":"MIG-one","memory_total_mib":20096},
          {"gpu_instance_id":2,"compute_instance_id":0,"uuid":"MIG-two","memory_total_mib":9856},
          {"gpu_instance_id":3,"compute_instance_id":0,"uuid":"MIG-3a","memory_total_mib":4864},
          {"gpu_instance_id":3,"compute_instance_id":1,"uuid":"MIG-3b","memory_total_mib":4864}],
   "timeline":[{"at_s":0,"memory_used_mib":5000,"util_gpu":10,"temperature_c":40,"power_w":100,
     "processes":[{"pid":11,"used_mib":3000,"gpu_instance_id":1},
                  {"pid":12,"used_mib":1000,"gpu_instance_id":2,"compute_instance_id":0},
                  {"pid":13,"used_mib":500,"gpu_instance_id":1,"kind":"graphics"},
                  {"pid":14,"used_mib":7},
                  {"pid":15,"used_mib":100,"gpu_instance_id":3,"compute_instance_id":1},
                  {"pid":16,"gpu_instance_id":3,"compute_instance_id":0}]}]},
  {"name":"plain","uuid":"GPU-b","memory_total_mib":1000,
   "timeline":[{"at_s":0,"memory_used_mib":1,"processes":[{"pid":5,"used_mib":1}]}]},
  {"name":"empty","uuid":"GPU-c","memory_total_mib":1000,"mig":[]},
  {"name":"lost","uuid":"GPU-d","memory_total_mib":100,"lost_at_s":0,
   "mig":[{"gpu_instance_id":1,"compute_instance_id":0,"uuid":"MIG-lost","memory_total_mib":10}]}]}"#;

type ListFn = unsafe extern "C" fn(*mut c_void, *mut c_uint, *mut ProcessInfo) -> u32;

/// A process list as `(pid, used bytes, gpu instance, compute instance)`.
fn processes(list: ListFn, device: *mut c_void) -> Vec<(u32, u64, u32, u32)> {
    let blank = ProcessInfo {
        pid: 0,
        used_gpu_memory: 0,
        gpu_instance_id: 0,
        compute_instance_id: 0,
    };
    let mut infos = [blank; 8];
    let mut count: c_uint = 8;
    // SAFETY: `infos` holds `count` entries.
    let code = unsafe { list(device, &mut count, infos.as_mut_ptr()) };
    assert_eq!(code, SUCCESS);
    infos[..count as usize]
        .iter()
        .map(|p| {
            (
                p.pid,
                p.used_gpu_memory,
                p.gpu_instance_id,
                p.compute_instance_id,
            )
        })
        .collect()
}

/// Memory in MiB: v2's `[total, reserved, used, free]`, then v1's `[total, used, free]`.
fn memory(device: *mut c_void) -> ([u64; 4], [u64; 3]) {
    let mut v2 = MemoryV2 {
        version: MEMORY_V2_VERSION,
        total: 0,
        reserved: 0,
        free: 0,
        used: 0,
    };
    let mut v1 = MemoryV1 {
        total: 0,
        free: 0,
        used: 0,
    };
    // SAFETY: both point at structs of the right layout.
    unsafe {
        assert_eq!(nvmlDeviceGetMemoryInfo_v2(device, &mut v2), SUCCESS);
        assert_eq!(nvmlDeviceGetMemoryInfo(device, &mut v1), SUCCESS);
    }
    (
        [v2.total, v2.reserved, v2.used, v2.free].map(|b| b >> 20),
        [v1.total, v1.used, v1.free].map(|b| b >> 20),
    )
}

fn uuid(device: *mut c_void) -> Result<String, u32> {
    let mut buf = [0 as c_char; 96];
    // SAFETY: the buffer holds 96 bytes.
    match unsafe { nvmlDeviceGetUUID(device, buf.as_mut_ptr(), 96) } {
        // SAFETY: the fake wrote a NUL-terminated string.
        SUCCESS => Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()),
        code => Err(code),
    }
}

fn mig_device(parent: *mut c_void, index: c_uint) -> Result<*mut c_void, u32> {
    let mut h = std::ptr::null_mut();
    // SAFETY: `h` is valid for a write.
    match unsafe { nvmlDeviceGetMigDeviceHandleByIndex(parent, index, &mut h) } {
        SUCCESS => Ok(h),
        code => Err(code),
    }
}

fn ids(device: *mut c_void) -> (u32, u32, u32, u32) {
    let (mut gi, mut ci) = (u32::MAX, u32::MAX);
    // SAFETY: both valid for a write.
    unsafe {
        (
            nvmlDeviceGetGpuInstanceId(device, &mut gi),
            gi,
            nvmlDeviceGetComputeInstanceId(device, &mut ci),
            ci,
        )
    }
}

#[test]
fn mig_mode_count_and_handles() {
    let (_guard, path) = use_script("mig_mode_count_and_handles", SCRIPT);
    assert_eq!(nvmlInit_v2(), SUCCESS);
    let (gpu, plain, empty) = (handle_for(0), handle_for(1), handle_for(2));
    let mode = |h| {
        let (mut current, mut pending) = (9, 9);
        // SAFETY: both valid for a write.
        let code = unsafe { nvmlDeviceGetMigMode(h, &mut current, &mut pending) };
        (code, current, pending)
    };
    let max = |h| {
        let mut n = 99;
        // SAFETY: valid for a write.
        (unsafe { nvmlDeviceGetMaxMigDeviceCount(h, &mut n) }, n)
    };
    let is_mig = |h| {
        let mut m = 9;
        // SAFETY: valid for a write.
        (unsafe { nvmlDeviceIsMigDeviceHandle(h, &mut m) }, m)
    };
    unsafe {
        let mut n = 0;
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), SUCCESS);
        assert_eq!(n, 4, "GPUs only, not their MIG devices");
        let mut one = 0;
        assert_eq!(
            nvmlDeviceGetMigMode(gpu, &mut one, std::ptr::null_mut()),
            ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            CStr::from_ptr(nvmlErrorString(ERROR_NOT_FOUND)).to_str(),
            Ok("Not Found")
        );
    }
    assert_eq!(mode(gpu), (SUCCESS, 1, 1));
    assert_eq!(
        mode(empty),
        (SUCCESS, 1, 1),
        "an empty mig list is MIG mode too"
    );
    assert_eq!(mode(plain), (ERROR_NOT_SUPPORTED, 9, 9));
    assert_eq!(
        (max(gpu), max(empty), max(plain)),
        ((SUCCESS, 7), (SUCCESS, 7), (SUCCESS, 0))
    );

    let migs: Vec<*mut c_void> = (0..4)
        .map(|i| mig_device(gpu, i).expect("scripted MIG device"))
        .collect();
    let mut all = migs.clone();
    all.extend((0..4).map(handle_for));
    for (i, a) in all.iter().enumerate() {
        assert!(!all[i + 1..].contains(a), "handle {a:?} is not distinct");
    }
    assert_eq!(mig_device(gpu, 4), Err(ERROR_NOT_FOUND));
    assert_eq!(mig_device(gpu, 6), Err(ERROR_NOT_FOUND));
    assert_eq!(mig_device(gpu, 7), Err(ERROR_INVALID_ARGUMENT));
    assert_eq!(mig_device(empty, 0), Err(ERROR_NOT_FOUND));
    assert_eq!(mig_device(plain, 0), Err(ERROR_INVALID_ARGUMENT));
    assert_eq!(mig_device(migs[0], 0), Err(ERROR_INVALID_ARGUMENT));
    // SAFETY: a null out pointer is refused, not written.
    let null_out = unsafe { nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0, std::ptr::null_mut()) };
    assert_eq!(null_out, ERROR_INVALID_ARGUMENT);

    assert_eq!((is_mig(gpu), is_mig(plain)), ((SUCCESS, 0), (SUCCESS, 0)));
    assert_eq!(is_mig(migs[1]), (SUCCESS, 1));
    // Parent-only calls refuse a MIG handle.
    assert_eq!(mode(migs[0]).0, ERROR_INVALID_ARGUMENT);
    assert_eq!(max(migs[0]).0, ERROR_INVALID_ARGUMENT);

    let parent = |h| {
        let mut p = std::ptr::null_mut();
        // SAFETY: valid for a write.
        (
            unsafe { nvmlDeviceGetDeviceHandleFromMigDeviceHandle(h, &mut p) },
            p,
        )
    };
    assert_eq!(parent(migs[3]), (SUCCESS, gpu));
    assert_eq!(parent(gpu).0, ERROR_INVALID_ARGUMENT);
    assert_eq!(ids(migs[0]), (SUCCESS, 1, SUCCESS, 0));
    assert_eq!(ids(migs[1]), (SUCCESS, 2, SUCCESS, 0));
    assert_eq!(ids(migs[3]), (SUCCESS, 3, SUCCESS, 1));
    assert_eq!(
        ids(gpu),
        (
            ERROR_INVALID_ARGUMENT,
            u32::MAX,
            ERROR_INVALID_ARGUMENT,
            u32::MAX
        )
    );

    // Handles naming nothing in the script are refused, never read past a list.
    for bad in [
        mig_handle_for(0, 4),
        mig_handle_for(0, 7),
        mig_handle_for(1, 0),
        mig_handle_for(2, 0),
        mig_handle_for(9, 0),
        std::ptr::null_mut(),
    ] {
        assert_eq!(uuid(bad), Err(ERROR_INVALID_ARGUMENT), "{bad:?}");
        assert_eq!(is_mig(bad).0, ERROR_INVALID_ARGUMENT, "{bad:?}");
        assert_eq!(ids(bad).0, ERROR_INVALID_ARGUMENT, "{bad:?}");
    }

    // A lost GPU's MIG devices are lost with it.
    let (lost, lost_mig) = (handle_for(3), mig_handle_for(3, 0));
    assert_eq!(mig_device(lost, 0), Err(ERROR_GPU_IS_LOST));
    assert_eq!(mode(lost).0, ERROR_GPU_IS_LOST);
    assert_eq!(uuid(lost_mig), Err(ERROR_GPU_IS_LOST));
    assert_eq!(is_mig(lost_mig).0, ERROR_GPU_IS_LOST);
    assert_eq!(ids(lost_mig).0, ERROR_GPU_IS_LOST);
    assert_eq!(parent(lost_mig).0, ERROR_GPU_IS_LOST);

    assert_eq!(nvmlShutdown(), SUCCESS);
    assert_eq!(mode(gpu).0, ERROR_UNINITIALIZED);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn mig_devices_read_their_own_slice() {
    let (_guard, path) = use_script("mig_devices_read_their_own_slice", SCRIPT);
    assert_eq!(nvmlInit_v2(), SUCCESS);
    let gpu = handle_for(0);
    let migs: Vec<*mut c_void> = (0..4)
        .map(|i| mig_device(gpu, i).expect("scripted MIG device"))
        .collect();

    assert_eq!(uuid(gpu).as_deref(), Ok("GPU-a"));
    let names: Vec<String> = migs.iter().map(|&h| uuid(h).expect("uuid")).collect();
    assert_eq!(names, ["MIG-one", "MIG-two", "MIG-3a", "MIG-3b"]);
    let mut buf = [0 as c_char; 96];
    // SAFETY: the buffer holds 96 bytes and the fake NUL-terminates.
    unsafe {
        assert_eq!(nvmlDeviceGetName(migs[1], buf.as_mut_ptr(), 96), SUCCESS);
        assert_eq!(
            CStr::from_ptr(buf.as_ptr()).to_str(),
            Ok("NVIDIA A100-SXM4-40GB")
        );
    }

    // Memory: the GPU's as scripted; a MIG device's total is its own, used what its GPU
    // instance's processes use (both lists), nothing reserved (the GPU's reserve is not its).
    assert_eq!(
        memory(gpu),
        ([40960, 512, 5000, 35448], [40960, 5512, 35448])
    );
    assert_eq!(
        memory(migs[0]),
        ([20096, 0, 3500, 16596], [20096, 3500, 16596])
    );
    assert_eq!(memory(migs[1]), ([9856, 0, 1000, 8856], [9856, 1000, 8856]));
    // Compute instances 0 and 1 of GPU instance 3 share its memory.
    assert_eq!(memory(migs[2]), memory(migs[3]));
    assert_eq!(memory(migs[2]).0, [4864, 0, 100, 4764]);

    // Per-instance utilization, temperature and power: not supported; the GPU still answers.
    let mut u = crate::abi::Utilization { gpu: 0, memory: 0 };
    let mut x = 0;
    unsafe {
        assert_eq!(nvmlDeviceGetUtilizationRates(gpu, &mut u), SUCCESS);
        assert_eq!(u.gpu, 10);
        assert_eq!(
            nvmlDeviceGetUtilizationRates(migs[0], &mut u),
            ERROR_NOT_SUPPORTED
        );
        assert_eq!(nvmlDeviceGetTemperature(gpu, 0, &mut x), SUCCESS);
        assert_eq!(
            nvmlDeviceGetTemperature(migs[0], 0, &mut x),
            ERROR_NOT_SUPPORTED
        );
        assert_eq!(nvmlDeviceGetPowerUsage(gpu, &mut x), SUCCESS);
        assert_eq!(
            nvmlDeviceGetPowerUsage(migs[0], &mut x),
            ERROR_NOT_SUPPORTED
        );
        assert_eq!(nvmlDeviceGetEnforcedPowerLimit(gpu, &mut x), SUCCESS);
        assert_eq!(
            nvmlDeviceGetEnforcedPowerLimit(migs[0], &mut x),
            ERROR_NOT_SUPPORTED
        );
    }

    // The GPU lists every process with its instance's ids; a MIG device only its own.
    const NONE: u32 = u32::MAX;
    let na = u64::MAX;
    let all = vec![
        (11, 3000 << 20, 1, 0),
        (12, 1000 << 20, 2, 0),
        (14, 7 << 20, NONE, NONE),
        (15, 100 << 20, 3, 1),
        (16, na, 3, 0),
    ];
    assert_eq!(processes(nvmlDeviceGetComputeRunningProcesses_v3, gpu), all);
    assert_eq!(processes(nvmlDeviceGetComputeRunningProcesses_v2, gpu), all);
    let graphics = vec![(13, 500 << 20, 1, 0)];
    assert_eq!(
        processes(nvmlDeviceGetGraphicsRunningProcesses_v3, gpu),
        graphics
    );
    assert_eq!(
        processes(nvmlDeviceGetGraphicsRunningProcesses_v2, gpu),
        graphics
    );
    for list in [
        nvmlDeviceGetComputeRunningProcesses_v3 as ListFn,
        nvmlDeviceGetComputeRunningProcesses_v2,
    ] {
        assert_eq!(processes(list, migs[0]), [(11, 3000 << 20, 1, 0)]);
        assert_eq!(processes(list, migs[1]), [(12, 1000 << 20, 2, 0)]);
        assert_eq!(processes(list, migs[2]), [(16, na, 3, 0)]);
        assert_eq!(processes(list, migs[3]), [(15, 100 << 20, 3, 1)]);
    }
    assert_eq!(
        processes(nvmlDeviceGetGraphicsRunningProcesses_v3, migs[0]),
        graphics
    );
    assert_eq!(
        processes(nvmlDeviceGetGraphicsRunningProcesses_v2, migs[1]),
        []
    );
    // The size protocol counts the MIG device's processes only.
    let mut count = 0;
    // SAFETY: `count` is valid; a null list asks for the size.
    let code = unsafe {
        nvmlDeviceGetComputeRunningProcesses_v3(migs[0], &mut count, std::ptr::null_mut())
    };
    assert_eq!((code, count), (ERROR_INSUFFICIENT_SIZE, 1));
    assert_eq!(
        processes(nvmlDeviceGetComputeRunningProcesses_v3, handle_for(1)),
        [(5, 1 << 20, NONE, NONE)]
    );

    assert_eq!(nvmlShutdown(), SUCCESS);
    let _ = std::fs::remove_file(&path);
}
