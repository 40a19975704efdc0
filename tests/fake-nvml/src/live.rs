//! The script in force since the latest `nvmlInit`, and the helpers every exported function
//! shares: device handles, the per-device clock (`slow_ms`, `lost_at_s`), out-pointer writes.

use crate::abi::codes::*;
use crate::script::{Device, Scenario, parse};
use std::ffi::{c_char, c_uint, c_void};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The environment variable naming the script.
pub const SCRIPT_ENV: &str = "FAKE_NVML_SCRIPT";

const MIB: f64 = 1024.0 * 1024.0;

/// The script in force and when the clock started.
pub(crate) struct Live {
    pub(crate) scenario: Scenario,
    started: Instant,
    /// nvmlInit calls not yet matched by nvmlShutdown (NVML counts references too).
    pub(crate) refs: u32,
}

static LIVE: Mutex<Option<Live>> = Mutex::new(None);

pub(crate) fn live() -> MutexGuard<'static, Option<Live>> {
    // A panic cannot happen while the lock is held, but never let poisoning cross the C boundary.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads and parses the script named by `FAKE_NVML_SCRIPT`; the message names file and problem.
pub fn load_script_from_env() -> Result<Scenario, String> {
    let path = std::env::var_os(SCRIPT_ENV).ok_or_else(|| {
        format!(
            "{SCRIPT_ENV} is not set: name a script file (docs/testing.md#the-fake-nvml-library)"
        )
    })?;
    let shown = std::path::Path::new(&path).display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read script {shown} ({SCRIPT_ENV}): {e}"))?;
    parse(&text).map_err(|e| format!("bad script {shown} ({SCRIPT_ENV}): {e}"))
}

pub(crate) fn init() -> u32 {
    match load_script_from_env() {
        Ok(scenario) => {
            let mut guard = live();
            let refs = guard.as_ref().map_or(0, |l| l.refs) + 1;
            *guard = Some(Live {
                scenario,
                started: Instant::now(),
                refs,
            });
            SUCCESS
        }
        Err(message) => {
            eprintln!("fake-nvml: nvmlInit failed: {message}");
            ERROR_UNKNOWN
        }
    }
}

/// Decodes a device handle: the device index plus one, as a pointer.
pub(crate) fn handle_index(handle: *mut c_void) -> usize {
    (handle as usize).wrapping_sub(1)
}

pub(crate) fn handle_for(index: usize) -> *mut c_void {
    (index + 1) as *mut c_void
}

/// Runs `f` on device `index` at the current time: sleeps `slow_ms` first (outside the lock), then
/// answers `GPU_IS_LOST` from `lost_at_s` on.
pub(crate) fn with_device(index: usize, f: impl FnOnce(&Device, f64) -> u32) -> u32 {
    let slow_ms = {
        let guard = live();
        let Some(l) = guard.as_ref() else {
            return ERROR_UNINITIALIZED;
        };
        let Some(d) = l.scenario.devices.get(index) else {
            return ERROR_INVALID_ARGUMENT;
        };
        d.slow_ms
    };
    if slow_ms > 0 {
        std::thread::sleep(Duration::from_millis(slow_ms));
    }
    let guard = live();
    let Some(l) = guard.as_ref() else {
        return ERROR_UNINITIALIZED;
    };
    let Some(d) = l.scenario.devices.get(index) else {
        return ERROR_INVALID_ARGUMENT;
    };
    let t = l.started.elapsed().as_secs_f64();
    if d.is_lost_at(t) {
        return ERROR_GPU_IS_LOST;
    }
    f(d, t)
}

/// Copies `s` NUL-terminated into a C buffer of `len` bytes.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes.
pub(crate) unsafe fn write_c_string(s: &str, buf: *mut c_char, len: c_uint) -> u32 {
    if buf.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    let bytes = s.as_bytes();
    if bytes.len() + 1 > len as usize {
        return ERROR_INSUFFICIENT_SIZE;
    }
    // SAFETY: the caller gives `len` writable bytes and we write bytes.len() + 1 <= len of them.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, bytes.len());
        *buf.add(bytes.len()) = 0;
    }
    SUCCESS
}

/// Writes one value through an out pointer.
///
/// # Safety
/// `out` must be null or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) -> u32 {
    if out.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null, and valid per the caller.
    unsafe { out.write(value) };
    SUCCESS
}

pub(crate) fn round_u32(x: f64) -> c_uint {
    x.round().clamp(0.0, f64::from(u32::MAX)) as c_uint
}

pub(crate) fn mib_to_bytes(mib: f64) -> u64 {
    (mib * MIB).round() as u64
}
