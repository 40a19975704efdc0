//! Mounted filesystems from `/proc/self/mountinfo`, with space from `statvfs` and the storage kind.
//!
//! The sampler calls [`ProcMounts`] once per tick through [`MountSource`]. The pipeline is pure up
//! to the last step, so fixtures drive it: [`table::parse_mountinfo`] -> [`table::select_mounts`]
//! (drop pseudo filesystems, stacked and repeated mounts) -> [`kind::classify`] (with the disk
//! found by [`kind::resolve_backing`] in sysfs) -> [`space::space`] from `statvfs`, which runs
//! through [`statvfs`]'s deadline where a file server can hang it. A mount whose `statvfs` fails
//! is a per-item error; the others still report.

pub mod kind;
pub mod space;
pub mod statvfs;
pub mod table;
#[cfg(test)]
mod testutil;
pub mod watch;

pub use kind::{Backing, classify, resolve_backing};
pub use space::{VfsCounts, space};
pub use table::{MountEntry, is_pseudo, parse_mountinfo, select_mounts, unescape};

use super::{MountSource, Reading, SourceFailure};
use kind::kind_by_type;
use shared::{Mount, MountKind, Source, SourceError};
use statvfs::{BoundedStatvfs, NETWORK_STATVFS_DEADLINE, real_statvfs};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

/// Reads the mount table of vramio's own mount namespace.
pub struct ProcMounts {
    mountinfo: PathBuf,
    sysfs: PathBuf,
    network: BoundedStatvfs,
    /// `resolve_backing` per (majmin, device): sysfs walks are not repeated every tick for
    /// filesystems that stay mounted.
    backing: HashMap<(String, String), Option<Backing>>,
    /// Change notifications of `mountinfo`, and the table as last read.
    watch: watch::TableWatch,
    table: Option<(Vec<MountEntry>, Vec<SourceError>)>,
}

impl ProcMounts {
    pub fn new() -> Self {
        Self::with_paths("/proc/self/mountinfo", "/sys")
    }

    /// Reads this mountinfo file and this sysfs tree instead of the host's. `statvfs` still runs on
    /// the mount points as listed.
    pub fn with_paths(mountinfo: impl Into<PathBuf>, sysfs: impl Into<PathBuf>) -> Self {
        let mountinfo = mountinfo.into();
        ProcMounts {
            watch: watch::TableWatch::new(&mountinfo),
            table: None,
            mountinfo,
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

impl ProcMounts {
    /// The selected mounts and the mountinfo lines that did not parse: read and selected again
    /// only when the mount table changed (see [`watch`]).
    fn table(&mut self) -> Result<(Vec<MountEntry>, Vec<SourceError>), SourceFailure> {
        if let Some(table) = &self.table
            && !self.watch.changed()
        {
            return Ok(table.clone());
        }
        let text =
            std::fs::read_to_string(&self.mountinfo).map_err(|source| SourceFailure::Io {
                path: self.mountinfo.clone(),
                source,
            })?;
        self.watch.read();
        let (entries, errors) = parse_mountinfo(&text);
        // A mount point that cannot be stat'ed is kept: statvfs below reports why.
        let is_dir = |p: &str| std::fs::metadata(p).map_or(true, |m| m.is_dir());
        let table = (select_mounts(entries, is_dir), errors);
        self.table = Some(table.clone());
        Ok(table)
    }
}

impl MountSource for ProcMounts {
    fn sample(&mut self) -> Result<Reading<Vec<Mount>>, SourceFailure> {
        let (selected, mut errors) = self.table()?;
        let mut mounts = Vec::new();
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
    use testutil::TempDir;

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
