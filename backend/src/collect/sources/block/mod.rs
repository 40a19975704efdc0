//! Block devices from the kernel's disk counters: one [`BlockDevice`] per whole disk with `iostat -x`
//! rates.
//!
//! The sampler calls [`ProcDiskstats`] once per tick through [`BlockSource`]. Each call reads the
//! counters, keeps them and the time of the read, and turns the difference with the previous
//! call into rates with [`iostat::rates`], a pure function the tests drive with explicit intervals. Whole
//! disks are the names in `/sys/block`; without sysfs, [`parent_disk`] folds partitions by name.
//! `/proc/diskstats` is read in full every [`FULL_READ_EVERY`] (and whenever a disk's own file
//! fails); on the ticks between, each whole disk's `/sys/block/<disk>/stat` ([`sysfs`]).

pub mod iostat;
pub mod sysfs;

pub use iostat::{Counters, Rates, SECTOR_BYTES, rates};

use super::procfile::ProcFile;
use super::{BlockSource, SourceFailure};
use procfs::DiskStat;
use shared::{BlockCounters, BlockDevice, Bytes, BytesPerSec, Percent};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Devices that are not storage a job waits on: loop devices (snaps, images), compressed RAM swap
/// (`zram`) and RAM disks (`ram`, the `brd` driver).
const IGNORED_PREFIXES: [&str; 3] = ["loop", "zram", "ram"];

/// Whether vramio skips this device altogether (see [`IGNORED_PREFIXES`]).
pub fn is_ignored(name: &str) -> bool {
    IGNORED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The disk `name` is a partition of, among `all_names`, by the kernel's naming: a disk whose name
/// ends in a letter numbers its partitions directly (`sda1`, `vda2`, `xvda1`), one ending in a
/// digit puts a `p` first (`nvme0n1p1`, `mmcblk0p1`, `md126p1`). `dm-*` and `md*` names without a
/// `p` suffix are whole devices (`dm-10` is not a partition of `dm-1`).
pub fn parent_disk<'a, I>(name: &str, all_names: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    all_names.into_iter().find(|disk| {
        let Some(rest) = name.strip_prefix(*disk) else {
            return false;
        };
        let digits = match disk.chars().last() {
            Some(c) if c.is_ascii_digit() => rest.strip_prefix('p'),
            Some(_) => Some(rest),
            None => None,
        };
        digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Parses `/proc/diskstats` (14, 18 or 20 fields per line, depending on the kernel). Lines of
/// devices that are never reported ([`is_ignored`]: a host can have dozens of loop devices) are
/// skipped unparsed.
pub fn parse_diskstats(text: &str) -> Result<Vec<DiskStat>, SourceFailure> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .filter(|(_, l)| !l.split_whitespace().nth(2).is_some_and(is_ignored))
        .map(|(i, l)| {
            DiskStat::from_line(l).map_err(|e| SourceFailure::Parse {
                what: format!("/proc/diskstats line {}", i + 1),
                reason: e.to_string(),
            })
        })
        .collect()
}

/// Whole disks of one reading, in `/proc/diskstats` order, with rates against `prev` when the
/// previous reading is `elapsed` old. `whole` is the set of names in `/sys/block` (`None` without
/// sysfs: then a name is whole unless [`parent_disk`] finds its disk). `rotational` answers per disk.
pub fn block_devices(
    stats: &[DiskStat],
    whole: Option<&HashSet<String>>,
    prev: &HashMap<String, Counters>,
    elapsed: Option<Duration>,
    rotational: impl Fn(&str) -> Option<bool>,
) -> Vec<BlockDevice> {
    let names: Vec<&str> = stats
        .iter()
        .map(|d| d.name.as_str())
        .filter(|n| !is_ignored(n))
        .collect();
    let is_whole = |name: &str| match whole {
        Some(set) => set.contains(name),
        None => parent_disk(name, names.iter().copied()).is_none(),
    };
    let disks: Vec<&str> = names.iter().copied().filter(|n| is_whole(n)).collect();
    let mut partitions: HashMap<&str, Vec<String>> = HashMap::new();
    for name in names.iter().copied().filter(|n| !is_whole(n)) {
        if let Some(disk) = parent_disk(name, disks.iter().copied()) {
            partitions.entry(disk).or_default().push(name.to_owned());
        }
    }
    stats
        .iter()
        .filter(|d| disks.contains(&d.name.as_str()))
        .map(|d| {
            let cur = Counters::from(d);
            let r = elapsed.and_then(|e| prev.get(&d.name).and_then(|p| rates(p, &cur, e)));
            BlockDevice {
                name: d.name.clone(),
                rotational: rotational(&d.name),
                partitions: partitions.remove(d.name.as_str()).unwrap_or_default(),
                read_bytes_total: Some(Bytes(cur.sectors_read.saturating_mul(SECTOR_BYTES))),
                write_bytes_total: Some(Bytes(cur.sectors_written.saturating_mul(SECTOR_BYTES))),
                read_bytes_per_sec: r.map(|r| BytesPerSec(r.read_bytes_per_sec)),
                write_bytes_per_sec: r.map(|r| BytesPerSec(r.write_bytes_per_sec)),
                read_iops: r.map(|r| r.read_iops),
                write_iops: r.map(|r| r.write_iops),
                util_pct: r.map(|r| Percent(r.util_pct)),
                r_await_ms: r.and_then(|r| r.r_await_ms),
                w_await_ms: r.and_then(|r| r.w_await_ms),
                avg_queue_size: r.map(|r| r.avg_queue_size),
                counters: Some(BlockCounters {
                    reads_completed_total: cur.reads,
                    writes_completed_total: cur.writes,
                    io_time_ms_total: cur.io_ms,
                    weighted_io_time_ms_total: cur.weighted_ms,
                }),
            }
        })
        .collect()
}

