//! Host CPU, memory and pressure from `/proc/stat`, `/proc/meminfo` and `/proc/pressure/*`.
//!
//! The sampler calls [`ProcSystem`] once per tick through [`SystemSource`]; CPU shares are the
//! difference with the previous call, so the first call has none. Parsing is pure ([`parse_cpu`],
//! [`cpu_shares`], [`parse_psi`], [`parse_meminfo`](super::meminfo::parse_meminfo),
//! [`system_stats`]) and tested on pasted fixtures.

use super::meminfo::parse_meminfo;
use super::procfile::ProcFile;
use super::{SourceFailure, SystemSource};
use shared::{Bytes, Percent, Psi, SystemStats};
use std::path::PathBuf;

/// The aggregate `cpu` line of `/proc/stat`, in clock ticks (the unit cancels out in shares).
///
/// `guest` and `guest_nice` are left out: the kernel already counts them in `user` and `nice`
/// (`Documentation/filesystems/proc.rst`, "1.8 Miscellaneous kernel statistics in /proc/stat").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal.
    pub busy: u64,
    pub idle: u64,
    pub iowait: u64,
}

/// The aggregate CPU times and the number of CPUs listed (`cpuN` lines: the online CPUs).
///
/// procfs's `KernelStats` would need a `SystemInfo` for tick conversions vramio does not use, and
/// parses every per-CPU line; this reads the one line needed.
pub fn parse_cpu(stat: &str) -> Result<(CpuTimes, u32), SourceFailure> {
    let bad = |reason: &str| SourceFailure::Parse {
        what: "/proc/stat".to_owned(),
        reason: reason.to_owned(),
    };
    let mut times = None;
    let mut count: u32 = 0;
    for line in stat.lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            Some("cpu") => {
                let v: Vec<u64> = fields
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|_| bad("a `cpu` field is not a number"))?;
                // user nice system idle, then iowait irq softirq steal since 2.6.
                let at = |i: usize| v.get(i).copied().unwrap_or(0);
                if v.len() < 4 {
                    return Err(bad("the `cpu` line has fewer than 4 fields"));
                }
                times = Some(CpuTimes {
                    busy: at(0) + at(1) + at(2) + at(5) + at(6) + at(7),
                    idle: at(3),
                    iowait: at(4),
                });
            }
            Some(name) if name.starts_with("cpu") => count += 1,
            _ => {}
        }
    }
    let times = times.ok_or_else(|| bad("no aggregate `cpu` line"))?;
    Ok((times, count))
}

/// Busy and iowait shares between two readings, in percent of all CPU time that passed; `None`
/// when no tick passed. Counters that went backwards (iowait can, on tickless kernels) count as 0.
pub fn cpu_shares(prev: &CpuTimes, cur: &CpuTimes) -> Option<(Percent, Percent)> {
    let busy = cur.busy.saturating_sub(prev.busy);
    let idle = cur.idle.saturating_sub(prev.idle);
    let iowait = cur.iowait.saturating_sub(prev.iowait);
    let total = busy + idle + iowait;
    (total > 0).then(|| {
        let pct = |x: u64| Percent(x as f64 * 100.0 / total as f64);
        (pct(busy), pct(iowait))
    })
}

/// One `/proc/pressure/*` file: `some avg10` and `total` (required) and `full avg10` (absent on
/// kernels that do not report it). `None` when the text has no valid `some` line.
pub fn parse_psi(text: &str) -> Option<Psi> {
    let record = |kind: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(kind))
            .and_then(psi_record)
    };
    let (some_avg10, some_total_us) = record("some ")?;
    Some(Psi {
        some_avg10,
        full_avg10: record("full ").map(|(avg10, _)| avg10),
        some_total_us: Some(some_total_us),
    })
}

/// `avg10` and `total` (µs) of one PSI record after its `some`/`full` word: `avg10=1.50
/// avg60=1.00 avg300=0.50 total=42424` (`kernel/sched/psi.c`, `psi_show`). `None` unless every
/// field is there and valid.
fn psi_record(record: &str) -> Option<(Percent, u64)> {
    let mut fields = record.split_whitespace();
    let mut field = |key: &str| fields.next()?.strip_prefix(key);
    let avg10: f64 = field("avg10=")?.parse().ok()?;
    field("avg60=")?.parse::<f64>().ok()?;
    field("avg300=")?.parse::<f64>().ok()?;
    let total = field("total=")?.parse::<u64>().ok()?;
    // The kernel prints two decimals: keep exactly those.
    Some((Percent((avg10 * 100.0).round() / 100.0), total))
}

