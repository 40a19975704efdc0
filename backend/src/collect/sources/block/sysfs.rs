//! Whole disks' counters from their own `/sys/block/<disk>/stat` files, kept open between ticks.
//!
//! `/proc/diskstats` is generated for every block device the kernel has, partitions and the loop
//! and zram devices vramio ignores included, each with its per-CPU counters summed and its
//! requests in flight counted: on this VM one read of it cost about 50 us on a cold tick, for one
//! disk worth reporting. A disk's `stat` file holds the same counters in the same order, without
//! major, minor and name (`Documentation/block/stat.rst`), generated for that disk alone. So the
//! block source reads `/proc/diskstats` in full only now and then, to see disks come and go, and
//! between those reads each whole disk's `stat` (one `pread` each into one shared buffer).

use super::super::procfile::read_generated;
use procfs::DiskStat;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

/// Fields of a disk's `stat`: 11 before kernel 4.18, 15 with discards, 17 with flushes.
const MIN_FIELDS: usize = 11;
const MAX_FIELDS: usize = 17;

/// The `stat` files of the whole disks, by name, opened on first use.
#[derive(Debug, Default)]
pub struct StatFiles {
    files: HashMap<String, File>,
    buf: Vec<u8>,
}

impl StatFiles {
    /// Refreshes the counters of the disks in `stats` that `is_whole` names, from their `stat`
    /// files under `sys_block`. `false` when any of them cannot be opened, read or parsed (the
    /// disk went away, or there is no such file): then the caller reads `/proc/diskstats`, and the
    /// file that failed is opened again next time.
    pub fn refresh(
        &mut self,
        sys_block: &Path,
        stats: &mut [DiskStat],
        is_whole: impl Fn(&str) -> bool,
    ) -> bool {
        for d in stats.iter_mut().filter(|d| is_whole(&d.name)) {
            if !self.files.contains_key(&d.name) {
                match File::open(sys_block.join(&d.name).join("stat")) {
                    Ok(file) => self.files.insert(d.name.clone(), file),
                    Err(_) => return false,
                };
            }
            let Some(file) = self.files.get(&d.name) else {
                return false;
            };
            let read = read_generated(file, &mut self.buf).ok();
            if !read.is_some_and(|text| update(d, text)) {
                self.files.remove(&d.name);
                return false;
            }
        }
        true
    }

    /// Closes the files of disks no longer listed.
    pub fn retain(&mut self, listed: impl Fn(&str) -> bool) {
        self.files.retain(|name, _| listed(name));
    }

    /// Disks whose file is open.
    pub fn open(&self) -> usize {
        self.files.len()
    }
}

/// Sets the counters of `d` from the text of its `stat` file; `false` (and `d` unchanged) when
/// the text is not 11 to 17 numbers.
pub fn update(d: &mut DiskStat, text: &str) -> bool {
    let mut v = [0u64; MAX_FIELDS];
    let mut n = 0;
    for field in text.split_ascii_whitespace() {
        if n == MAX_FIELDS {
            return false;
        }
        match field.parse() {
            Ok(x) => v[n] = x,
            Err(_) => return false,
        }
        n += 1;
    }
    if n < MIN_FIELDS {
        return false;
    }
    let from = |i: usize| (i < n).then_some(v[i]);
    d.reads = v[0];
    d.merged = v[1];
    d.sectors_read = v[2];
    d.time_reading = v[3];
    d.writes = v[4];
    d.writes_merged = v[5];
    d.sectors_written = v[6];
    d.time_writing = v[7];
    d.in_progress = v[8];
    d.time_in_progress = v[9];
    d.weighted_time_in_progress = v[10];
    d.discards = from(11);
    d.discards_merged = from(12);
    d.sectors_discarded = from(13);
    d.time_discarding = from(14);
    d.flushes = from(15);
    d.time_flushing = from(16);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str) -> DiskStat {
        DiskStat::from_line(&format!(
            "259 0 {name} 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"
        ))
        .expect("a diskstats line")
    }

    #[test]
    fn a_stat_file_sets_the_same_fields_as_its_diskstats_line() {
        // The two files of one disk read at one moment (kernel 6.x, 17 fields).
        let text = "  7220863   177384 770004898 63134457  1168562  1252313 1164350584  7076344        0  \
                    1796732 70456721  1102267       73 1063493776   233961   140698    11958\n";
        let from_diskstats = DiskStat::from_line(&format!("259 0 vda {text}")).expect("line");
        let mut d = line("vda");
        assert!(update(&mut d, text));
        assert_eq!(format!("{d:?}"), format!("{from_diskstats:?}"));

        // 11 fields (before 4.18): no discards or flushes.
        let mut old = line("sda");
        assert!(update(&mut old, "1 2 3 4 5 6 7 8 9 10 11\n"));
        assert_eq!((old.reads, old.weighted_time_in_progress), (1, 11));
        assert_eq!((old.discards, old.flushes), (None, None));
    }

    #[test]
    fn bad_text_changes_nothing() {
        for bad in ["", "1 2 3", "1 2 3 4 5 6 7 8 9 10 x", &"1 ".repeat(18)] {
            let mut d = line("sda");
            assert!(!update(&mut d, bad), "{bad:?}");
            assert_eq!(d.reads, 1, "{bad:?}");
        }
    }

    #[test]
    fn a_missing_or_bad_file_asks_for_the_full_reading() {
        let dir = std::env::temp_dir().join(format!("vramio-diskstat-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sda")).expect("temp dir");
        std::fs::write(dir.join("sda/stat"), "5 0 40 1 6 0 48 2 0 3 3\n").expect("stat");
        let mut stats = vec![line("sda"), line("sda1")];
        let mut files = StatFiles::default();
        assert!(files.refresh(&dir, &mut stats, |n| n == "sda"));
        assert_eq!((stats[0].reads, stats[0].sectors_written), (5, 48));
        assert_eq!(stats[1].reads, 1, "a partition is left as it was");
        assert_eq!(files.open(), 1);

        // A disk without a stat file (gone, or never in sysfs).
        let mut more = vec![line("sda"), line("sdb")];
        assert!(!files.refresh(&dir, &mut more, |_| true));

        // A file that stops parsing is closed, so the next try opens the path again.
        std::fs::write(dir.join("sda/stat"), "garbage\n").expect("stat");
        assert!(!files.refresh(&dir, &mut stats, |n| n == "sda"));
        assert_eq!(files.open(), 0);
        std::fs::write(dir.join("sda/stat"), "7 0 40 1 6 0 48 2 0 3 3\n").expect("stat");
        assert!(files.refresh(&dir, &mut stats, |n| n == "sda"));
        assert_eq!(stats[0].reads, 7);
        files.retain(|_| false);
        assert_eq!(files.open(), 0);
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }

    #[test]
    fn this_hosts_disks_read_alike_from_both_files() {
        // Every whole disk of this host: the stat file's counters are at least the diskstats
        // line's read just before (counters only grow), and equal where the disk is idle.
        let Ok(text) = std::fs::read_to_string("/proc/diskstats") else {
            return;
        };
        let mut stats = super::super::parse_diskstats(&text).expect("diskstats parses");
        let before: Vec<u64> = stats.iter().map(|d| d.reads).collect();
        let sys = Path::new("/sys/block");
        let whole = |n: &str| sys.join(n).exists();
        if !stats.iter().any(|d| whole(&d.name)) {
            return;
        }
        let mut files = StatFiles::default();
        assert!(files.refresh(sys, &mut stats, whole));
        for (d, b) in stats.iter().zip(before) {
            assert!(d.reads >= b, "{}: {} < {b}", d.name, d.reads);
        }
    }
}
