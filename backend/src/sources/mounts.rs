//! Mounted filesystems from `/proc/self/mountinfo`, with space from `statvfs` and the storage kind.
//!
//! The sampler calls [`ProcMounts`] once per tick through [`MountSource`]. The pipeline is pure up
//! to the last step, so fixtures drive it: [`parse_mountinfo`] -> [`select_mounts`] (drop pseudo
//! filesystems, stacked and repeated mounts) -> [`classify`] (with the disk found by
//! [`resolve_backing`] in sysfs) -> [`space`] from `statvfs`. A mount whose `statvfs` fails is a
//! per-item error; the others still report.

use super::bounded_statvfs::{BoundedStatvfs, NETWORK_STATVFS_DEADLINE, real_statvfs};
use super::{MountSource, Reading, SourceFailure};
use procfs::process::MountInfo;
use shared::{Bytes, Mount, MountKind, Source, SourceError};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Kernel and virtual filesystems that hold no user data: never shown.
/// `squashfs` is here too: read-only images (snaps) that are always 100 % full, one per package.
const PSEUDO_FS: &[&str] = &[
    "autofs",
    "binfmt_misc",
    "bpf",
    "cgroup",
    "cgroup2",
    "configfs",
    "debugfs",
    "devpts",
    "devtmpfs",
    "efivarfs",
    "fusectl",
    "fuse.gvfsd-fuse",
    "fuse.lxcfs",
    "fuse.portal",
    "fuse.snapfuse",
    "hugetlbfs",
    "mqueue",
    "nsfs",
    "proc",
    "pstore",
    "ramfs",
    "rootfs",
    "rpc_pipefs",
    "securityfs",
    "selinuxfs",
    "squashfs",
    "sysfs",
    "tracefs",
];

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

/// Small tmpfs instances that are per-login, per-service or container plumbing, not storage a job
/// fills: a tmpfs at or below one of these is dropped, and so is a tmpfs on `/dev` itself (a
/// container's device directory); `/dev/shm`, `/run` and `/tmp` stay.
const PLUMBING_TMPFS: &[&str] = &[
    "/proc",
    "/sys",
    "/run/user",
    "/run/credentials",
    "/run/lock",
    "/run/secrets",
    "/var/run/secrets",
];

/// Container runtimes' and kubelet's own mounts: every container's root overlay, its secrets and
/// volumes. On a Kubernetes GPU node there are hundreds; the host's real filesystems under them
/// are listed once by their own mount point. Dropped whatever their type.
const CONTAINER_PLUMBING: &[&str] = &[
    "/var/lib/docker",
    "/var/lib/containerd",
    "/run/containerd",
    "/var/lib/kubelet/pods",
    "/var/lib/kubelet/plugins",
    "/run/k3s",
    "/var/lib/rancher/k3s/agent/containerd",
    "/run/netns",
    "/var/run/netns",
    "/run/docker",
    "/var/lib/containers/storage/overlay",
];

/// One line of mountinfo, with the escapes (`\040` for a space) undone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    pub mount_point: String,
    /// The directory of the filesystem mounted there (`/` unless a bind mount of a subtree or file).
    pub root: String,
    /// `st_dev` of the filesystem as `major:minor`.
    pub majmin: String,
    /// The mount source (`/dev/nvme0n1p2`, `server:/export`, `tmpfs`; `none` when the kernel has none).
    pub device: String,
    pub fs_type: String,
    pub read_only: bool,
}

/// Undoes the octal escapes the kernel writes for space, tab, newline and backslash in paths.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                let v = d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl MountEntry {
    fn from_info(m: &MountInfo) -> Self {
        let ro = |opts: &std::collections::HashMap<String, Option<String>>| opts.contains_key("ro");
        MountEntry {
            mount_point: unescape(&m.mount_point.to_string_lossy()),
            root: unescape(&m.root),
            majmin: m.majmin.clone(),
            device: m
                .mount_source
                .as_deref()
                .map_or_else(|| "none".to_owned(), unescape),
            fs_type: m.fs_type.clone(),
            read_only: ro(&m.mount_options) || ro(&m.super_options),
        }
    }
}

/// Parses mountinfo text. A line that does not parse is a per-item error, the rest still count.
pub fn parse_mountinfo(text: &str) -> (Vec<MountEntry>, Vec<SourceError>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match MountInfo::from_line(line) {
            Ok(m) => entries.push(MountEntry::from_info(&m)),
            Err(e) => errors.push(SourceError {
                source: Source::Mounts,
                item: Some(format!("mountinfo line {}", i + 1)),
                message: format!("cannot parse: {e}"),
            }),
        }
    }
    (entries, errors)
}

