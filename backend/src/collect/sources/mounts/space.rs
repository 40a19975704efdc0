//! Space and inodes of one mount from its `statvfs` counts, as `df` computes them.

use super::table::MountEntry;
use shared::{Bytes, Mount, MountKind};

/// The `statvfs` fields vramio uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VfsCounts {
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    /// `f_frsize`, the unit of the block counts.
    pub frsize: u64,
    pub files: u64,
    pub ffree: u64,
}

impl From<&rustix::fs::StatVfs> for VfsCounts {
    fn from(s: &rustix::fs::StatVfs) -> Self {
        VfsCounts {
            blocks: s.f_blocks,
            bfree: s.f_bfree,
            bavail: s.f_bavail,
            frsize: s.f_frsize,
            files: s.f_files,
            ffree: s.f_ffree,
        }
    }
}

/// A mount with its space, as `df` computes it: used counts blocks root's reserve does not hide
/// (`f_blocks - f_bfree`), available is what a non-root job can still write (`f_bavail`). Inodes
/// are `None` on filesystems that do not count them (`f_files == 0`: btrfs, NFS on some servers).
pub fn space(entry: &MountEntry, kind: MountKind, v: &VfsCounts) -> Mount {
    let bytes = |blocks: u64| Bytes(blocks.saturating_mul(v.frsize));
    let has_inodes = v.files > 0;
    Mount {
        mount_point: entry.mount_point.clone(),
        device: entry.device.clone(),
        fs_type: Some(entry.fs_type.clone()),
        kind,
        total_bytes: Some(bytes(v.blocks)),
        used_bytes: Some(bytes(v.blocks.saturating_sub(v.bfree))),
        available_bytes: Some(bytes(v.bavail)),
        inodes_total: has_inodes.then_some(v.files),
        inodes_used: has_inodes.then(|| v.files.saturating_sub(v.ffree)),
        read_only: Some(entry.read_only),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::sources::mounts::table::select_mounts;
    use crate::collect::sources::mounts::testutil::*;

    #[test]
    fn space_like_df() {
        let kept = select_mounts(parse(HOST), |_| true);
        let v = VfsCounts {
            blocks: 1000,
            bfree: 300,
            bavail: 250,
            frsize: 4096,
            files: 640,
            ffree: 600,
        };
        let m = space(find(&kept, "/"), MountKind::LocalNvme, &v);
        assert_eq!(m.total_bytes, Some(Bytes(4_096_000)));
        assert_eq!(m.used_bytes, Some(Bytes(700 * 4096)));
        assert_eq!(m.available_bytes, Some(Bytes(250 * 4096)));
        assert_eq!(m.inodes_total, Some(640));
        assert_eq!(m.inodes_used, Some(40));
        assert_eq!(m.device, "/dev/nvme0n1p2");
        let no_inodes = VfsCounts {
            files: 0,
            ffree: 0,
            ..v
        };
        let m = space(find(&kept, "/home"), MountKind::Network, &no_inodes);
        assert_eq!((m.inodes_total, m.inodes_used), (None, None));
    }
}
