//! A scripted stand-in for `libnvidia-ml.so`: the NVML functions vramio calls, driven by the JSON
//! file named in `FAKE_NVML_SCRIPT` (format: DESIGN section 10).
//!
//! Load it with `vramio --nvml-lib target/debug/libfake_nvml.so` (or `Nvml::builder().lib_path`).
//! [`script`] parses a script and answers "what does device N read at time t" as pure functions;
//! the `extern "C"` functions below are a thin layer over it that speaks NVML's C ABI.
//!
//! Script format (the contract of DESIGN section 10, plus optional extras marked *extra*):
//! ```json
//! {"driver_version": "580.00",
//!  "devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-...", "memory_total_mib": 81559,
//!    "repeat": false, "lost_at_s": null, "slow_ms": 0,
//!    "power_limit_w": 700, "memory_reserved_mib": 512,
//!    "timeline": [{"at_s": 0, "memory_used_mib": 1200, "util_gpu": 0, "util_mem": 0,
//!                  "temperature_c": 35, "power_w": 70,
//!                  "processes": [{"pid": 4242, "used_mib": 1100, "kind": "compute"}]},
//!                 {"at_s": 60, "memory_used_mib": 78000, "util_gpu": 97}]}]}
//! ```
//! - Time counts from the latest `nvmlInit_v2` / `nvmlInitWithFlags`, each of which re-reads the
//!   script and restarts the clock (one process may init several times in a row).
//! - Numbers interpolate linearly between consecutive points; a field left out of a point keeps its
//!   previous value; before the first point the first point holds, after the last the last holds, or
//!   with `repeat: true` the timeline loops with a period of the last point's `at_s`.
//! - A reading with no value yet (a field never given so far) answers `NVML_ERROR_NOT_SUPPORTED`.
//!   Utilization needs `util_gpu` or `util_mem`; the other one then reads 0.
//! - `processes` is a step function: the list of the latest point at or before t holds, and the
//!   `used_mib` of a pid also present in the next point is interpolated. `used_mib` absent or null
//!   reads as NVML's "not available". *extra* `kind`: `"compute"` (default) or `"graphics"` selects
//!   the list the process appears in.
//! - *extra* `power_limit_w` (absent: `NOT_SUPPORTED`), *extra* `memory_reserved_mib` (default 0);
//!   free memory is total - reserved - used, floored at 0. `driver_version` absent: `NOT_SUPPORTED`.
//! - From `lost_at_s` (seconds after init, not looped) on every call for that device returns
//!   `NVML_ERROR_GPU_IS_LOST`; `slow_ms` sleeps in every call for that device.
//! - Unknown fields are rejected, so a typo fails loudly. A missing or malformed script makes init
//!   fail with `NVML_ERROR_UNKNOWN` and a message on stderr naming the file and the problem.