fn is_at_or_under(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether a mount is kernel or container plumbing rather than storage (see [`PSEUDO_FS`],
/// [`PLUMBING_TMPFS`], [`CONTAINER_PLUMBING`]).
pub fn is_pseudo(entry: &MountEntry) -> bool {
    PSEUDO_FS.contains(&entry.fs_type.as_str())
        || CONTAINER_PLUMBING
            .iter()
            .any(|d| is_at_or_under(&entry.mount_point, d))
        || (entry.fs_type == "tmpfs"
            && (entry.mount_point == "/dev"
                || PLUMBING_TMPFS
                    .iter()
                    .any(|d| is_at_or_under(&entry.mount_point, d))))
}

/// The mounts worth showing, in mountinfo order:
/// 1. pseudo filesystems dropped ([`is_pseudo`]);
/// 2. one entry per mount point: the last one, which is the one on top and visible (`/dev/shm`
///    mounted twice shows the second);
/// 3. bind mounts of something that is not a directory dropped (a container's `/etc/hosts`,
///    `/usr/bin/nvidia-smi`): only asked of mounts whose `root` is not `/`, through `is_dir`;
/// 4. a mount of the same filesystem directory (`majmin` and `root`) as an earlier one dropped:
///    the same space seen again through a bind mount.
pub fn select_mounts(entries: Vec<MountEntry>, is_dir: impl Fn(&str) -> bool) -> Vec<MountEntry> {
    let real: Vec<MountEntry> = entries.into_iter().filter(|e| !is_pseudo(e)).collect();
    let mut seen_points = HashSet::new();
    let mut top: Vec<MountEntry> = real
        .into_iter()
        .rev()
        .filter(|e| seen_points.insert(e.mount_point.clone()))
        .collect();
    top.reverse();
    let mut seen_dirs = HashSet::new();
    top.into_iter()
        .filter(|e| e.root == "/" || is_dir(&e.mount_point))
        .filter(|e| seen_dirs.insert((e.majmin.clone(), e.root.clone())))
        .collect()
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
fn kind_by_type(fs_type: &str) -> Option<MountKind> {
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
        fs_type: entry.fs_type.clone(),
        kind,
        total_bytes: bytes(v.blocks),
        used_bytes: bytes(v.blocks.saturating_sub(v.bfree)),
        available_bytes: bytes(v.bavail),
        inodes_total: has_inodes.then_some(v.files),
        inodes_used: has_inodes.then(|| v.files.saturating_sub(v.ffree)),
        read_only: entry.read_only,
    }
}

/// Reads the mount table of vramio's own mount namespace.
pub struct ProcMounts {
    mountinfo: PathBuf,
    sysfs: PathBuf,
    network: BoundedStatvfs,
    /// `resolve_backing` per (majmin, device): sysfs walks are not repeated every tick for
    /// filesystems that stay mounted.
    backing: HashMap<(String, String), Option<Backing>>,
}

impl ProcMounts {
    pub fn new() -> Self {
        Self::with_paths("/proc/self/mountinfo", "/sys")
    }

    /// Reads this mountinfo file and this sysfs tree instead of the host's. `statvfs` still runs on
    /// the mount points as listed.
    pub fn with_paths(mountinfo: impl Into<PathBuf>, sysfs: impl Into<PathBuf>) -> Self {
        ProcMounts {
            mountinfo: mountinfo.into(),
            sysfs: sysfs.into(),
            network: BoundedStatvfs::default(),
            backing: HashMap::new(),
        }
    }
}

impl Default for ProcMounts {
    fn default() -> Self {
        Self::new()
    }
}

impl MountSource for ProcMounts {
    fn sample(&mut self) -> Result<Reading<Vec<Mount>>, SourceFailure> {
        let text =
            std::fs::read_to_string(&self.mountinfo).map_err(|source| SourceFailure::Io {
                path: self.mountinfo.clone(),
                source,
            })?;
        let (entries, mut errors) = parse_mountinfo(&text);
        // A mount point that cannot be stat'ed is kept: statvfs below reports why.
        let is_dir = |p: &str| std::fs::metadata(p).map_or(true, |m| m.is_dir());
        let mut mounts = Vec::new();
        let selected = select_mounts(entries, is_dir);
        self.network
            .retain(|p| selected.iter().any(|e| e.mount_point == p));
        self.backing.retain(|(majmin, device), _| {
            selected
                .iter()
                .any(|e| &e.majmin == majmin && &e.device == device)
        });
        let deadline = Instant::now() + NETWORK_STATVFS_DEADLINE;
        for entry in selected {
            // A dead file server can hang statvfs for good: network mounts get a deadline.
            let counts = if kind_by_type(&entry.fs_type) == Some(MountKind::Network) {
                self.network.statvfs(&entry.mount_point, deadline)
            } else {
                real_statvfs(&entry.mount_point)
            };
            match counts {
                Ok(counts) => {
                    let backing = if kind_by_type(&entry.fs_type).is_none() {
                        let key = (entry.majmin.clone(), entry.device.clone());
                        let sysfs = &self.sysfs;
                        self.backing
                            .entry(key)
                            .or_insert_with(|| resolve_backing(sysfs, &entry.majmin, &entry.device))
                            .clone()
                    } else {
                        None
                    };
                    let kind = classify(&entry, backing.as_ref());
                    mounts.push(space(&entry, kind, &counts));
                }
                Err(message) => errors.push(SourceError {
                    source: Source::Mounts,
                    item: Some(entry.mount_point.clone()),
                    message,
                }),
            }
        }
        Ok(Reading {
            value: mounts,
            errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = include_str!("../../../tests/fixtures/mountinfo/gpu-host.txt");
    const CONTAINER: &str = include_str!("../../../tests/fixtures/mountinfo/container.txt");

    fn parse(text: &str) -> Vec<MountEntry> {
        let (entries, errors) = parse_mountinfo(text);
        assert!(errors.is_empty(), "{errors:?}");
        entries
    }

    fn points(mounts: &[MountEntry]) -> Vec<&str> {
        mounts.iter().map(|m| m.mount_point.as_str()).collect()
    }

    fn find<'a>(mounts: &'a [MountEntry], point: &str) -> &'a MountEntry {
        mounts
            .iter()
            .find(|m| m.mount_point == point)
            .unwrap_or_else(|| panic!("{point} missing"))
    }

    /// A throwaway directory, removed on drop.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(tag: &str) -> Self {
            let p = std::env::temp_dir().join(format!("vramio-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).expect("temp dir");
            TempDir(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A sysfs tree for the gpu-host fixture: an NVMe with two partitions, an HDD `sda`, an SSD
    /// `sdb`, `dm-0` (LVM) on `nvme0n1p2`, and `md0` mirrored over `sda1` and `sdb1`.
    fn fake_sysfs(root: &Path) {
        use std::os::unix::fs::symlink;
        let dev = |rel: &str| root.join("devices").join(rel);
        let disk = |rel: &str, rotational: &str| {
            std::fs::create_dir_all(dev(rel).join("queue")).expect("mkdir");
            std::fs::write(dev(rel).join("queue/rotational"), rotational).expect("write");
        };
        let part = |rel: &str, n: &str| {
            std::fs::create_dir_all(dev(rel)).expect("mkdir");
            std::fs::write(dev(rel).join("partition"), n).expect("write");
        };
        disk("pci0/nvme/nvme0n1", "0\n");
        part("pci0/nvme/nvme0n1/nvme0n1p1", "1\n");
        part("pci0/nvme/nvme0n1/nvme0n1p2", "2\n");
        disk("pci0/ata1/sda", "1\n");
        part("pci0/ata1/sda/sda1", "1\n");
        disk("pci0/ata2/sdb", "0\n");
        part("pci0/ata2/sdb/sdb1", "1\n");
        disk("virtual/block/dm-0", "0\n");
        disk("virtual/block/md0", "1\n");
        for (holder, slave, target) in [
            ("dm-0", "nvme0n1p2", "pci0/nvme/nvme0n1/nvme0n1p2"),
            ("md0", "sda1", "pci0/ata1/sda/sda1"),
            ("md0", "sdb1", "pci0/ata2/sdb/sdb1"),
        ] {
            let slaves = dev("virtual/block").join(holder).join("slaves");
            std::fs::create_dir_all(&slaves).expect("mkdir");
            symlink(dev(target), slaves.join(slave)).expect("symlink");
        }
        std::fs::create_dir_all(root.join("dev/block")).expect("mkdir");
        std::fs::create_dir_all(root.join("class/block")).expect("mkdir");
        for (majmin, target) in [
            ("259:0", "pci0/nvme/nvme0n1"),
            ("259:1", "pci0/nvme/nvme0n1/nvme0n1p1"),
            ("259:2", "pci0/nvme/nvme0n1/nvme0n1p2"),
            ("8:0", "pci0/ata1/sda"),
            ("8:1", "pci0/ata1/sda/sda1"),
            ("8:16", "pci0/ata2/sdb"),
            ("8:17", "pci0/ata2/sdb/sdb1"),
            ("253:0", "virtual/block/dm-0"),
            ("9:0", "virtual/block/md0"),
        ] {
            symlink(dev(target), root.join("dev/block").join(majmin)).expect("symlink");
            let name = target.rsplit('/').next().expect("name");
            symlink(dev(target), root.join("class/block").join(name)).expect("symlink");
        }
    }

    #[test]
    fn container_runtime_and_kubelet_mounts_are_dropped() {
        let (entries, errors) = parse_mountinfo(include_str!(
            "../../../tests/fixtures/mountinfo/k8s-node.txt"
        ));
        assert!(errors.is_empty(), "{errors:?}");
        let kept: Vec<String> = select_mounts(entries, |_| true)
            .into_iter()
            .map(|e| e.mount_point)
            .collect();
        assert_eq!(kept, vec!["/", "/dev/shm", "/data", "/tmp"]);
    }

    #[test]
    fn unescapes_octal() {
        assert_eq!(unescape(r"/mnt/remote\040files"), "/mnt/remote files");
        assert_eq!(unescape(r"a\011b\134c"), "a\tb\\c");
        assert_eq!(unescape(r"trailing\04"), r"trailing\04");
    }

    #[test]
    fn parses_fields() {
        let all = parse(HOST);
        assert_eq!(all.len(), 41);
        let root = find(&all, "/");
        assert_eq!(root.majmin, "259:2");
        assert_eq!(root.device, "/dev/nvme0n1p2");
        assert_eq!(root.fs_type, "ext4");
        assert!(!root.read_only);
        assert!(find(&all, "/mnt/datasets").read_only);
        assert!(find(&all, "/archive").read_only);
        assert_eq!(find(&all, "/mnt/remote files").fs_type, "fuse.sshfs");
        let (_, errors) = parse_mountinfo("22 1 259:2 / /\n");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].item.as_deref(), Some("mountinfo line 1"));
    }

    #[test]
    fn host_keeps_real_filesystems_once() {
        let kept = select_mounts(parse(HOST), |_| true);
        assert_eq!(
            points(&kept),
            [
                "/",
                "/run",
                "/boot/efi",
                "/data",
                "/scratch",
                "/mnt/datasets",
                "/home",
                "/mnt/datasets-local",
                "/mnt/remote files",
                "/tmp",
                "/raid",
                "/dev/shm",
                "/lustre",
                "/mnt/cephfs",
                "/archive",
                "/tank",
                "/mnt/iso",
            ]
        );
        // The /dev/shm on top is the second one.
        assert_eq!(find(&kept, "/dev/shm").device, "shm");
    }

    #[test]
    fn container_drops_single_file_binds() {
        let files = [
            "/etc/resolv.conf",
            "/etc/hostname",
            "/etc/hosts",
            "/usr/bin/nvidia-smi",
            "/run/nvidia-persistenced/socket",
        ];
        let kept = select_mounts(parse(CONTAINER), |p| !files.contains(&p));
        assert_eq!(
            points(&kept),
            ["/", "/dev/shm", "/data", "/workspace", "/mnt/datasets"]
        );
    }

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
        assert_eq!(m.total_bytes, Bytes(4_096_000));
        assert_eq!(m.used_bytes, Bytes(700 * 4096));
        assert_eq!(m.available_bytes, Bytes(250 * 4096));
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

    #[test]
    fn failing_statvfs_is_a_per_item_error() {
        let dir = TempDir::new("mountinfo");
        let path = dir.0.join("mountinfo");
        let text = "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
                    90 22 0:99 / /nonexistent/vramio/mnt rw - ext4 /dev/sdz1 rw\n";
        std::fs::write(&path, text).expect("write");
        let reading = ProcMounts::with_paths(&path, dir.0.join("sys"))
            .sample()
            .expect("mountinfo readable");
        assert_eq!(points_of(&reading.value), ["/"]);
        assert_eq!(reading.errors.len(), 1);
        assert_eq!(reading.errors[0].source, Source::Mounts);
        assert_eq!(
            reading.errors[0].item.as_deref(),
            Some("/nonexistent/vramio/mnt")
        );
    }

    fn points_of(mounts: &[Mount]) -> Vec<&str> {
        mounts.iter().map(|m| m.mount_point.as_str()).collect()
    }

    #[test]
    fn this_host_has_a_root() {
        let reading = ProcMounts::new().sample().expect("this host's mountinfo");
        let root = reading
            .value
            .iter()
            .find(|m| m.mount_point == "/")
            .expect("a / mount");
        assert!(root.total_bytes.0 > 0);
        assert!(reading.value.iter().all(|m| m.fs_type != "proc"));
    }
}