/// The names in a `/sys/block`-like directory; `None` when it cannot be listed.
fn list_whole_disks(sys_block: &Path) -> Option<HashSet<String>> {
    let entries = std::fs::read_dir(sys_block).ok()?;
    let names: HashSet<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    (!names.is_empty()).then_some(names)
}

/// `queue/rotational` of a disk under a `/sys/block`-like directory.
pub(crate) fn read_rotational(sys_block: &Path, disk: &str) -> Option<bool> {
    let text = std::fs::read_to_string(sys_block.join(disk).join("queue/rotational")).ok()?;
    match text.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// How often `/proc/diskstats` is read in full, to see disks come and go: a disk attached is
/// listed within this long. Between those reads the whole disks' own `stat` files give their
/// counters; a disk removed fails its file and is seen at once.
pub const FULL_READ_EVERY: Duration = Duration::from_secs(10);

/// Reads the block devices' counters and rates them against the previous call.
pub struct ProcDiskstats {
    diskstats: ProcFile,
    sys_block: PathBuf,
    prev: HashMap<String, Counters>,
    prev_at: Option<Instant>,
    topology: Option<Topology>,
    /// Every device of the latest reading, partitions too (for their names).
    stats: Vec<DiskStat>,
    /// When `/proc/diskstats` was last read in full.
    full_at: Option<Instant>,
    stat_files: sysfs::StatFiles,
}

/// What sysfs says about the devices (which are whole disks, which rotate): read again only when
/// the set of devices changes or [`TOPOLOGY_TTL`] passes, not on every tick.
struct Topology {
    names: Vec<String>,
    whole: Option<HashSet<String>>,
    rotational: HashMap<String, Option<bool>>,
    at: Instant,
}

/// How long sysfs facts are trusted while the device list stays the same.
const TOPOLOGY_TTL: Duration = Duration::from_secs(60);

impl ProcDiskstats {
    pub fn new() -> Self {
        Self::with_paths("/proc/diskstats", "/sys/block")
    }

    /// Reads these files instead of the host's (tests, or a host root mounted elsewhere).
    pub fn with_paths(diskstats: impl Into<PathBuf>, sys_block: impl Into<PathBuf>) -> Self {
        ProcDiskstats {
            diskstats: ProcFile::short_records(diskstats),
            sys_block: sys_block.into(),
            prev: HashMap::new(),
            prev_at: None,
            topology: None,
            stats: Vec::new(),
            full_at: None,
            stat_files: sysfs::StatFiles::default(),
        }
    }

    /// Refreshes the whole disks' counters from their `stat` files; `false` when `/proc/diskstats`
    /// is due to be read in full, sysfs does not list the disks, or a disk's file fails.
    fn refresh_from_sysfs(&mut self, now: Instant) -> bool {
        let due = self
            .full_at
            .is_none_or(|at| now.saturating_duration_since(at) >= FULL_READ_EVERY);
        let Some(whole) = self.topology.as_ref().and_then(|t| t.whole.as_ref()) else {
            return false;
        };
        !due && self
            .stat_files
            .refresh(&self.sys_block, &mut self.stats, |n| whole.contains(n))
    }

    /// Reads `/proc/diskstats` in full, and sysfs' facts again when the devices changed or
    /// [`TOPOLOGY_TTL`] passed.
    fn read_full(&mut self, now: Instant) -> Result<(), SourceFailure> {
        let path = self.diskstats.path().to_owned();
        let text = self
            .diskstats
            .read()
            .map_err(|source| SourceFailure::Io { path, source })?;
        self.stats = parse_diskstats(text)?;
        self.full_at = Some(now);
        let stats = &self.stats;
        let stale = self.topology.as_ref().is_none_or(|t| {
            !t.names.iter().eq(stats.iter().map(|d| &d.name)) || t.at.elapsed() > TOPOLOGY_TTL
        });
        if stale {
            let names: Vec<String> = stats.iter().map(|d| d.name.clone()).collect();
            let whole = list_whole_disks(&self.sys_block);
            let rotational = names
                .iter()
                .filter(|n| whole.as_ref().is_none_or(|w| w.contains(*n)))
                .map(|n| (n.clone(), read_rotational(&self.sys_block, n)))
                .collect();
            self.topology = Some(Topology {
                names,
                whole,
                rotational,
                at: now,
            });
        }
        self.stat_files
            .retain(|n| stats.iter().any(|d| d.name == n));
        Ok(())
    }

    /// Whole disks whose `stat` file is open.
    pub fn stat_files_open(&self) -> usize {
        self.stat_files.open()
    }
}

impl Default for ProcDiskstats {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockSource for ProcDiskstats {
    fn sample(&mut self) -> Result<Vec<BlockDevice>, SourceFailure> {
        let now = Instant::now();
        if !self.refresh_from_sysfs(now) {
            self.read_full(now)?;
        }
        let stats = &self.stats;
        let elapsed = self.prev_at.map(|t| now.duration_since(t));
        let topology = self.topology.as_ref();
        let whole = topology.and_then(|t| t.whole.as_ref());
        let devices = block_devices(stats, whole, &self.prev, elapsed, |d| {
            topology.and_then(|t| t.rotational.get(d).copied().flatten())
        });
        // The same disks tick after tick: update the counters in place.
        self.prev
            .retain(|name, _| stats.iter().any(|d| &d.name == name));
        for d in stats {
            match self.prev.get_mut(&d.name) {
                Some(c) => *c = Counters::from(d),
                None => {
                    self.prev.insert(d.name.clone(), Counters::from(d));
                }
            }
        }
        self.prev_at = Some(now);
        Ok(devices)
    }
}

#[cfg(test)]
mod tests;