/// Everything but the CPU shares, from the texts of `/proc/meminfo` and the two PSI files.
pub fn system_stats(
    cpu_count: u32,
    meminfo: &str,
    psi_io: Option<&str>,
    psi_memory: Option<&str>,
) -> Result<SystemStats, SourceFailure> {
    let m = parse_meminfo(meminfo)?;
    Ok(SystemStats {
        cpu_count: Some(cpu_count),
        cpu_pct: None,
        iowait_pct: None,
        mem_total_bytes: Some(Bytes(m.mem_total)),
        mem_available_bytes: m.mem_available.map(Bytes),
        page_cache_bytes: Some(Bytes(m.cached)),
        dirty_bytes: Some(Bytes(m.dirty)),
        writeback_bytes: Some(Bytes(m.writeback)),
        swap_total_bytes: Some(Bytes(m.swap_total)),
        swap_used_bytes: Some(Bytes(m.swap_total.saturating_sub(m.swap_free))),
        psi_io: psi_io.and_then(parse_psi),
        psi_memory: psi_memory.and_then(parse_psi),
    })
}

/// Reads the host's `/proc` (or another root, for tests).
pub struct ProcSystem {
    stat: ProcFile,
    meminfo: ProcFile,
    psi_io: ProcFile,
    psi_memory: ProcFile,
    prev: Option<CpuTimes>,
}

impl ProcSystem {
    pub fn new() -> Self {
        Self::with_proc_root("/proc")
    }

    /// Reads `stat`, `meminfo` and `pressure/{io,memory}` under this directory.
    pub fn with_proc_root(root: impl Into<PathBuf>) -> Self {
        let root: PathBuf = root.into();
        ProcSystem {
            stat: ProcFile::short_records(root.join("stat")),
            meminfo: ProcFile::short_records(root.join("meminfo")),
            psi_io: ProcFile::short_records(root.join("pressure/io")),
            psi_memory: ProcFile::short_records(root.join("pressure/memory")),
            prev: None,
        }
    }
}

/// A file that must be there.
fn required(file: &mut ProcFile) -> Result<&str, SourceFailure> {
    let path = file.path().to_owned();
    file.read()
        .map_err(|source| SourceFailure::Io { path, source })
}

