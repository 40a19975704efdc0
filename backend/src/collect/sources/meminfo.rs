//! The few `/proc/meminfo` fields vramio reports, read by hand from the file's text.
//!
//! [`super::system::ProcSystem`] reads the file each tick. procfs's `Meminfo` would parse every
//! one of the file's fifty-odd lines into a map first; this keeps the seven that are used.

use super::SourceFailure;

/// The `/proc/meminfo` fields vramio reports, in bytes (`Documentation/filesystems/proc.rst`,
/// "meminfo"). Only `MemAvailable` (since Linux 3.14) may be missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemFields {
    pub mem_total: u64,
    pub mem_available: Option<u64>,
    pub cached: u64,
    pub dirty: u64,
    pub writeback: u64,
    pub swap_total: u64,
    pub swap_free: u64,
}

/// Reads the fields of [`MemFields`] from the text of `/proc/meminfo` (`Key:   123 kB` lines,
/// values in KiB) and skips the others; a kept field that is missing or not a number is an error.
pub fn parse_meminfo(text: &str) -> Result<MemFields, SourceFailure> {
    let bad = |reason: String| SourceFailure::Parse {
        what: "/proc/meminfo".to_owned(),
        reason,
    };
    let mut found: [Option<u64>; 7] = [None; 7];
    const KEYS: [&str; 7] = [
        "MemTotal",
        "MemAvailable",
        "Cached",
        "Dirty",
        "Writeback",
        "SwapTotal",
        "SwapFree",
    ];
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let Some(slot) = KEYS.iter().position(|k| *k == key) else {
            continue;
        };
        let kib = value.trim().strip_suffix(" kB").unwrap_or(value.trim());
        let kib: u64 = kib
            .parse()
            .map_err(|_| bad(format!("`{key}` is not a number of kB")))?;
        found[slot] = Some(kib.saturating_mul(1024));
    }
    let [
        total,
        available,
        cached,
        dirty,
        writeback,
        swap_total,
        swap_free,
    ] = found;
    let need = |v: Option<u64>, key: &str| v.ok_or_else(|| bad(format!("no `{key}` line")));
    Ok(MemFields {
        mem_total: need(total, "MemTotal")?,
        mem_available: available,
        cached: need(cached, "Cached")?,
        dirty: need(dirty, "Dirty")?,
        writeback: need(writeback, "Writeback")?,
        swap_total: need(swap_total, "SwapTotal")?,
        swap_free: need(swap_free, "SwapFree")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/proc/meminfo.txt"
    ));

    /// procfs's parser, which `parse_meminfo` replaced, as the reference.
    fn procfs_meminfo(text: &str) -> MemFields {
        use procfs::FromRead;
        let m = procfs::Meminfo::from_read(text.as_bytes()).expect("procfs parses it");
        MemFields {
            mem_total: m.mem_total,
            mem_available: m.mem_available,
            cached: m.cached,
            dirty: m.dirty,
            writeback: m.writeback,
            swap_total: m.swap_total,
            swap_free: m.swap_free,
        }
    }

    #[test]
    fn meminfo_fields_as_procfs_reads_them() {
        assert_eq!(
            parse_meminfo(MEMINFO).expect("fixture"),
            procfs_meminfo(MEMINFO)
        );
        let host = std::fs::read_to_string("/proc/meminfo").expect("this host's meminfo");
        let ours = parse_meminfo(&host).expect("this host's meminfo parses");
        assert_eq!(ours, procfs_meminfo(&host));
        assert!(ours.mem_total > 0 && ours.mem_available.is_some());
    }

    #[test]
    fn meminfo_without_a_kept_field() {
        let old_kernel: String = MEMINFO
            .lines()
            .filter(|l| !l.starts_with("MemAvailable:"))
            .map(|l| format!("{l}\n"))
            .collect();
        let m = parse_meminfo(&old_kernel).expect("MemAvailable is optional");
        assert_eq!(m.mem_available, None);
        assert_eq!(m.mem_total, 263855328 * 1024);
        let no_dirty = MEMINFO.replace("Dirty:", "Dirt:");
        let e = parse_meminfo(&no_dirty).expect_err("Dirty is required");
        assert!(e.to_string().contains("no `Dirty` line"), "{e}");
        let garbled = MEMINFO.replace("Cached:         180123456 kB", "Cached: many kB");
        assert!(parse_meminfo(&garbled).is_err());
    }
}
