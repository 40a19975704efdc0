//! Mounted filesystems from `/proc/self/mountinfo`, with space from `statvfs` and the storage kind.
//!
//! The sampler calls [`ProcMounts`] once per tick through [`MountSource`]. The pipeline is pure up
//! to the calls on mount points, so fixtures drive it: [`table::parse_mountinfo`] ->
//! [`table::select_mounts`] (drop pseudo filesystems, stacked, single-file and repeated mounts) ->
//! [`kind::classify`] (with the disk found by [`kind::resolve_backing`] in sysfs) ->
//! [`space::space`] from `statvfs`. The calls on mount points (the bind-mount `is_dir` probe and
//! `statvfs`) run through [`statvfs`]'s deadline workers unless the filesystem is known to be
//! local ([`kind::stats_inline`]): a hung file server or FUSE daemon costs one deadline and makes
//! its mount a per-item error; the others still report.

pub mod kind;
pub mod space;
pub mod statvfs;
pub mod table;
#[cfg(test)]
mod testutil;
pub mod watch;

pub use kind::{Backing, classify, resolve_backing, stats_inline};
pub use space::{VfsCounts, space};
pub use table::{MountEntry, is_pseudo, parse_mountinfo, select_mounts, unescape};

use super::{MountSource, Reading, SourceFailure};
use kind::kind_by_type;
use shared::{Mount, Source, SourceError};
use statvfs::{Bounded, BoundedStatvfs, IsDirFn, STAT_DEADLINE, StatFn, real_is_dir, real_statvfs};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;
use table::{drop_files_and_repeats, needs_dir_probe, visible_mounts};

/// Reads the mount table of vramio's own mount namespace.
pub struct ProcMounts {
    mountinfo: PathBuf,
    sysfs: PathBuf,
    stat: StatFn,
    is_dir: IsDirFn,
    /// Deadline workers for mounts not known to be local.
    bounded_stat: BoundedStatvfs,
    bounded_is_dir: Bounded<bool>,
    /// `resolve_backing` per (majmin, device): sysfs walks are not repeated every tick for
    /// filesystems that stay mounted.
    backing: HashMap<(String, String), Option<Backing>>,
    /// Change notifications of `mountinfo`, and the table as last read.
    watch: watch::TableWatch,
    table: Option<Table>,
}

/// The mounts selected from `mountinfo`, and its lines that did not parse.
type Table = (Vec<MountEntry>, Vec<SourceError>);

impl ProcMounts {
    pub fn new() -> Self {
        Self::with_paths("/proc/self/mountinfo", "/sys")
    }

    /// Reads this mountinfo file and this sysfs tree instead of the host's. `statvfs` still runs on
    /// the mount points as listed.
    pub fn with_paths(mountinfo: impl Into<PathBuf>, sysfs: impl Into<PathBuf>) -> Self {
        Self::with_calls(mountinfo, sysfs, real_statvfs, real_is_dir)
    }

    /// Like [`ProcMounts::with_paths`], with stand-ins for `statvfs` and the `is_dir` probe.
    pub fn with_calls(
        mountinfo: impl Into<PathBuf>,
        sysfs: impl Into<PathBuf>,
        stat: StatFn,
        is_dir: IsDirFn,
    ) -> Self {
        let mountinfo = mountinfo.into();
        ProcMounts {
            watch: watch::TableWatch::new(&mountinfo),
            table: None,
            mountinfo,
            sysfs: sysfs.into(),
            stat,
            is_dir,
            bounded_stat: BoundedStatvfs::with(stat),
            bounded_is_dir: Bounded::new("stat", is_dir),
            backing: HashMap::new(),
        }
    }

    /// `is_dir` of every visible bind mount not known to be local, asked at once and waited for
    /// until one deadline. One that does not answer counts as a directory: the mount is kept and
    /// its `statvfs` (bounded too) reports the hang.
    fn probe_dirs(
        &mut self,
        visible: &[MountEntry],
        limit: Option<Instant>,
    ) -> HashMap<String, bool> {
        let bounded: Vec<&str> = visible
            .iter()
            .filter(|e| needs_dir_probe(e) && !stats_inline(&e.fs_type))
            .map(|e| e.mount_point.as_str())
            .collect();
        self.bounded_is_dir.retain(|p| bounded.contains(&p));
        let started: Vec<&str> = bounded
            .into_iter()
            .filter(|p| self.bounded_is_dir.start(p).is_ok())
            .collect();
        let deadline = phase_deadline(limit);
        started
            .into_iter()
            .map(|p| {
                let answer = self.bounded_is_dir.finish(p, deadline).unwrap_or(true);
                (p.to_owned(), answer)
            })
            .collect()
    }
}