use std::ffi::{CStr, c_char, c_uint, c_void};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub mod script {
    //! The script: parsing, validation and the value of each reading at a time.

    use serde::Deserialize;
    use std::fmt;

    /// NVML's string buffers (`NVML_DEVICE_NAME_V2_BUFFER_SIZE`, `..._UUID_V2_...`) hold 96 bytes.
    pub const NVML_STRING_BUFFER: usize = 96;

    /// A script as written.
    #[derive(Debug, Clone, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Script {
        #[serde(default)]
        pub driver_version: Option<String>,
        pub devices: Vec<DeviceScript>,
    }

    /// One device as written.
    #[derive(Debug, Clone, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct DeviceScript {
        pub name: String,
        pub uuid: String,
        pub memory_total_mib: f64,
        #[serde(default)]
        pub memory_reserved_mib: Option<f64>,
        #[serde(default)]
        pub power_limit_w: Option<f64>,
        #[serde(default)]
        pub repeat: bool,
        #[serde(default)]
        pub lost_at_s: Option<f64>,
        #[serde(default)]
        pub slow_ms: u64,
        #[serde(default)]
        pub timeline: Vec<Point>,
    }

    /// One point of a timeline; an absent field keeps its previous value.
    #[derive(Debug, Clone, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Point {
        pub at_s: f64,
        #[serde(default)]
        pub memory_used_mib: Option<f64>,
        #[serde(default)]
        pub util_gpu: Option<f64>,
        #[serde(default)]
        pub util_mem: Option<f64>,
        #[serde(default)]
        pub temperature_c: Option<f64>,
        #[serde(default)]
        pub power_w: Option<f64>,
        #[serde(default)]
        pub processes: Option<Vec<ProcessScript>>,
    }

    /// A process holding memory on a device.
    #[derive(Debug, Clone, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct ProcessScript {
        pub pid: u32,
        #[serde(default)]
        pub used_mib: Option<f64>,
        #[serde(default)]
        pub kind: ProcessKind,
    }

    /// Which NVML list a process appears in.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum ProcessKind {
        #[default]
        Compute,
        Graphics,
    }

    /// What one device reads at one moment. `None`: no value scripted yet.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct Sample {
        pub memory_used_mib: Option<f64>,
        pub util_gpu: Option<f64>,
        pub util_mem: Option<f64>,
        pub temperature_c: Option<f64>,
        pub power_w: Option<f64>,
        pub processes: Vec<ProcessSample>,
    }

    /// One process at one moment.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ProcessSample {
        pub pid: u32,
        pub kind: ProcessKind,
        pub used_mib: Option<f64>,
    }

    /// Why a script was refused.
    #[derive(Debug, Clone, PartialEq)]
    pub enum ScriptError {
        /// Not JSON, or not this shape (serde's message says where).
        Json(String),
        /// JSON of the right shape with a value that makes no sense; `place` is `devices[i]` or
        /// the top-level field.
        Invalid { place: String, reason: String },
    }

    impl fmt::Display for ScriptError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                ScriptError::Json(m) => write!(f, "not a valid script: {m}"),
                ScriptError::Invalid { place, reason } => write!(f, "{place}: {reason}"),
            }
        }
    }

    impl std::error::Error for ScriptError {}

    /// A parsed and checked script, with every point's absent fields filled from the previous one.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Scenario {
        pub driver_version: Option<String>,
        pub devices: Vec<Device>,
    }

    /// A checked device: the script's static facts plus its filled-in timeline.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Device {
        pub name: String,
        pub uuid: String,
        pub memory_total_mib: f64,
        pub memory_reserved_mib: f64,
        pub power_limit_w: Option<f64>,
        pub repeat: bool,
        pub lost_at_s: Option<f64>,
        pub slow_ms: u64,
        /// `(at_s, sample)`, at_s non-decreasing.
        pub points: Vec<(f64, Sample)>,
    }

    /// Parses and checks a script.
    pub fn parse(text: &str) -> Result<Scenario, ScriptError> {
        let script: Script =
            serde_json::from_str(text).map_err(|e| ScriptError::Json(e.to_string()))?;
        if let Some(v) = &script.driver_version {
            check_string("driver_version", v).map_err(|reason| ScriptError::Invalid {
                place: "top level".to_owned(),
                reason,
            })?;
        }
        let devices = script
            .devices
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                resolve_device(d).map_err(|reason| ScriptError::Invalid {
                    place: format!("devices[{i}]"),
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scenario {
            driver_version: script.driver_version,
            devices,
        })
    }

    fn check_string(what: &str, s: &str) -> Result<(), String> {
        if s.len() >= NVML_STRING_BUFFER {
            return Err(format!(
                "{what} is {} bytes, NVML's buffer holds {}",
                s.len(),
                NVML_STRING_BUFFER - 1
            ));
        }
        if s.contains('\0') {
            return Err(format!("{what} contains a NUL byte"));
        }
        Ok(())
    }

    fn check_number(what: &str, v: Option<f64>) -> Result<(), String> {
        match v {
            Some(x) if !x.is_finite() || x < 0.0 => {
                Err(format!("{what} must be a finite number >= 0, got {x}"))
            }
            _ => Ok(()),
        }
    }

    fn resolve_device(d: DeviceScript) -> Result<Device, String> {
        check_string("name", &d.name)?;
        check_string("uuid", &d.uuid)?;
        check_number("memory_total_mib", Some(d.memory_total_mib))?;
        check_number("memory_reserved_mib", d.memory_reserved_mib)?;
        check_number("power_limit_w", d.power_limit_w)?;
        check_number("lost_at_s", d.lost_at_s)?;
        let mut points: Vec<(f64, Sample)> = Vec::with_capacity(d.timeline.len());
        let mut current = Sample::default();
        for (i, p) in d.timeline.into_iter().enumerate() {
            let at = |field: &str| format!("timeline[{i}].{field}");
            check_number(&at("at_s"), Some(p.at_s))?;
            if let Some((prev, _)) = points.last()
                && p.at_s < *prev
            {
                return Err(format!(
                    "{} = {} comes before the previous point",
                    at("at_s"),
                    p.at_s
                ));
            }
            for (field, v) in [
                ("memory_used_mib", p.memory_used_mib),
                ("util_gpu", p.util_gpu),
                ("util_mem", p.util_mem),
                ("temperature_c", p.temperature_c),
                ("power_w", p.power_w),
            ] {
                check_number(&at(field), v)?;
            }
            for (field, v) in [("util_gpu", p.util_gpu), ("util_mem", p.util_mem)] {
                if v.is_some_and(|x| x > 100.0) {
                    return Err(format!("{} is a percentage, at most 100", at(field)));
                }
            }
            current.memory_used_mib = p.memory_used_mib.or(current.memory_used_mib);
            current.util_gpu = p.util_gpu.or(current.util_gpu);
            current.util_mem = p.util_mem.or(current.util_mem);
            current.temperature_c = p.temperature_c.or(current.temperature_c);
            current.power_w = p.power_w.or(current.power_w);
            if let Some(list) = p.processes {
                let mut seen = std::collections::HashSet::new();
                current.processes = Vec::with_capacity(list.len());
                for pr in list {
                    check_number(&at("processes.used_mib"), pr.used_mib)?;
                    if !seen.insert((pr.pid, pr.kind)) {
                        return Err(format!("{} lists pid {} twice", at("processes"), pr.pid));
                    }
                    current.processes.push(ProcessSample {
                        pid: pr.pid,
                        kind: pr.kind,
                        used_mib: pr.used_mib,
                    });
                }
            }
            points.push((p.at_s, current.clone()));
        }
        Ok(Device {
            name: d.name,
            uuid: d.uuid,
            memory_total_mib: d.memory_total_mib,
            memory_reserved_mib: d.memory_reserved_mib.unwrap_or(0.0),
            power_limit_w: d.power_limit_w,
            repeat: d.repeat,
            lost_at_s: d.lost_at_s,
            slow_ms: d.slow_ms,
            points,
        })
    }

    fn lerp(a: Option<f64>, b: Option<f64>, frac: f64) -> Option<f64> {
        match (a, b) {
            (Some(a), Some(b)) => Some(a + (b - a) * frac),
            (a, _) => a,
        }
    }

    impl Device {
        /// Whether the device has fallen off the bus `t_s` seconds after init.
        pub fn is_lost_at(&self, t_s: f64) -> bool {
            self.lost_at_s.is_some_and(|lost| t_s >= lost)
        }

        /// The time on the timeline `t_s` seconds after init (looped when `repeat`).
        pub fn timeline_time(&self, t_s: f64) -> f64 {
            let period = self.points.last().map_or(0.0, |(at, _)| *at);
            if self.repeat && period > 0.0 {
                t_s.rem_euclid(period)
            } else {
                t_s
            }
        }

        /// What the device reads `t_s` seconds after init.
        pub fn sample_at(&self, t_s: f64) -> Sample {
            let t = self.timeline_time(t_s);
            // The last point at or before t, if any.
            let after = self.points.partition_point(|(at, _)| *at <= t);
            let Some(left) = after.checked_sub(1) else {
                return self
                    .points
                    .first()
                    .map(|(_, s)| s.clone())
                    .unwrap_or_default();
            };
            let (a_at, a) = &self.points[left];
            let Some((b_at, b)) = self.points.get(after) else {
                return a.clone();
            };
            // b_at > t >= a_at, so the span is positive.
            let frac = (t - a_at) / (b_at - a_at);
            Sample {
                memory_used_mib: lerp(a.memory_used_mib, b.memory_used_mib, frac),
                util_gpu: lerp(a.util_gpu, b.util_gpu, frac),
                util_mem: lerp(a.util_mem, b.util_mem, frac),
                temperature_c: lerp(a.temperature_c, b.temperature_c, frac),
                power_w: lerp(a.power_w, b.power_w, frac),
                processes: a
                    .processes
                    .iter()
                    .map(|p| {
                        let next = b
                            .processes
                            .iter()
                            .find(|q| q.pid == p.pid && q.kind == p.kind)
                            .and_then(|q| q.used_mib);
                        ProcessSample {
                            used_mib: lerp(p.used_mib, next, frac),
                            ..p.clone()
                        }
                    })
                    .collect(),
            }
        }
    }
}

