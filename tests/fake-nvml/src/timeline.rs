//! The value of each reading at a time: interpolation between points, holding, looping, when a
//! device is lost, and the memory a MIG instance's processes use. Pure functions over a parsed
//! [`Device`].

use crate::script::{Device, ProcessSample, Sample};
use std::collections::BTreeMap;

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

    /// The memory the processes of GPU instance `gpu_instance_id` use `t_s` seconds after init:
    /// the sum of their `used_mib`, a pid in both lists counted once, "not available" as 0.
    /// Compute instances of one GPU instance share its memory, so this is per GPU instance.
    pub fn instance_used_mib(&self, gpu_instance_id: u32, t_s: f64) -> f64 {
        let mut per_pid: BTreeMap<u32, f64> = BTreeMap::new();
        for p in self.sample_at(t_s).processes {
            if p.instance
                .is_some_and(|i| i.gpu_instance_id == gpu_instance_id)
            {
                let used = per_pid.entry(p.pid).or_insert(0.0);
                *used = used.max(p.used_mib.unwrap_or(0.0));
            }
        }
        per_pid.values().sum()
    }
}
