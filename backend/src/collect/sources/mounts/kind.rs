//! What kind of storage backs a mount: the disk found in sysfs ([`resolve_backing`], through device
//! mapper and md stacks) and the [`classify`] rules (NVMe, SSD, HDD, network, tmpfs, overlay).

use super::table::MountEntry;
use shared::MountKind;
use std::path::{Path, PathBuf};

/// Filesystems served over the network (or a cluster fabric): their space is shared, their speed is
/// the network's.
const NETWORK_FS: &[&str] = &[
    "9p",
    "afs",
    "beegfs",
    "ceph",
    "cifs",
    "fuse.ceph-fuse",
    "fuse.gcsfuse",
    "fuse.glusterfs",
    "fuse.goofys",
    "fuse.juicefs",
    "fuse.mount-s3",
    "fuse.rclone",
    "fuse.s3fs",
    "fuse.sshfs",
    "glusterfs",
    "gpfs",
    "lustre",
    "nfs",
    "nfs4",
    "orangefs",
    "smb3",
    "smbfs",
    "wekafs",
];

/// Filesystems the kernel serves from a local block device or from memory: a stat of them is
/// answered by the kernel, never by a server or a FUSE daemon, so it is made inline. Every other
/// type (network, `fuse.*`, overlay, unknown) is stat'ed with a deadline.
const LOCAL_FS: &[&str] = &[
    "bcachefs", "btrfs", "erofs", "exfat", "ext2", "ext3", "ext4", "f2fs", "iso9660", "jfs",
    "ntfs3", "ramfs", "reiserfs", "tmpfs", "udf", "vfat", "xfs", "zfs",
];

/// Whether calls on this mount (`statvfs`, `metadata`) can be made without a deadline.
pub fn stats_inline(fs_type: &str) -> bool {
    LOCAL_FS.contains(&fs_type)
}

/// The disk under a block-backed mount, as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backing {
    /// The whole device the filesystem is on (`nvme0n1`, `dm-0`, `md0`): partitions resolved to
    /// their disk.
    pub disk: String,
    /// Every disk at the bottom (through dm and md `slaves`) is NVMe.
    pub nvme: bool,
    /// `queue/rotational` of `disk` (device mapper and md report rotational when any member is).
    pub rotational: Option<bool>,
}

/// How deep to follow `slaves` (dm on md on partitions is 3; more is a loop or a broken sysfs).
const MAX_STACK_DEPTH: usize = 8;

fn name_of(p: &Path) -> Option<String> {
    p.file_name()?.to_str().map(str::to_owned)
}

/// The sysfs directory of a whole disk, given the directory of a disk or one of its partitions.
fn disk_dir(node: PathBuf) -> Option<PathBuf> {
    if node.join("partition").exists() {
        node.parent().map(Path::to_path_buf)
    } else {
        Some(node)
    }
}

fn leaf_disks(disk: &Path, depth: usize, out: &mut Vec<String>) {
    let slaves: Vec<PathBuf> = std::fs::read_dir(disk.join("slaves"))
        .map(|d| {
            d.filter_map(|e| std::fs::canonicalize(e.ok()?.path()).ok())
                .collect()
        })
        .unwrap_or_default();
    if slaves.is_empty() || depth >= MAX_STACK_DEPTH {
        out.extend(name_of(disk));
        return;
    }
    for slave in slaves.into_iter().filter_map(disk_dir) {
        leaf_disks(&slave, depth + 1, out);
    }
}

/// Finds the disk under a mount in a sysfs tree (`/sys` in production): by `majmin` through
/// `dev/block/<maj:min>`, or, for filesystems that report an anonymous device (btrfs), by the
/// `/dev/...` source through `class/block/<name>`. `None` when it is not a block device.
pub fn resolve_backing(sysfs: &Path, majmin: &str, device: &str) -> Option<Backing> {
    let by_majmin = (!majmin.starts_with("0:"))
        .then(|| std::fs::canonicalize(sysfs.join("dev/block").join(majmin)).ok())
        .flatten();
    let node = match by_majmin {
        Some(n) => n,
        None => {
            let dev = device.strip_prefix("/dev/")?;
            let name = std::fs::canonicalize(device)
                .ok()
                .and_then(|p| name_of(&p))
                .unwrap_or_else(|| dev.to_owned());
            std::fs::canonicalize(sysfs.join("class/block").join(name)).ok()?
        }
    };
    let disk = disk_dir(node)?;
    let mut leaves = Vec::new();
    leaf_disks(&disk, 0, &mut leaves);
    let rotational = std::fs::read_to_string(disk.join("queue/rotational"))
        .ok()
        .and_then(|t| match t.trim() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        });
    Some(Backing {
        disk: name_of(&disk)?,
        nvme: !leaves.is_empty() && leaves.iter().all(|l| l.starts_with("nvme")),
        rotational,
    })
}

