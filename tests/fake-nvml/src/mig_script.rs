//! The script's MIG part checked: a device's `mig` instances, their uuids across the script, and
//! which instance each scripted process runs in.

use crate::abi::{MAX_MIG_DEVICES, NO_INSTANCE};
use crate::script::{Device, InstanceIds, MigScript, ScriptError, check_number, check_string};
use std::collections::HashMap;

/// Checks one device's `mig` list against itself and the device's memory.
pub(crate) fn check_instances(mig: &[MigScript], device_total_mib: f64) -> Result<(), String> {
    if mig.len() > MAX_MIG_DEVICES {
        return Err(format!(
            "mig lists {} instances, a GPU holds at most {MAX_MIG_DEVICES}",
            mig.len()
        ));
    }
    // Each GPU instance's memory, counted once however many compute instances share it.
    let mut gpu_instances: Vec<(u32, f64, usize)> = Vec::new();
    for (i, m) in mig.iter().enumerate() {
        let at = |field: &str| format!("mig[{i}].{field}");
        if m.uuid.is_empty() {
            return Err(format!("{} is empty", at("uuid")));
        }
        check_string(&at("uuid"), &m.uuid)?;
        check_number(&at("memory_total_mib"), Some(m.memory_total_mib))?;
        for (field, id) in [
            ("gpu_instance_id", m.gpu_instance_id),
            ("compute_instance_id", m.compute_instance_id),
        ] {
            if id == NO_INSTANCE {
                return Err(format!(
                    "{} is {id:#X}, which NVML reports for \"no instance\"",
                    at(field)
                ));
            }
        }
        if let Some(j) = mig[..i].iter().position(|o| o.ids() == m.ids()) {
            return Err(format!(
                "mig[{i}] repeats mig[{j}]'s gpu_instance_id {} and compute_instance_id {}",
                m.gpu_instance_id, m.compute_instance_id
            ));
        }
        match gpu_instances
            .iter()
            .find(|(gi, _, _)| *gi == m.gpu_instance_id)
        {
            Some(&(gi, mib, j)) if mib != m.memory_total_mib => {
                return Err(format!(
                    "{} = {} differs from mig[{j}]'s {mib}: compute instances of gpu_instance_id \
                     {gi} share its memory",
                    at("memory_total_mib"),
                    m.memory_total_mib
                ));
            }
            Some(_) => {}
            None => gpu_instances.push((m.gpu_instance_id, m.memory_total_mib, i)),
        }
    }
    let sum: f64 = gpu_instances.iter().map(|(_, mib, _)| mib).sum();
    if sum > device_total_mib {
        return Err(format!(
            "the GPU instances in mig hold {sum} MiB together, more than the device's \
             memory_total_mib {device_total_mib}"
        ));
    }
    Ok(())
}

/// MIG uuids name one MIG device in the whole script and are no GPU's uuid either.
pub(crate) fn check_mig_uuids(devices: &[Device]) -> Result<(), ScriptError> {
    let mut owners: HashMap<&str, String> = devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.uuid.as_str(), format!("devices[{i}].uuid")))
        .collect();
    for (i, d) in devices.iter().enumerate() {
        for (j, m) in d.mig.iter().flatten().enumerate() {
            let place = format!("devices[{i}].mig[{j}].uuid");
            if let Some(owner) = owners.get(m.uuid.as_str()) {
                return Err(ScriptError::Invalid {
                    place: format!("devices[{i}]"),
                    reason: format!("mig[{j}].uuid {:?} is also {owner}", m.uuid),
                });
            }
            owners.insert(&m.uuid, place);
        }
    }
    Ok(())
}

/// The instance a process with these script ids runs in. `compute_instance_id` may be left out
/// when the GPU instance has one compute instance only.
pub(crate) fn resolve_instance(
    mig: Option<&[MigScript]>,
    gpu_instance_id: Option<u32>,
    compute_instance_id: Option<u32>,
) -> Result<Option<InstanceIds>, String> {
    let Some(gi) = gpu_instance_id else {
        return match compute_instance_id {
            None => Ok(None),
            Some(ci) => Err(format!("compute_instance_id {ci} without gpu_instance_id")),
        };
    };
    let Some(mig) = mig else {
        return Err(format!(
            "gpu_instance_id {gi} on a device without mig (not in MIG mode)"
        ));
    };
    let candidates: Vec<&MigScript> = mig.iter().filter(|m| m.gpu_instance_id == gi).collect();
    let found = match (compute_instance_id, candidates.as_slice()) {
        (_, []) => return Err(format!("gpu_instance_id {gi} matches no instance in mig")),
        (None, [only]) => only,
        (None, several) => {
            return Err(format!(
                "gpu_instance_id {gi} has {} compute instances in mig: name compute_instance_id",
                several.len()
            ));
        }
        (Some(ci), _) => candidates
            .iter()
            .find(|m| m.compute_instance_id == ci)
            .ok_or_else(|| {
                format!("compute_instance_id {ci} matches no instance of gpu_instance_id {gi}")
            })?,
    };
    Ok(Some(found.ids()))
}
