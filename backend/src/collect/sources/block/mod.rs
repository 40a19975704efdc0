//! Block devices from `/proc/diskstats`: one [`BlockDevice`] per whole disk with `iostat -x` rates.
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
mod tests {
    use super::*;

    const T0: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/diskstats/gpu-node-t0.txt"
    ));
    const T1: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/diskstats/gpu-node-t1.txt"
    ));
    const K418: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/diskstats/kernel-4.19-18fields.txt"
    ));
    const K414: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/diskstats/kernel-4.14-14fields.txt"
    ));

    fn stats(text: &str) -> Vec<DiskStat> {
        parse_diskstats(text).expect("fixture parses")
    }

    fn counters(text: &str) -> HashMap<String, Counters> {
        stats(text)
            .iter()
            .map(|d| (d.name.clone(), Counters::from(d)))
            .collect()
    }

    fn device<'a>(devs: &'a [BlockDevice], name: &str) -> &'a BlockDevice {
        devs.iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("{name} missing from {devs:?}"))
    }

    #[test]
    fn parses_14_18_and_20_field_lines() {
        let old = stats(K414);
        assert_eq!(old.len(), 4);
        assert_eq!(old[0].name, "xvda");
        assert_eq!(old[0].sectors_written, 54321098);
        assert_eq!(old[0].weighted_time_in_progress, 1111110);
        assert_eq!(old[0].discards, None);
        assert_eq!(old[0].flushes, None);

        let mid = stats(K418);
        assert_eq!(mid[0].name, "sda");
        assert_eq!(mid[0].time_in_progress, 63688);
        assert_eq!(mid[0].discards, Some(1530));
        assert_eq!(mid[0].time_discarding, Some(2404));
        assert_eq!(mid[0].flushes, None);

        let new = stats(T0);
        let nvme = new.iter().find(|d| d.name == "nvme0n1").expect("nvme0n1");
        assert_eq!(nvme.sectors_read, 80000000);
        assert_eq!(nvme.flushes, Some(20000));
        assert_eq!(nvme.time_flushing, Some(30000));
    }

    #[test]
    fn rejects_a_short_line() {
        assert!(parse_diskstats("8 0 sda 1 2 3\n").is_err());
        // Devices never reported are skipped before parsing.
        let skipped = parse_diskstats("7 0 loop0 1 2 3\n").expect("not parsed");
        assert!(skipped.is_empty());
        let t0 = stats(T0);
        assert!(!t0.is_empty() && t0.iter().all(|d| !is_ignored(&d.name)));
    }

    #[test]
    fn names_fold_to_their_disk() {
        let all = [
            "sda",
            "sda1",
            "sdaa",
            "vda",
            "vda2",
            "xvda",
            "xvda1",
            "nvme0n1",
            "nvme0n1p1",
            "nvme0n10",
            "mmcblk0",
            "mmcblk0p1",
            "dm-1",
            "dm-10",
            "md0",
            "md126",
            "md126p1",
            "sr0",
        ];
        let parent = |n| parent_disk(n, all.iter().copied());
        assert_eq!(parent("sda1"), Some("sda"));
        assert_eq!(parent("vda2"), Some("vda"));
        assert_eq!(parent("xvda1"), Some("xvda"));
        assert_eq!(parent("nvme0n1p1"), Some("nvme0n1"));
        assert_eq!(parent("mmcblk0p1"), Some("mmcblk0"));
        assert_eq!(parent("md126p1"), Some("md126"));
        for whole in [
            "sda", "sdaa", "nvme0n1", "nvme0n10", "dm-1", "dm-10", "md0", "md126", "sr0",
        ] {
            assert_eq!(parent(whole), None, "{whole} is a whole device");
        }
    }

    #[test]
    fn first_sample_has_totals_and_no_rates() {
        let devs = block_devices(&stats(T0), None, &HashMap::new(), None, |_| None);
        let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["nvme0n1", "sda", "sdb", "sdd", "md0", "dm-0"]);
        let nvme = device(&devs, "nvme0n1");
        assert_eq!(nvme.partitions, ["nvme0n1p1", "nvme0n1p2"]);
        assert_eq!(nvme.read_bytes_total, Some(Bytes(80000000 * 512)));
        assert_eq!(nvme.write_bytes_total, Some(Bytes(60000000 * 512)));
        assert_eq!(nvme.read_bytes_per_sec, None);
        assert_eq!(nvme.util_pct, None);
        assert_eq!(nvme.avg_queue_size, None);
        // The raw counters of the line, as /proc/diskstats has them (for `/metrics`).
        assert_eq!(
            nvme.counters,
            Some(BlockCounters {
                reads_completed_total: 1_000_000,
                writes_completed_total: 500_000,
                io_time_ms_total: 700_000,
                weighted_io_time_ms_total: 1_300_000,
            })
        );
        assert_eq!(device(&devs, "sda").partitions, ["sda1"]);
        assert!(device(&devs, "dm-0").partitions.is_empty());
    }

    /// Two readings one second apart; the expected values are `iostat -x` worked by hand from the
    /// fixture deltas.
    #[test]
    fn one_second_between_fixtures_matches_iostat() {
        let prev = counters(T0);
        let devs = block_devices(&stats(T1), None, &prev, Some(Duration::from_secs(1)), |d| {
            Some(d.starts_with("sd"))
        });
        let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["nvme0n1", "sda", "sdb", "sde", "md0", "dm-0"]);

        // nvme0n1: +409600 sectors read, +102400 written, +2000 reads in +1000 ms, +500 writes in
        // +1500 ms, io_ticks +850 ms, weighted +2600 ms.
        let nvme = device(&devs, "nvme0n1");
        assert_eq!(nvme.rotational, Some(false));
        assert_eq!(nvme.read_bytes_per_sec, Some(BytesPerSec(209_715_200.0))); // 204800 rkB/s
        assert_eq!(nvme.write_bytes_per_sec, Some(BytesPerSec(52_428_800.0))); // 51200 wkB/s
        assert_eq!(nvme.read_iops, Some(2000.0));
        assert_eq!(nvme.write_iops, Some(500.0));
        assert_eq!(nvme.util_pct, Some(Percent(85.0)));
        assert_eq!(nvme.r_await_ms, Some(0.5));
        assert_eq!(nvme.w_await_ms, Some(3.0));
        assert_eq!(nvme.avg_queue_size, Some(2.6));
        // The disk's own line, not its partitions added on top.
        assert_eq!(nvme.read_bytes_total, Some(Bytes(80409600 * 512)));

        // sda: writes only (+100 writes, +2048 sectors, +800 ms); io_ticks +1200 ms in a 1000 ms
        // interval is capped at 100 %.
        let sda = device(&devs, "sda");
        assert_eq!(sda.rotational, Some(true));
        assert_eq!(sda.read_bytes_per_sec, Some(BytesPerSec(0.0)));
        assert_eq!(sda.write_bytes_per_sec, Some(BytesPerSec(1_048_576.0)));
        assert_eq!(sda.read_iops, Some(0.0));
        assert_eq!(sda.write_iops, Some(100.0));
        assert_eq!(sda.r_await_ms, None);
        assert_eq!(sda.w_await_ms, Some(8.0));
        assert_eq!(sda.util_pct, Some(Percent(100.0)));
        assert_eq!(sda.avg_queue_size, Some(1.6));

        // sdb: idle, still listed; no request completed so no await.
        let sdb = device(&devs, "sdb");
        assert_eq!(sdb.util_pct, Some(Percent(0.0)));
        assert_eq!(sdb.avg_queue_size, Some(0.0));
        assert_eq!(sdb.r_await_ms, None);
        assert_eq!(sdb.w_await_ms, None);

        // md0 keeps no time counters: throughput but zero util and await.
        let md = device(&devs, "md0");
        assert_eq!(md.write_bytes_per_sec, Some(BytesPerSec(1_048_576.0)));
        assert_eq!(md.write_iops, Some(100.0));
        assert_eq!(md.w_await_ms, Some(0.0));
        assert_eq!(md.util_pct, Some(Percent(0.0)));

        // dm-0 has its own line: same activity as the NVMe under it.
        let dm = device(&devs, "dm-0");
        assert_eq!(dm.read_bytes_per_sec, Some(BytesPerSec(209_715_200.0)));
        assert_eq!(dm.util_pct, Some(Percent(85.0)));
        assert_eq!(dm.avg_queue_size, Some(2.6));

        // sde appeared: totals, no rates. sdd vanished: simply absent.
        let sde = device(&devs, "sde");
        assert_eq!(sde.read_bytes_total, Some(Bytes(2048 * 512)));
        assert_eq!(sde.read_bytes_per_sec, None);
        assert!(!devs.iter().any(|d| d.name == "sdd"));
    }

    #[test]
    fn sysfs_names_decide_what_is_whole() {
        let whole: HashSet<String> = ["nvme0n1", "sda", "sdb", "md0", "dm-0", "loop0", "zram0"]
            .map(String::from)
            .into();
        let devs = block_devices(&stats(T0), Some(&whole), &HashMap::new(), None, |_| None);
        let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        // sdd is not in /sys/block (it went away between the two reads): not listed.
        assert_eq!(names, ["nvme0n1", "sda", "sdb", "md0", "dm-0"]);
        assert_eq!(device(&devs, "sdb").partitions, ["sdb1"]);
    }

    #[test]
    fn source_rates_between_calls() {
        let dir = std::env::temp_dir().join(format!("vramio-block-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("diskstats");
        std::fs::write(&path, T0).expect("write fixture");
        let mut src = ProcDiskstats::with_paths(&path, dir.join("no-sysfs"));
        let first = src.sample().expect("first sample");
        assert!(first.iter().all(|d| d.read_bytes_per_sec.is_none()));
        std::fs::write(&path, T1).expect("write fixture");
        let second = src.sample().expect("second sample");
        let nvme = device(&second, "nvme0n1");
        assert!(nvme.read_bytes_per_sec.is_some_and(|r| r.0 > 0.0));
        assert_eq!(nvme.rotational, None);
        std::fs::remove_file(&path).expect("remove fixture");
        let gone = src.sample();
        assert!(matches!(gone, Err(SourceFailure::Io { .. })));
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }

    #[test]
    fn sysfs_is_read_again_when_a_disk_appears() {
        let dir = std::env::temp_dir().join(format!("vramio-topo-{}", std::process::id()));
        let sys = dir.join("block");
        for (disk, rot) in [("sda", "1"), ("nvme0n1", "0")] {
            std::fs::create_dir_all(sys.join(disk).join("queue")).expect("sysfs dir");
            std::fs::write(sys.join(disk).join("queue/rotational"), rot).expect("rotational");
        }
        let path = dir.join("diskstats");
        let sda = "   8       0 sda 10 0 80 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n";
        std::fs::write(&path, sda).expect("diskstats");
        let mut src = ProcDiskstats::with_paths(&path, &sys);
        let first = src.sample().expect("first");
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].rotational, Some(true));
        // A disk is hot-plugged: its line appears and sysfs is consulted for it.
        let both = format!("{sda} 259       0 nvme0n1 10 0 80 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n");
        std::fs::write(&path, both).expect("diskstats");
        let second = src.sample().expect("second");
        assert_eq!(device(&second, "nvme0n1").rotational, Some(false));
        assert_eq!(device(&second, "sda").rotational, Some(true));
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }

    #[test]
    fn between_full_reads_each_disk_reads_its_own_stat_file() {
        let dir = std::env::temp_dir().join(format!("vramio-diskfile-{}", std::process::id()));
        let sys = dir.join("block");
        std::fs::create_dir_all(sys.join("sda/queue")).expect("sysfs dir");
        std::fs::write(sys.join("sda/queue/rotational"), "1").expect("rotational");
        let path = dir.join("diskstats");
        let line = |sectors: u64| {
            format!(
                "   8       0 sda 10 0 {sectors} 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n   \
                 8       1 sda1 10 0 {sectors} 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n"
            )
        };
        std::fs::write(&path, line(80)).expect("diskstats");
        let stat = |sectors: u64| format!("10 0 {sectors} 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n");
        std::fs::write(sys.join("sda/stat"), stat(2000)).expect("stat");
        let mut src = ProcDiskstats::with_paths(&path, &sys);
        let total = |devs: &[BlockDevice]| device(devs, "sda").read_bytes_total;

        // The first reading is the full one.
        let first = src.sample().expect("first");
        assert_eq!(total(&first), Some(Bytes(80 * 512)));
        assert_eq!(device(&first, "sda").partitions, ["sda1"]);
        // The next comes from the disk's own file (the full file would say 80 still).
        let second = src.sample().expect("second");
        assert_eq!(total(&second), Some(Bytes(2000 * 512)));
        assert!(
            device(&second, "sda")
                .read_bytes_per_sec
                .is_some_and(|r| r.0 > 0.0)
        );
        assert_eq!(
            device(&second, "sda").partitions,
            ["sda1"],
            "partitions stay listed"
        );
        assert_eq!(device(&second, "sda").rotational, Some(true));
        assert_eq!(src.stat_files_open(), 1);
        // Its file fails (on sysfs a disk that went away answers ENODEV; here it stops parsing):
        // the full reading answers at once.
        std::fs::write(&path, line(3000)).expect("diskstats");
        std::fs::write(sys.join("sda/stat"), "gone\n").expect("stat");
        let third = src.sample().expect("third");
        assert_eq!(total(&third), Some(Bytes(3000 * 512)));
        assert_eq!(src.stat_files_open(), 0);
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }
}
