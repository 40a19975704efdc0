//! Fixtures and helpers shared by the mount tests.

#![allow(dead_code, reason = "each test module uses a different subset")]

use super::table::{MountEntry, parse_mountinfo};
use std::path::{Path, PathBuf};

pub const HOST: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/mountinfo/gpu-host.txt"
));
pub const CONTAINER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/mountinfo/container.txt"
));

pub fn parse(text: &str) -> Vec<MountEntry> {
    let (entries, errors) = parse_mountinfo(text);
    assert!(errors.is_empty(), "{errors:?}");
    entries
}

pub fn points(mounts: &[MountEntry]) -> Vec<&str> {
    mounts.iter().map(|m| m.mount_point.as_str()).collect()
}

pub fn find<'a>(mounts: &'a [MountEntry], point: &str) -> &'a MountEntry {
    mounts
        .iter()
        .find(|m| m.mount_point == point)
        .unwrap_or_else(|| panic!("{point} missing"))
}

/// A throwaway directory, removed on drop.
pub struct TempDir(pub PathBuf);
impl TempDir {
    pub fn new(tag: &str) -> Self {
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
pub fn fake_sysfs(root: &Path) {
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
