//! The script: its shape as written, parsing and validation into a [`Scenario`] whose timelines
//! have every absent field filled from the point before. [`crate::timeline`] reads them; the
//! checks of the MIG part are in [`crate::mig_script`].

use crate::mig_script::{check_instances, check_mig_uuids, resolve_instance};
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
    pub new_api: NewApi,
    /// Absent: the GPU cannot do MIG. Present, even empty: it is in MIG mode with these MIG
    /// devices, in the order `nvmlDeviceGetMigDeviceHandleByIndex` numbers them.
    #[serde(default)]
    pub mig: Option<Vec<MigScript>>,
    #[serde(default)]
    pub timeline: Vec<Point>,
}

/// One MIG device: a compute instance inside a GPU instance. Compute instances of one GPU
/// instance share its memory, so they give the same `memory_total_mib`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigScript {
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
    pub uuid: String,
    pub memory_total_mib: f64,
}

impl MigScript {
    /// The instance's ids as a process reports them.
    pub fn ids(&self) -> InstanceIds {
        InstanceIds {
            gpu_instance_id: self.gpu_instance_id,
            compute_instance_id: self.compute_instance_id,
        }
    }
}

/// The MIG instance a process runs in (NVML's `gpuInstanceId` and `computeInstanceId`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InstanceIds {
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
}

/// How a device's newer versioned calls (`nvmlDeviceGetMemoryInfo_v2`, the `_v3` process lists)
/// answer while the older ones keep working.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NewApi {
    /// They answer like the older ones (with `reserved` for memory).
    #[default]
    Ok,
    /// `NVML_ERROR_FUNCTION_NOT_FOUND`.
    FunctionNotFound,
    /// `NVML_ERROR_UNKNOWN`.
    Unknown,
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
    /// The MIG instance the process runs in; absent: none. `compute_instance_id` may be left out
    /// when the GPU instance has a single compute instance.
    #[serde(default)]
    pub gpu_instance_id: Option<u32>,
    #[serde(default)]
    pub compute_instance_id: Option<u32>,
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
    /// `None`: not in a MIG instance (NVML's ids read `0xFFFFFFFF`).
    pub instance: Option<InstanceIds>,
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
    pub new_api: NewApi,
    /// `None`: not MIG-capable; `Some`: in MIG mode with these MIG devices (at most 7).
    pub mig: Option<Vec<MigScript>>,
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
    check_mig_uuids(&devices)?;
    Ok(Scenario {
        driver_version: script.driver_version,
        devices,
    })
}

pub(crate) fn check_string(what: &str, s: &str) -> Result<(), String> {
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

pub(crate) fn check_number(what: &str, v: Option<f64>) -> Result<(), String> {
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
    if let Some(mig) = &d.mig {
        check_instances(mig, d.memory_total_mib)?;
    }
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
            for (j, pr) in list.into_iter().enumerate() {
                let place = at(&format!("processes[{j}]"));
                check_number(&format!("{place}.used_mib"), pr.used_mib)?;
                if !seen.insert((pr.pid, pr.kind)) {
                    return Err(format!("{} lists pid {} twice", at("processes"), pr.pid));
                }
                let instance =
                    resolve_instance(d.mig.as_deref(), pr.gpu_instance_id, pr.compute_instance_id)
                        .map_err(|reason| format!("{place} (pid {}): {reason}", pr.pid))?;
                current.processes.push(ProcessSample {
                    pid: pr.pid,
                    kind: pr.kind,
                    used_mib: pr.used_mib,
                    instance,
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
        new_api: d.new_api,
        mig: d.mig,
        points,
    })
}