pub use script::{Device, Scenario, ScriptError, parse};

/// NVML return codes (`nvmlReturn_t` in nvml.h).
pub mod codes {
    pub const SUCCESS: u32 = 0;
    pub const ERROR_UNINITIALIZED: u32 = 1;
    pub const ERROR_INVALID_ARGUMENT: u32 = 2;
    pub const ERROR_NOT_SUPPORTED: u32 = 3;
    pub const ERROR_INSUFFICIENT_SIZE: u32 = 7;
    pub const ERROR_GPU_IS_LOST: u32 = 15;
    pub const ERROR_ARGUMENT_VERSION_MISMATCH: u32 = 25;
    pub const ERROR_UNKNOWN: u32 = 999;
}
use codes::*;

/// The environment variable naming the script.
pub const SCRIPT_ENV: &str = "FAKE_NVML_SCRIPT";

const MIB: f64 = 1024.0 * 1024.0;

/// `NVML_VALUE_NOT_AVAILABLE` as a `c_ulonglong`: "used memory not known".
const VALUE_NOT_AVAILABLE: u64 = u64::MAX;

/// `NVML_TEMPERATURE_GPU`, the only sensor NVML has.
const TEMPERATURE_GPU: c_uint = 0;

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

/// `nvmlProcessInfo_t` (= `nvmlProcessInfo_v2_t`), what the `_v3` process-list calls fill.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProcessInfo {
    pub pid: c_uint,
    pub used_gpu_memory: u64,
    pub gpu_instance_id: c_uint,
    pub compute_instance_id: c_uint,
}