impl Default for ProcMounts {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcMounts {
    /// The selected mounts and the mountinfo lines that did not parse, taken out of
    /// `self.table` for the caller to put back: read and selected again only when the mount
    /// table changed (see [`watch`]), and never copied.
    fn take_table(&mut self, limit: Option<Instant>) -> Result<Table, SourceFailure> {
        if let Some(table) = self.table.take_if(|_| !self.watch.changed()) {
            return Ok(table);
        }
        let text =
            std::fs::read_to_string(&self.mountinfo).map_err(|source| SourceFailure::Io {
                path: self.mountinfo.clone(),
                source,
            })?;
        self.watch.read();
        let (entries, errors) = parse_mountinfo(&text);
        let visible = visible_mounts(entries);
        let probed = self.probe_dirs(&visible, limit);
        let is_dir = self.is_dir;
        let selected = drop_files_and_repeats(visible, |p| {
            probed.get(p).copied().unwrap_or_else(|| is_dir(p))
        });
        Ok((selected, errors))
    }
}

/// When one phase of calls (the probes, then the `statvfs` calls) stops waiting: after
/// [`STAT_DEADLINE`], or at `limit` (the sampler's tick deadline) if that comes first.
fn phase_deadline(limit: Option<Instant>) -> Instant {
    let own = Instant::now() + STAT_DEADLINE;
    limit.map_or(own, |l| l.min(own))
}

impl MountSource for ProcMounts {
    fn sample(&mut self) -> Result<Reading<Vec<Mount>>, SourceFailure> {
        self.read(None)
    }

    /// Every call on a mount point not known to be local runs on a deadline worker.
    fn bounds_its_calls(&self) -> bool {
        true
    }

