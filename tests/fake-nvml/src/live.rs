//! The script in force since the latest `nvmlInit`, and the helpers every exported function
//! shares: device and MIG device handles, the per-device clock (`slow_ms`, `lost_at_s`),
//! out-pointer writes.

use crate::abi::MAX_MIG_DEVICES;
use crate::abi::codes::*;
use crate::script::{Device, MigScript, Scenario, parse};
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

/// What a device handle names. A GPU's handle is its index plus one, as a pointer; a MIG
/// device's has the top bit set, the GPU's index above the low three bits and the MIG device's
/// index (below [`MAX_MIG_DEVICES`]) in them. The two never collide, and null names nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handle {
    Gpu(usize),
    Mig { parent: usize, index: usize },
}

const MIG_TAG: usize = 1 << (usize::BITS - 1);
const MIG_INDEX_BITS: u32 = 3;
const _: () = assert!(MAX_MIG_DEVICES < 1 << MIG_INDEX_BITS);

pub(crate) fn decode_handle(handle: *mut c_void) -> Handle {
    let raw = handle as usize;
    if raw & MIG_TAG == 0 {
        Handle::Gpu(raw.wrapping_sub(1))
    } else {
        let rest = raw & !MIG_TAG;
        Handle::Mig {
            parent: rest >> MIG_INDEX_BITS,
            index: rest & ((1 << MIG_INDEX_BITS) - 1),
        }
    }
}

pub(crate) fn handle_for(index: usize) -> *mut c_void {
    (index + 1) as *mut c_void
}

/// The handle of MIG device `index` of GPU `parent`; both must exist in the script.
pub(crate) fn mig_handle_for(parent: usize, index: usize) -> *mut c_void {
    (MIG_TAG | (parent << MIG_INDEX_BITS) | index) as *mut c_void
}

/// The device a handle names in `scenario`, and the MIG device when it names one.
fn resolve(scenario: &Scenario, handle: Handle) -> Option<(&Device, Option<&MigScript>)> {
    match handle {
        Handle::Gpu(index) => Some((scenario.devices.get(index)?, None)),
        Handle::Mig { parent, index } => {
            let d = scenario.devices.get(parent)?;
            Some((d, Some(d.mig.as_ref()?.get(index)?)))
        }
    }
}

/// Runs `f` on the GPU `handle` names, or on a MIG device and its GPU, at the current time:
/// sleeps the GPU's `slow_ms` first (outside the lock), then answers `GPU_IS_LOST` from its
/// `lost_at_s` on. A handle naming nothing in the script answers `INVALID_ARGUMENT`.
pub(crate) fn with_handle(
    handle: Handle,
    f: impl FnOnce(&Device, Option<&MigScript>, f64) -> u32,
) -> u32 {
    let slow_ms = {
        let guard = live();
        let Some(l) = guard.as_ref() else {
            return ERROR_UNINITIALIZED;
        };
        let Some((d, _)) = resolve(&l.scenario, handle) else {
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
    let Some((d, mig)) = resolve(&l.scenario, handle) else {
        return ERROR_INVALID_ARGUMENT;
    };
    let t = l.started.elapsed().as_secs_f64();
    if d.is_lost_at(t) {
        return ERROR_GPU_IS_LOST;
    }
    f(d, mig, t)
}

/// [`with_handle`] for a call given a device handle from the caller.
pub(crate) fn with_device_handle(
    handle: *mut c_void,
    f: impl FnOnce(&Device, Option<&MigScript>, f64) -> u32,
) -> u32 {
    with_handle(decode_handle(handle), f)
}

/// [`with_handle`] for GPU `index`.
pub(crate) fn with_device(index: usize, f: impl FnOnce(&Device, f64) -> u32) -> u32 {
    with_handle(Handle::Gpu(index), |d, _, t| f(d, t))
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
