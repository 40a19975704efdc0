//! The C layer, called directly. The script lives in a process-global, so every test calling it
//! takes [`use_script`]'s lock first (the MIG calls' tests are in `mig_ffi_tests.rs`).

use crate::abi::codes::*;
use crate::abi::{MEMORY_V2_VERSION, MemoryV1, MemoryV2, ProcessInfo};
use crate::exports::*;
use crate::live::{SCRIPT_ENV, handle_for};
use crate::versioned::*;
use std::ffi::{CStr, c_char};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

static GLOBAL: Mutex<()> = Mutex::new(());

/// Takes the lock on the fake's global state, undoes any init a failed test left, writes `json`
/// to a script file named after `name` and points `FAKE_NVML_SCRIPT` at it. Keep the guard for
/// the whole test; the path is the script's.
pub(crate) fn use_script(name: &str, json: &str) -> (MutexGuard<'static, ()>, PathBuf) {
    let guard = GLOBAL.lock().unwrap_or_else(PoisonError::into_inner);
    while nvmlShutdown() == SUCCESS {}
    let dir = std::env::temp_dir().join(format!("fake-nvml-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, json).expect("write script");
    // SAFETY: only the tests holding GLOBAL touch the environment or the fake's state.
    unsafe { std::env::set_var(SCRIPT_ENV, &path) };
    (guard, path)
}

#[test]
fn answers_like_nvml() {
    let (_guard, path) = use_script(
        "answers_like_nvml",
        r#"{"driver_version":"555.42","devices":[
          {"name":"A","uuid":"GPU-a","memory_total_mib":1000,"memory_reserved_mib":10,
           "power_limit_w":300,
           "timeline":[{"at_s":0,"memory_used_mib":100,"util_gpu":40,"util_mem":5,
             "temperature_c":50,"power_w":123.4,
             "processes":[{"pid":7,"used_mib":60},{"pid":8},{"pid":9,"used_mib":1,"kind":"graphics"}]}]},
          {"name":"B","uuid":"GPU-b","memory_total_mib":1,"lost_at_s":0},
          {"name":"C","uuid":"GPU-c","memory_total_mib":100,"new_api":"function_not_found",
           "timeline":[{"at_s":0,"memory_used_mib":1,"processes":[{"pid":5,"used_mib":1}]}]}]}"#,
    );
    assert_eq!(nvmlInit_v2(), SUCCESS);
    unsafe {
        let mut n = 0;
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), SUCCESS);
        assert_eq!(n, 3);
        let mut buf = [0 as c_char; 96];
        assert_eq!(nvmlSystemGetDriverVersion(buf.as_mut_ptr(), 96), SUCCESS);
        assert_eq!(CStr::from_ptr(buf.as_ptr()).to_str(), Ok("555.42"));
        assert_eq!(
            nvmlSystemGetDriverVersion(buf.as_mut_ptr(), 3),
            ERROR_INSUFFICIENT_SIZE
        );

        let mut h = std::ptr::null_mut();
        assert_eq!(nvmlDeviceGetHandleByIndex_v2(0, &mut h), SUCCESS);
        assert_eq!(nvmlDeviceGetUUID(h, buf.as_mut_ptr(), 96), SUCCESS);
        assert_eq!(CStr::from_ptr(buf.as_ptr()).to_str(), Ok("GPU-a"));

        let mut m = MemoryV2 {
            version: 0,
            total: 0,
            reserved: 0,
            free: 0,
            used: 0,
        };
        assert_eq!(
            nvmlDeviceGetMemoryInfo_v2(h, &mut m),
            ERROR_ARGUMENT_VERSION_MISMATCH
        );
        m.version = MEMORY_V2_VERSION;
        assert_eq!(nvmlDeviceGetMemoryInfo_v2(h, &mut m), SUCCESS);
        assert_eq!(m.total, 1000 << 20);
        assert_eq!(m.used, 100 << 20);
        assert_eq!(m.reserved, 10 << 20);
        assert_eq!(m.free, 890 << 20);
        let mut v1 = MemoryV1 {
            total: 0,
            free: 0,
            used: 0,
        };
        assert_eq!(nvmlDeviceGetMemoryInfo(h, &mut v1), SUCCESS);
        // v1 has no reserved: it counts it in used.
        assert_eq!(
            (v1.total, v1.used, v1.free),
            (1000 << 20, 110 << 20, 890 << 20)
        );

        let mut p = 0;
        assert_eq!(nvmlDeviceGetPowerUsage(h, &mut p), SUCCESS);
        assert_eq!(p, 123_400);
        assert_eq!(nvmlDeviceGetEnforcedPowerLimit(h, &mut p), SUCCESS);
        assert_eq!(p, 300_000);
        assert_eq!(
            nvmlDeviceGetTemperature(h, 1, &mut p),
            ERROR_INVALID_ARGUMENT
        );

        let mut count = 0;
        assert_eq!(
            nvmlDeviceGetComputeRunningProcesses_v3(h, &mut count, std::ptr::null_mut()),
            ERROR_INSUFFICIENT_SIZE
        );
        assert_eq!(count, 2);
        let mut infos = vec![
            ProcessInfo {
                pid: 0,
                used_gpu_memory: 0,
                gpu_instance_id: 0,
                compute_instance_id: 0
            };
            5
        ];
        count = 1;
        assert_eq!(
            nvmlDeviceGetComputeRunningProcesses_v3(h, &mut count, infos.as_mut_ptr()),
            ERROR_INSUFFICIENT_SIZE
        );
        count = 5;
        assert_eq!(
            nvmlDeviceGetComputeRunningProcesses_v3(h, &mut count, infos.as_mut_ptr()),
            SUCCESS
        );
        assert_eq!(count, 2);
        assert_eq!((infos[0].pid, infos[0].used_gpu_memory), (7, 60 << 20));
        assert_eq!((infos[1].pid, infos[1].used_gpu_memory), (8, u64::MAX));
        // Not in MIG mode: no instance, as NVML says.
        assert_eq!(
            (infos[0].gpu_instance_id, infos[0].compute_instance_id),
            (u32::MAX, u32::MAX)
        );
        count = 5;
        assert_eq!(
            nvmlDeviceGetGraphicsRunningProcesses_v3(h, &mut count, infos.as_mut_ptr()),
            SUCCESS
        );
        assert_eq!((count, infos[0].pid), (1, 9));
        count = 5;
        assert_eq!(
            nvmlDeviceGetComputeRunningProcesses_v2(h, &mut count, infos.as_mut_ptr()),
            SUCCESS
        );
        assert_eq!((count, infos[0].pid, infos[1].pid), (2, 7, 8));

        // `new_api`: the newer calls fail, the older ones answer.
        let c = handle_for(2);
        m.version = MEMORY_V2_VERSION;
        assert_eq!(
            nvmlDeviceGetMemoryInfo_v2(c, &mut m),
            ERROR_FUNCTION_NOT_FOUND
        );
        assert_eq!(nvmlDeviceGetMemoryInfo(c, &mut v1), SUCCESS);
        assert_eq!(v1.used, 1 << 20);
        count = 5;
        assert_eq!(
            nvmlDeviceGetComputeRunningProcesses_v3(c, &mut count, infos.as_mut_ptr()),
            ERROR_FUNCTION_NOT_FOUND
        );
        assert_eq!(
            nvmlDeviceGetComputeRunningProcesses_v2(c, &mut count, infos.as_mut_ptr()),
            SUCCESS
        );
        assert_eq!((count, infos[0].pid), (1, 5));

        assert_eq!(nvmlDeviceGetHandleByIndex_v2(1, &mut h), ERROR_GPU_IS_LOST);
        assert_eq!(
            nvmlDeviceGetName(handle_for(1), buf.as_mut_ptr(), 96),
            ERROR_GPU_IS_LOST
        );
        assert_eq!(
            nvmlDeviceGetHandleByIndex_v2(3, &mut h),
            ERROR_INVALID_ARGUMENT
        );
    }
    assert_eq!(nvmlShutdown(), SUCCESS);
    let mut n = 0;
    assert_eq!(
        unsafe { nvmlDeviceGetCount_v2(&mut n) },
        ERROR_UNINITIALIZED
    );

    std::fs::write(&path, "{").expect("write script");
    assert_eq!(nvmlInit_v2(), ERROR_UNKNOWN);
    let _ = std::fs::remove_file(&path);
}