    fn sample_until(&mut self, deadline: Instant) -> Result<Reading<Vec<Mount>>, SourceFailure> {
        self.read(Some(deadline))
    }
}

impl ProcMounts {
    /// One reading; no phase waits past `limit`.
    fn read(&mut self, limit: Option<Instant>) -> Result<Reading<Vec<Mount>>, SourceFailure> {
        let table = self.take_table(limit)?;
        let (selected, table_errors) = &table;
        let mut errors = table_errors.clone();
        self.bounded_stat
            .retain(|p| selected.iter().any(|e| e.mount_point == p));
        self.backing.retain(|(majmin, device), _| {
            selected
                .iter()
                .any(|e| &e.majmin == majmin && &e.device == device)
        });
        // Start every bounded statvfs first, so they run side by side, then collect.
        let started: HashMap<&str, Result<(), String>> = selected
            .iter()
            .filter(|e| !stats_inline(&e.fs_type))
            .map(|e| {
                let p = e.mount_point.as_str();
                (p, self.bounded_stat.start(p))
            })
            .collect();
        let deadline = phase_deadline(limit);
        let mut mounts = Vec::with_capacity(selected.len());
        for entry in selected {
            let counts = match started.get(entry.mount_point.as_str()) {
                None => (self.stat)(&entry.mount_point),
                Some(Err(e)) => Err(e.clone()),
                Some(Ok(())) => self
                    .bounded_stat
                    .finish(&entry.mount_point, deadline)
                    .and_then(|r| r),
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
                    let kind = classify(entry, backing.as_ref());
                    mounts.push(space(entry, kind, &counts));
                }
                Err(message) => errors.push(SourceError {
                    source: Source::Mounts,
                    item: Some(entry.mount_point.clone()),
                    message,
                }),
            }
        }
        self.table = Some(table);
        Ok(Reading {
            value: mounts,
            errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
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

    const HANG: Duration = Duration::from_secs(3);

    /// A FUSE daemon that hangs `statvfs` of `/mnt/hung`; every other mount answers.
    fn hangs_on_fuse(path: &str) -> Result<VfsCounts, String> {
        if path == "/mnt/hung" {
            std::thread::sleep(HANG);
        }
        Ok(VfsCounts {
            blocks: 100,
            bfree: 50,
            bavail: 40,
            frsize: 4096,
            files: 10,
            ffree: 5,
        })
    }

    /// A FUSE daemon that hangs the `metadata` probe of the bind mount `/mnt/bind`.
    fn probe_hangs_on_bind(path: &str) -> bool {
        if path == "/mnt/bind" {
            std::thread::sleep(HANG);
        }
        true
    }

    #[test]
    fn a_hung_fuse_daemon_costs_a_deadline_and_one_per_item_error() {
        let dir = TempDir::new("mountinfo-fuse");
        let path = dir.0.join("mountinfo");
        let text = "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
                    80 22 0:50 / /mnt/hung rw - fuse.hungfs hungfs rw\n\
                    81 22 0:51 / /mnt/fine rw - fuse.finefs finefs rw\n\
                    82 22 0:52 /sub /mnt/bind rw - fuse.bindfs bindfs rw\n\
                    83 22 0:53 / /mnt/nfs rw - nfs4 server:/export rw\n";
        std::fs::write(&path, text).expect("write");
        let mut source =
            ProcMounts::with_calls(&path, dir.0.join("sys"), hangs_on_fuse, probe_hangs_on_bind);
        for tick in 0..2 {
            let t = Instant::now();
            let reading = source.sample().expect("mountinfo readable");
            let took = t.elapsed();
            assert!(
                took < HANG / 2,
                "tick {tick} took {took:?}: a hung call was waited for past its deadline"
            );
            assert_eq!(
                points_of(&reading.value),
                ["/", "/mnt/fine", "/mnt/bind", "/mnt/nfs"],
                "tick {tick}: the other mounts report"
            );
            assert_eq!(reading.errors.len(), 1, "tick {tick}: {:?}", reading.errors);
            let error = &reading.errors[0];
            assert_eq!(error.source, Source::Mounts);
            assert_eq!(error.item.as_deref(), Some("/mnt/hung"));
            assert!(
                error.message.contains("has not answered"),
                "{}",
                error.message
            );
        }
    }

    #[test]
    fn a_tick_deadline_before_the_call_deadline_is_kept() {
        let dir = TempDir::new("mountinfo-fuse-limit");
        let path = dir.0.join("mountinfo");
        let text = "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
                    80 22 0:50 / /mnt/hung rw - fuse.hungfs hungfs rw\n\
                    81 22 0:51 / /mnt/fine rw - fuse.finefs finefs rw\n";
        std::fs::write(&path, text).expect("write");
        let mut source =
            ProcMounts::with_calls(&path, dir.0.join("sys"), hangs_on_fuse, real_is_dir);
        assert!(source.bounds_its_calls());
        let limit = Duration::from_millis(40);
        let t = Instant::now();
        let reading = source.sample_until(t + limit).expect("mountinfo readable");
        let took = t.elapsed();
        // The hung statvfs alone would be waited for until STAT_DEADLINE.
        assert!(
            took < STAT_DEADLINE,
            "took {took:?}: waited past the tick's deadline"
        );
        assert!(took >= limit, "took {took:?}: gave up before the deadline");
        assert_eq!(points_of(&reading.value), ["/", "/mnt/fine"]);
        assert_eq!(reading.errors.len(), 1, "{:?}", reading.errors);
        assert_eq!(reading.errors[0].item.as_deref(), Some("/mnt/hung"));
    }

    #[test]
    fn only_local_filesystems_are_stat_ed_inline() {
        for fs in ["ext4", "xfs", "btrfs", "zfs", "tmpfs", "vfat"] {
            assert!(stats_inline(fs), "{fs}");
        }
        for fs in [
            "nfs4",
            "fuse.sshfs",
            "fuse.something",
            "overlay",
            "9p",
            "newfs",
            "",
        ] {
            assert!(!stats_inline(fs), "{fs}");
        }
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
        assert!(root.total_bytes.map_or(0, |b| b.0) > 0);
        assert!(
            reading
                .value
                .iter()
                .all(|m| m.fs_type.as_deref() != Some("proc"))
        );
    }
}
