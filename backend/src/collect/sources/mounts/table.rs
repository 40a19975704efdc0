//! The mount table: `/proc/self/mountinfo` parsed ([`parse_mountinfo`]) and reduced to the mounts
//! worth showing ([`select_mounts`]): pseudo filesystems, container plumbing, stacked, repeated and
//! single-file bind mounts dropped. Pure: fixtures drive it.

use procfs::process::MountInfo;
use shared::{Source, SourceError};
use std::collections::HashSet;

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
///
/// [`visible_mounts`] is steps 1-2 and [`drop_files_and_repeats`] steps 3-4, for a caller that
/// runs the `is_dir` probes of [`needs_dir_probe`] mounts at once before step 3.
pub fn select_mounts(entries: Vec<MountEntry>, is_dir: impl Fn(&str) -> bool) -> Vec<MountEntry> {
    drop_files_and_repeats(visible_mounts(entries), is_dir)
}

/// Steps 1-2 of [`select_mounts`].
pub fn visible_mounts(entries: Vec<MountEntry>) -> Vec<MountEntry> {
    let real: Vec<MountEntry> = entries.into_iter().filter(|e| !is_pseudo(e)).collect();
    let mut seen_points = HashSet::new();
    let mut top: Vec<MountEntry> = real
        .into_iter()
        .rev()
        .filter(|e| seen_points.insert(e.mount_point.clone()))
        .collect();
    top.reverse();
    top
}

/// Whether step 3 of [`select_mounts`] asks `is_dir` about this mount.
pub fn needs_dir_probe(entry: &MountEntry) -> bool {
    entry.root != "/"
}

/// Steps 3-4 of [`select_mounts`] on the output of [`visible_mounts`].
pub fn drop_files_and_repeats(
    top: Vec<MountEntry>,
    is_dir: impl Fn(&str) -> bool,
) -> Vec<MountEntry> {
    let mut seen_dirs = HashSet::new();
    top.into_iter()
        .filter(|e| !needs_dir_probe(e) || is_dir(&e.mount_point))
        .filter(|e| seen_dirs.insert((e.majmin.clone(), e.root.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::sources::mounts::testutil::*;

    #[test]
    fn container_runtime_and_kubelet_mounts_are_dropped() {
        let (entries, errors) = parse_mountinfo(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/mountinfo/k8s-node.txt"
        )));
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
}
