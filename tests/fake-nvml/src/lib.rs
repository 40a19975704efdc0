//! A scripted stand-in for `libnvidia-ml.so`: the NVML functions vramio calls, driven by the JSON
//! file named in `FAKE_NVML_SCRIPT` (format: docs/testing.md#the-fake-nvml-library).
//!
//! Load it with `vramio --nvml-lib target/debug/libfake_nvml.so` (or `Nvml::builder().lib_path`).
//! The same source also builds as package `fake-nvml-legacy` (`libfake_nvml_legacy.so`), whose
//! build script sets `cfg(fake_nvml_legacy)`: that library is a driver before R510, exporting
//! `nvmlDeviceGetMemoryInfo` and the `_v2` process lists but not `nvmlDeviceGetMemoryInfo_v2` nor
//! the `_v3` lists, so a caller really fails to load those symbols.
//!
//! The flow: [`script`] parses a script, [`timeline`] answers "what does device N read at time
//! t" as pure functions, [`live`] holds the script in force since `nvmlInit`, and [`exports`],
//! [`versioned`] and [`mig`] are the `extern "C"` functions, a thin layer that speaks NVML's C ABI
//! ([`abi`]). [`mig_script`] checks a script's MIG part.
//!
//! Script format (the contract of docs/testing.md#the-fake-nvml-library, plus optional extras marked *extra*):
//! ```json
//! {"driver_version": "580.00",
//!  "devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-...", "memory_total_mib": 81559,
//!    "repeat": false, "lost_at_s": null, "slow_ms": 0,
//!    "power_limit_w": 700, "memory_reserved_mib": 512, "new_api": "ok",
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
//!   free memory is total - reserved - used, floored at 0. Memory v2 reports `used` and `reserved`
//!   apart; v1 (`nvmlDeviceGetMemoryInfo`) has no reserved and counts it in `used`, as real
//!   drivers do. `driver_version` absent: `NOT_SUPPORTED`.
//! - *extra* `new_api`: `"ok"` (default); `"function_not_found"` or `"unknown"` make that device's
//!   `nvmlDeviceGetMemoryInfo_v2` and `_v3` process lists answer `NVML_ERROR_FUNCTION_NOT_FOUND`
//!   or `NVML_ERROR_UNKNOWN` (drivers that export a symbol but fail the call, like WSL's 516.59
//!   with v2 memory), while the older calls answer. The legacy library ignores it (it has no such
//!   symbols at all).
//! - From `lost_at_s` (seconds after init, not looped) on every call for that device returns
//!   `NVML_ERROR_GPU_IS_LOST`; `slow_ms` sleeps in every call for that device.
//! - *extra* `mig`: a list of `{"gpu_instance_id", "compute_instance_id", "uuid",
//!   "memory_total_mib"}` puts the GPU in MIG mode with those MIG devices (absent: not
//!   MIG-capable; `[]`: MIG mode with none yet). A process may name its `gpu_instance_id` and
//!   `compute_instance_id` (the latter optional when its GPU instance has one compute instance).
//!   A MIG device's handle answers its uuid, its GPU's name, its own memory (used: the sum of its
//!   GPU instance's processes) and process lists, and `NOT_SUPPORTED` for utilization,
//!   temperature and power; see [`mig`].
//! - Unknown fields are rejected, so a typo fails loudly. A missing or malformed script makes init
//!   fail with `NVML_ERROR_UNKNOWN` and a message on stderr naming the file and the problem.

pub mod abi;
pub mod exports;
pub mod live;
pub mod mig;
pub mod mig_script;
pub mod script;
pub mod timeline;
pub mod versioned;

pub use abi::codes;
pub use live::{SCRIPT_ENV, load_script_from_env};
pub use script::{Device, MigScript, NewApi, Scenario, ScriptError, parse};

// The C layer's test calls the newer symbols, which the legacy build leaves out.
#[cfg(all(test, not(fake_nvml_legacy)))]
mod ffi_tests;
#[cfg(all(test, not(fake_nvml_legacy)))]
mod mig_ffi_tests;
#[cfg(test)]
mod mig_tests;
#[cfg(test)]
mod tests;