/// Whether the kind of this filesystem type does not depend on a disk (so no sysfs lookup).
pub(super) fn kind_by_type(fs_type: &str) -> Option<MountKind> {
    if NETWORK_FS.contains(&fs_type) {
        Some(MountKind::Network)
    } else if fs_type == "tmpfs" {
        Some(MountKind::Tmpfs)
    } else if fs_type == "overlay" || fs_type == "fuse.fuse-overlayfs" {
        Some(MountKind::Overlay)
    } else {
        None
    }
}

/// What kind of storage backs a mount. A block device is NVMe when every disk under it is, else
/// SSD or HDD from `rotational` (virtio disks claim to be rotational), else `Local`. ZFS pools name
/// no single device but are local disks: `Local`.
pub fn classify(entry: &MountEntry, backing: Option<&Backing>) -> MountKind {
    if let Some(kind) = kind_by_type(&entry.fs_type) {
        return kind;
    }
    match backing {
        Some(b) if b.nvme => MountKind::LocalNvme,
        Some(b) => match b.rotational {
            Some(true) => MountKind::LocalHdd,
            Some(false) => MountKind::LocalSsd,
            None => MountKind::Local,
        },
        None if entry.device.starts_with("/dev/") || entry.fs_type == "zfs" => MountKind::Local,
        None => MountKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::sources::mounts::table::{parse_mountinfo, select_mounts};
    use crate::collect::sources::mounts::testutil::*;

    #[test]
    fn classifies_through_sysfs() {
        let dir = TempDir::new("sysfs");
        fake_sysfs(&dir.0);
        let kept = select_mounts(parse(HOST), |_| true);
        let kind = |point: &str| {
            let e = find(&kept, point);
            classify(e, resolve_backing(&dir.0, &e.majmin, &e.device).as_ref())
        };
        assert_eq!(kind("/"), MountKind::LocalNvme);
        assert_eq!(kind("/boot/efi"), MountKind::LocalNvme);
        assert_eq!(kind("/data"), MountKind::LocalNvme); // dm-0 on nvme0n1p2
        assert_eq!(kind("/mnt/datasets-local"), MountKind::LocalNvme);
        assert_eq!(kind("/scratch"), MountKind::LocalSsd);
        assert_eq!(kind("/archive"), MountKind::LocalHdd);
        assert_eq!(kind("/raid"), MountKind::LocalHdd); // md0 over an HDD and an SSD
        assert_eq!(kind("/mnt/datasets"), MountKind::Network);
        assert_eq!(kind("/home"), MountKind::Network);
        assert_eq!(kind("/mnt/remote files"), MountKind::Network);
        assert_eq!(kind("/lustre"), MountKind::Network);
        assert_eq!(kind("/mnt/cephfs"), MountKind::Network);
        assert_eq!(kind("/tmp"), MountKind::Tmpfs);
        assert_eq!(kind("/dev/shm"), MountKind::Tmpfs);
        // Docker's own overlays are plumbing (dropped); an overlay elsewhere is an Overlay.
        assert!(
            kept.iter()
                .all(|m| !m.mount_point.starts_with("/var/lib/docker"))
        );
        let (container, _) = parse_mountinfo(CONTAINER);
        let root = find(&container, "/");
        assert_eq!(classify(root, None), MountKind::Overlay);
        assert_eq!(kind("/tank"), MountKind::Local);
        assert_eq!(kind("/mnt/iso"), MountKind::Other);

        let data = find(&kept, "/data");
        let backing = resolve_backing(&dir.0, &data.majmin, &data.device).expect("dm-0");
        assert_eq!(backing.disk, "dm-0");
        let root = find(&kept, "/");
        let backing = resolve_backing(&dir.0, &root.majmin, &root.device).expect("nvme");
        assert_eq!(backing.disk, "nvme0n1");
        assert_eq!(backing.rotational, Some(false));
    }

    #[test]
    fn block_mount_without_sysfs_is_local() {
        let kept = select_mounts(parse(HOST), |_| true);
        let root = find(&kept, "/");
        let none = Path::new("/nonexistent-sysfs");
        assert_eq!(
            resolve_backing(none, &root.majmin, "/nonexistent/dev"),
            None
        );
        assert_eq!(classify(root, None), MountKind::Local);
    }
}