/// The script in force and when the clock started.
struct Live {
    scenario: Scenario,
    started: Instant,
    /// nvmlInit calls not yet matched by nvmlShutdown (NVML counts references too).
    refs: u32,
}

static LIVE: Mutex<Option<Live>> = Mutex::new(None);

fn live() -> MutexGuard<'static, Option<Live>> {
    // A panic cannot happen while the lock is held, but never let poisoning cross the C boundary.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads and parses the script named by `FAKE_NVML_SCRIPT`; the message names file and problem.
pub fn load_script_from_env() -> Result<Scenario, String> {
    let path = std::env::var_os(SCRIPT_ENV).ok_or_else(|| {
        format!("{SCRIPT_ENV} is not set: name a script file (DESIGN section 10)")
    })?;
    let shown = std::path::Path::new(&path).display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read script {shown} ({SCRIPT_ENV}): {e}"))?;
    parse(&text).map_err(|e| format!("bad script {shown} ({SCRIPT_ENV}): {e}"))
}

fn init() -> u32 {
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
fn handle_index(handle: *mut c_void) -> usize {
    (handle as usize).wrapping_sub(1)
}

fn handle_for(index: usize) -> *mut c_void {
    (index + 1) as *mut c_void
}

/// Runs `f` on device `index` at the current time: sleeps `slow_ms` first (outside the lock), then
/// answers `GPU_IS_LOST` from `lost_at_s` on.
fn with_device(index: usize, f: impl FnOnce(&Device, f64) -> u32) -> u32 {
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
unsafe fn write_c_string(s: &str, buf: *mut c_char, len: c_uint) -> u32 {
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
unsafe fn write_out<T>(out: *mut T, value: T) -> u32 {
    if out.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null, and valid per the caller.
    unsafe { out.write(value) };
    SUCCESS
}

fn round_u32(x: f64) -> c_uint {
    x.round().clamp(0.0, f64::from(u32::MAX)) as c_uint
}

fn mib_to_bytes(mib: f64) -> u64 {
    (mib * MIB).round() as u64
}

/// The process list of one kind, with NVML's buffer-size protocol.
///
/// # Safety
/// `count` must be valid for reads and writes; `infos` null or valid for `*count` entries.
unsafe fn running_processes(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
    kind: script::ProcessKind,
) -> u32 {
    if count.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    with_device(handle_index(device), |d, t| {
        let list: Vec<ProcessInfo> = d
            .sample_at(t)
            .processes
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| ProcessInfo {
                pid: p.pid,
                used_gpu_memory: p.used_mib.map_or(VALUE_NOT_AVAILABLE, mib_to_bytes),
                gpu_instance_id: u32::MAX,
                compute_instance_id: u32::MAX,
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
        ERROR_INSUFFICIENT_SIZE => c"Insufficient Size",
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

/// `nvmlDeviceGetCount_v2`.
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

/// `nvmlDeviceGetUUID`.
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
    with_device(handle_index(device), |d, _| unsafe {
        write_c_string(&d.uuid, uuid, length)
    })
}

/// `nvmlDeviceGetName`.
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
    with_device(handle_index(device), |d, _| unsafe {
        write_c_string(&d.name, name, length)
    })
}

/// `nvmlDeviceGetMemoryInfo_v2`: checks the struct version like the real library.
///
/// # Safety
/// `memory` must be null or valid for reads and writes of `nvmlMemory_v2_t`.
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
    with_device(handle_index(device), |d, t| {
        let Some(used_mib) = d.sample_at(t).memory_used_mib else {
            return ERROR_NOT_SUPPORTED;
        };
        let total = mib_to_bytes(d.memory_total_mib);
        let reserved = mib_to_bytes(d.memory_reserved_mib);
        let used = mib_to_bytes(used_mib);
        let value = MemoryV2 {
            version: MEMORY_V2_VERSION,
            total,
            reserved,
            free: total.saturating_sub(reserved).saturating_sub(used),
            used,
        };
        // SAFETY: as above.
        unsafe { write_out(memory, value) }
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
    with_device(handle_index(device), |d, t| {
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
    with_device(handle_index(device), |d, t| {
        match d.sample_at(t).temperature_c {
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
    with_device(handle_index(device), |d, t| match d.sample_at(t).power_w {
        None => ERROR_NOT_SUPPORTED,
        // SAFETY: forwarded from the caller.
        Some(w) => unsafe { write_out(power, round_u32(w * 1000.0)) },
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
    with_device(handle_index(device), |d, _| match d.power_limit_w {
        None => ERROR_NOT_SUPPORTED,
        // SAFETY: forwarded from the caller.
        Some(w) => unsafe { write_out(limit, round_u32(w * 1000.0)) },
    })
}

/// `nvmlDeviceGetComputeRunningProcesses_v3`.
///
/// # Safety
/// `count` must be valid for reads and writes; `infos` null or valid for `*count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { running_processes(device, count, infos, script::ProcessKind::Compute) }
}

/// `nvmlDeviceGetGraphicsRunningProcesses_v3`.
///
/// # Safety
/// `count` must be valid for reads and writes; `infos` null or valid for `*count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v3(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { running_processes(device, count, infos, script::ProcessKind::Graphics) }
}

#[cfg(test)]
mod tests {
    use super::script::*;

    const EXAMPLE: &str = r#"{"driver_version": "580.00",
     "devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1", "memory_total_mib": 81559,
       "repeat": false, "lost_at_s": null, "slow_ms": 0,
       "timeline": [{"at_s": 0, "memory_used_mib": 1200, "util_gpu": 0, "util_mem": 0,
                     "temperature_c": 35, "power_w": 70, "processes": [{"pid": 4242, "used_mib": 1100}]},
                    {"at_s": 60, "memory_used_mib": 78000, "util_gpu": 97}]}]}"#;

    fn device(json: &str) -> Device {
        let s = parse(json).expect("script parses");
        s.devices.into_iter().next().expect("one device")
    }

    #[test]
    fn parses_the_design_example() {
        let s = parse(EXAMPLE).expect("the DESIGN example parses");
        assert_eq!(s.driver_version.as_deref(), Some("580.00"));
        let d = &s.devices[0];
        assert_eq!(d.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(d.memory_total_mib, 81559.0);
        assert_eq!(d.memory_reserved_mib, 0.0);
        assert_eq!(d.power_limit_w, None);
        assert_eq!(d.points.len(), 2);
    }

    #[test]
    fn interpolates_between_points_and_keeps_left_out_fields() {
        let d = device(EXAMPLE);
        let s = d.sample_at(30.0);
        assert_eq!(s.memory_used_mib, Some(1200.0 + (78000.0 - 1200.0) / 2.0));
        assert_eq!(s.util_gpu, Some(48.5));
        // Left out at 60 s: kept, so flat.
        assert_eq!(s.util_mem, Some(0.0));
        assert_eq!(s.temperature_c, Some(35.0));
        assert_eq!(s.power_w, Some(70.0));
        assert_eq!(s.processes.len(), 1);
        assert_eq!(s.processes[0].pid, 4242);
        assert_eq!(s.processes[0].used_mib, Some(1100.0));
    }

    #[test]
    fn holds_before_the_first_and_after_the_last_point() {
        let d = device(
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":100,
            "timeline":[{"at_s":10,"memory_used_mib":5},{"at_s":20,"memory_used_mib":15}]}]}"#,
        );
        assert_eq!(d.sample_at(0.0).memory_used_mib, Some(5.0));
        assert_eq!(d.sample_at(15.0).memory_used_mib, Some(10.0));
        assert_eq!(d.sample_at(20.0).memory_used_mib, Some(15.0));
        assert_eq!(d.sample_at(1000.0).memory_used_mib, Some(15.0));
    }

    #[test]
    fn loops_when_repeat() {
        let d = device(
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":100,"repeat":true,
            "timeline":[{"at_s":0,"util_gpu":0},{"at_s":10,"util_gpu":100}]}]}"#,
        );
        assert_eq!(d.sample_at(5.0).util_gpu, Some(50.0));
        assert_eq!(d.sample_at(25.0).util_gpu, Some(50.0));
        assert_eq!(d.sample_at(12.5).util_gpu, Some(25.0));
    }

    #[test]
    fn a_field_never_given_has_no_value() {
        let d = device(
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":100,
            "timeline":[{"at_s":0,"util_gpu":1},{"at_s":10,"temperature_c":50}]}]}"#,
        );
        assert_eq!(d.sample_at(5.0).temperature_c, None);
        assert_eq!(d.sample_at(10.0).temperature_c, Some(50.0));
        assert_eq!(d.sample_at(5.0).memory_used_mib, None);
        assert!(d.sample_at(5.0).processes.is_empty());
        let empty = device(r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1}]}"#);
        assert_eq!(empty.sample_at(3.0), Sample::default());
    }

    #[test]
    fn process_lists_step_and_their_memory_interpolates() {
        let d = device(
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":100,
            "timeline":[{"at_s":0,"processes":[{"pid":1,"used_mib":10},{"pid":2,"kind":"graphics"}]},
                        {"at_s":10,"processes":[{"pid":1,"used_mib":30}]}]}]}"#,
        );
        let s = d.sample_at(5.0);
        assert_eq!(s.processes.len(), 2);
        assert_eq!(s.processes[0].used_mib, Some(20.0));
        assert_eq!(s.processes[1].kind, ProcessKind::Graphics);
        assert_eq!(s.processes[1].used_mib, None);
        assert_eq!(d.sample_at(10.0).processes.len(), 1);
    }

    #[test]
    fn lost_from_lost_at_s_on() {
        let d =
            device(r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,"lost_at_s":1.5}]}"#);
        assert!(!d.is_lost_at(1.49));
        assert!(d.is_lost_at(1.5));
        assert!(d.is_lost_at(100.0));
    }

    #[test]
    fn reads_optional_extras() {
        let d = device(
            r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,
            "power_limit_w":700,"memory_reserved_mib":512,"slow_ms":20}]}"#,
        );
        assert_eq!(d.power_limit_w, Some(700.0));
        assert_eq!(d.memory_reserved_mib, 512.0);
        assert_eq!(d.slow_ms, 20);
    }

    #[test]
    fn refuses_bad_scripts_with_a_reason() {
        let cases = [
            ("not json", "not a valid script"),
            (r#"{"devices": 3}"#, "not a valid script"),
            (
                r#"{"driver_version": "5\u0000", "devices": []}"#,
                "top level: driver_version",
            ),
            (
                r#"{"devices":[{"name":"g","uuid":"u"}]}"#,
                "memory_total_mib",
            ),
            (
                r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,"typo":1}]}"#,
                "typo",
            ),
            (
                r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,
                "timeline":[{"at_s":5},{"at_s":1}]}]}"#,
                "timeline[1].at_s",
            ),
            (
                r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":1,
                "timeline":[{"at_s":0,"util_gpu":120}]}]}"#,
                "timeline[0].util_gpu",
            ),
            (
                r#"{"devices":[{"name":"g","uuid":"u","memory_total_mib":-1}]}"#,
                "memory_total_mib",
            ),
        ];
        for (json, needle) in cases {
            let err = parse(json)
                .expect_err("a bad script is refused")
                .to_string();
            assert!(
                err.contains(needle),
                "{json}: {err:?} should mention {needle}"
            );
        }
        let long = "x".repeat(200);
        let json =
            format!(r#"{{"devices":[{{"name":"{long}","uuid":"u","memory_total_mib":1}}]}}"#);
        assert!(parse(&json).is_err());
    }
}

