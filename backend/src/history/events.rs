//! Events the history keeps, found by comparing two shapes of a host: a GPU lost or back, the
//! driver changed, a mount added or gone, a disk added or gone.

use serde::Serialize;
use shared::{Frame, GpuState, NvmlStatus};

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    GpuLost {
        gpu: u32,
    },
    GpuBack {
        gpu: u32,
    },
    GpuAdded {
        gpu: u32,
    },
    GpuGone {
        gpu: u32,
    },
    DriverChanged {
        from: Option<String>,
        to: Option<String>,
    },
    MountAdded {
        mount_point: String,
    },
    MountGone {
        mount_point: String,
    },
    DiskAdded {
        name: String,
    },
    DiskGone {
        name: String,
    },
}

fn driver(f: &Frame) -> Option<String> {
    match &f.nvml {
        NvmlStatus::Ok { driver_version } => driver_version.clone(),
        _ => None,
    }
}

/// What changed from `before` to `after`.
pub fn events_between(before: &Frame, after: &Frame) -> Vec<Event> {
    let mut out = Vec::new();
    let (d0, d1) = (driver(before), driver(after));
    if d0.is_some() && d1.is_some() && d0 != d1 {
        out.push(Event::DriverChanged { from: d0, to: d1 });
    }
    for g in &after.gpus {
        match before.gpus.iter().find(|b| b.index == g.index) {
            None => out.push(Event::GpuAdded { gpu: g.index }),
            Some(b) if b.state != GpuState::Lost && g.state == GpuState::Lost => {
                out.push(Event::GpuLost { gpu: g.index })
            }
            Some(b) if b.state == GpuState::Lost && g.state != GpuState::Lost => {
                out.push(Event::GpuBack { gpu: g.index })
            }
            Some(_) => {}
        }
    }
    for b in &before.gpus {
        if !after.gpus.iter().any(|g| g.index == b.index) {
            out.push(Event::GpuGone { gpu: b.index });
        }
    }
    let mounts = |f: &Frame| {
        f.mounts
            .iter()
            .map(|m| m.mount_point.clone())
            .collect::<Vec<_>>()
    };
    let (m0, m1) = (mounts(before), mounts(after));
    out.extend(
        m1.iter()
            .filter(|m| !m0.contains(m))
            .map(|m| Event::MountAdded {
                mount_point: m.clone(),
            }),
    );
    out.extend(
        m0.iter()
            .filter(|m| !m1.contains(m))
            .map(|m| Event::MountGone {
                mount_point: m.clone(),
            }),
    );
    let disks = |f: &Frame| {
        f.block_devices
            .iter()
            .map(|d| d.name.clone())
            .collect::<Vec<_>>()
    };
    let (k0, k1) = (disks(before), disks(after));
    out.extend(
        k1.iter()
            .filter(|d| !k0.contains(d))
            .map(|d| Event::DiskAdded { name: d.clone() }),
    );
    out.extend(
        k0.iter()
            .filter(|d| !k1.contains(d))
            .map(|d| Event::DiskGone { name: d.clone() }),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::Gpu;

    #[test]
    fn a_lost_gpu_an_unmount_and_a_driver_change_are_events() {
        let mut a = Frame::empty("h", 1, 0, 1000);
        a.gpus.push(Gpu::unread(0, None, None, GpuState::Ok));
        a.nvml = NvmlStatus::Ok {
            driver_version: Some("550.1".into()),
        };
        a.mounts.push(shared::Mount {
            mount_point: "/data".into(),
            device: "/dev/sda1".into(),
            fs_type: Some("ext4".into()),
            kind: shared::MountKind::Local,
            total_bytes: None,
            used_bytes: None,
            available_bytes: None,
            inodes_total: None,
            inodes_used: None,
            read_only: None,
        });
        let mut b = a.clone();
        b.gpus[0].state = GpuState::Lost;
        b.mounts.clear();
        b.nvml = NvmlStatus::Ok {
            driver_version: Some("560.2".into()),
        };
        let e = events_between(&a, &b);
        assert!(e.contains(&Event::GpuLost { gpu: 0 }), "{e:?}");
        assert!(e.contains(&Event::MountGone {
            mount_point: "/data".into()
        }));
        assert!(e.contains(&Event::DriverChanged {
            from: Some("550.1".into()),
            to: Some("560.2".into())
        }));
        assert_eq!(events_between(&b, &a).len(), 3);
        assert!(events_between(&a, &a).is_empty());
    }
}