impl Default for ProcSystem {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemSource for ProcSystem {
    fn sample(&mut self) -> Result<SystemStats, SourceFailure> {
        let (times, cpu_count) = parse_cpu(required(&mut self.stat)?)?;
        let meminfo = required(&mut self.meminfo)?;
        // PSI is absent when the kernel has none (file missing, or `EOPNOTSUPP` with `psi=0`).
        let io = self.psi_io.read().ok();
        let memory = self.psi_memory.read().ok();
        let mut stats = system_stats(cpu_count, meminfo, io, memory)?;
        if let Some((cpu, iowait)) = self.prev.as_ref().and_then(|p| cpu_shares(p, &times)) {
            stats.cpu_pct = Some(cpu);
            stats.iowait_pct = Some(iowait);
        }
        self.prev = Some(times);
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT_T0: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/proc/stat-t0.txt"
    ));
    const STAT_T1: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/proc/stat-t1.txt"
    ));
    const MEMINFO: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/proc/meminfo.txt"
    ));
    const PSI_IO: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/proc/pressure-io.txt"
    ));
    const PSI_MEM: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/proc/pressure-memory.txt"
    ));
    const PSI_SOME: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/proc/pressure-some-only.txt"
    ));

    #[test]
    fn reads_the_aggregate_cpu_line() {
        let (t0, count) = parse_cpu(STAT_T0).expect("fixture parses");
        assert_eq!(count, 2);
        // 4705 + 356 + 584 + 0 + 277 + 0
        assert_eq!(
            t0,
            CpuTimes {
                busy: 5922,
                idle: 3699176,
                iowait: 23060
            }
        );
        assert!(parse_cpu("intr 1 2 3\n").is_err());
    }

    #[test]
    fn cpu_shares_between_two_readings() {
        let (t0, _) = parse_cpu(STAT_T0).expect("fixture parses");
        let (t1, _) = parse_cpu(STAT_T1).expect("fixture parses");
        // busy +160 (user 100, system 50, softirq 10), idle +70, iowait +20: 250 ticks.
        let (cpu, iowait) = cpu_shares(&t0, &t1).expect("ticks passed");
        assert_eq!(cpu, Percent(64.0));
        assert_eq!(iowait, Percent(8.0));
        assert_eq!(cpu_shares(&t1, &t1), None);
    }

    #[test]
    fn memory_in_bytes() {
        let s = system_stats(2, MEMINFO, Some(PSI_IO), Some(PSI_MEM)).expect("fixture parses");
        assert_eq!(s.cpu_count, Some(2));
        assert_eq!(s.mem_total_bytes, Some(Bytes(263855328 * 1024)));
        assert_eq!(s.mem_available_bytes, Some(Bytes(201234560 * 1024)));
        assert_eq!(s.page_cache_bytes, Some(Bytes(180123456 * 1024)));
        assert_eq!(s.dirty_bytes, Some(Bytes(1024 * 1024 * 1024)));
        assert_eq!(s.writeback_bytes, Some(Bytes(64 * 1024 * 1024)));
        assert_eq!(s.swap_total_bytes, Some(Bytes(8388604 * 1024)));
        assert_eq!(s.swap_used_bytes, Some(Bytes(256 * 1024 * 1024)));
        assert_eq!(s.cpu_pct, None);
    }

    #[test]
    fn pressure_as_procfs_reads_it() {
        // procfs's record parser, which `parse_psi` replaced, as the reference.
        let reference = |text: &str, kind: &str| {
            text.lines()
                .find(|l| l.starts_with(kind))
                .and_then(|l| procfs::parse_pressure_record(l).ok())
                .map(|r| Percent((f64::from(r.avg10) * 100.0).round() / 100.0))
        };
        let host_io = std::fs::read_to_string("/proc/pressure/io").ok();
        let host_mem = std::fs::read_to_string("/proc/pressure/memory").ok();
        let texts = [PSI_IO, PSI_MEM, PSI_SOME]
            .into_iter()
            .chain(host_io.as_deref())
            .chain(host_mem.as_deref());
        for text in texts {
            let psi = parse_psi(text).expect("valid psi");
            assert_eq!(Some(psi.some_avg10), reference(text, "some"), "{text}");
            assert_eq!(psi.full_avg10, reference(text, "full"), "{text}");
            let total = text
                .lines()
                .find(|l| l.starts_with("some"))
                .and_then(|l| procfs::parse_pressure_record(l).ok())
                .map(|r| r.total);
            assert_eq!(psi.some_total_us, total, "{text}");
        }
        assert_eq!(
            parse_psi("some avg10=1.00 avg60=x avg300=0.50 total=1\n"),
            None
        );
        assert_eq!(parse_psi("some avg10=1.00 avg60=1.00\n"), None);
        assert_eq!(
            parse_psi("full avg10=1.00 avg60=1.00 avg300=0.50 total=1\n"),
            None
        );
    }

    #[test]
    fn pressure_some_and_full() {
        let io = parse_psi(PSI_IO).expect("io psi");
        assert_eq!(io.some_avg10, Percent(12.34));
        assert_eq!(io.full_avg10, Some(Percent(10.5)));
        let mem = parse_psi(PSI_MEM).expect("memory psi");
        assert_eq!(mem.some_avg10, Percent(0.25));
        assert_eq!(mem.full_avg10, Some(Percent(0.0)));
        let some = parse_psi(PSI_SOME).expect("some-only psi");
        assert_eq!(some.full_avg10, None);
        assert_eq!(parse_psi(""), None);
        let s = system_stats(2, MEMINFO, None, None).expect("fixture parses");
        assert_eq!((s.psi_io, s.psi_memory), (None, None));
    }

    #[test]
    fn source_reads_a_proc_directory() {
        let dir = std::env::temp_dir().join(format!("vramio-system-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pressure")).expect("temp dir");
        std::fs::write(dir.join("stat"), STAT_T0).expect("write");
        std::fs::write(dir.join("meminfo"), MEMINFO).expect("write");
        std::fs::write(dir.join("pressure/io"), PSI_IO).expect("write");
        let mut src = ProcSystem::with_proc_root(&dir);
        let first = src.sample().expect("first sample");
        assert_eq!(first.cpu_pct, None);
        assert!(first.psi_io.is_some());
        assert_eq!(first.psi_memory, None);
        std::fs::write(dir.join("stat"), STAT_T1).expect("write");
        let second = src.sample().expect("second sample");
        assert_eq!(second.cpu_pct, Some(Percent(64.0)));
        assert_eq!(second.iowait_pct, Some(Percent(8.0)));
        std::fs::remove_file(dir.join("meminfo")).expect("remove");
        assert!(matches!(src.sample(), Err(SourceFailure::Io { .. })));
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }

    #[test]
    fn this_host_samples() {
        let mut src = ProcSystem::new();
        let first = src.sample().expect("this host's /proc");
        assert!(first.cpu_count.is_some_and(|c| c > 0));
        assert!(first.mem_total_bytes.map_or(0, |b| b.0) > 0);
    }
}