#[cfg(test)]
mod ffi_tests {
    //! The C layer, called directly. One test only: the script lives in a process-global.
    use super::*;

    #[test]
    fn answers_like_nvml() {
        let dir = std::env::temp_dir().join(format!("fake-nvml-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("script.json");
        std::fs::write(
            &path,
            r#"{"driver_version":"555.42","devices":[
              {"name":"A","uuid":"GPU-a","memory_total_mib":1000,"memory_reserved_mib":10,
               "power_limit_w":300,
               "timeline":[{"at_s":0,"memory_used_mib":100,"util_gpu":40,"util_mem":5,
                 "temperature_c":50,"power_w":123.4,
                 "processes":[{"pid":7,"used_mib":60},{"pid":8},{"pid":9,"used_mib":1,"kind":"graphics"}]}]},
              {"name":"B","uuid":"GPU-b","memory_total_mib":1,"lost_at_s":0}]}"#,
        )
        .expect("write script");
        // SAFETY: the only test in this binary that touches the environment or the fake's state.
        unsafe { std::env::set_var(SCRIPT_ENV, &path) };
        assert_eq!(nvmlInit_v2(), SUCCESS);
        unsafe {
            let mut n = 0;
            assert_eq!(nvmlDeviceGetCount_v2(&mut n), SUCCESS);
            assert_eq!(n, 2);
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
            count = 5;
            assert_eq!(
                nvmlDeviceGetGraphicsRunningProcesses_v3(h, &mut count, infos.as_mut_ptr()),
                SUCCESS
            );
            assert_eq!((count, infos[0].pid), (1, 9));

            assert_eq!(nvmlDeviceGetHandleByIndex_v2(1, &mut h), ERROR_GPU_IS_LOST);
            assert_eq!(
                nvmlDeviceGetName(handle_for(1), buf.as_mut_ptr(), 96),
                ERROR_GPU_IS_LOST
            );
            assert_eq!(
                nvmlDeviceGetHandleByIndex_v2(2, &mut h),
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
        let _ = std::fs::remove_dir_all(&dir);
    }
}
