//! sysinfo against vramio's procfs reads for the jobs' processes (docs/performance.md#jobs): 20
//! real processes (`sleep`), read once a second as a job's counters would be, for
//! `VRAMIO_SYSINFO_SECS` seconds (default 10). Each side reads CPU time, resident memory and
//! disk I/O bytes of those 20 pids only:
//!
//! - sysinfo 0.40: `System::refresh_processes_specifics(ProcessesToUpdate::Some(pids), true,
//!   ProcessRefreshKind::nothing().with_cpu().with_memory().with_disk_usage())` (no tasks);
//! - vramio: the jobs source's kept `stat` and `io` files, one `pread` each
//!   (`backend/src/collect/sources/jobs/kept.rs`).
//!
//! Prints the thread CPU of a call (median) and, at one call a second, the % of one core.
//!
//! `cargo bench -p vramio --bench sysinfo_vs_procfs`

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};
use vramio::collect::sources::jobs::kept::Kept;

const PROCESSES: usize = 20;

struct Sleepers(Vec<Child>);

impl Drop for Sleepers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Calls `read` once a second for `secs` (the first call, which opens or allocates, is left out
/// of the median); returns the median call's CPU and the CPU per wall second.
fn once_a_second(secs: u64, mut read: impl FnMut()) -> (Duration, f64) {
    read();
    let mut calls = Vec::new();
    let start = Instant::now();
    for tick in 1..=secs {
        let before = thread_cpu();
        read();
        calls.push(thread_cpu() - before);
        let next = start + Duration::from_secs(tick);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let total: Duration = calls.iter().sum();
    let pct = total.as_secs_f64() / start.elapsed().as_secs_f64() * 100.0;
    (median(calls), pct)
}

fn main() {
    let secs = std::env::var("VRAMIO_SYSINFO_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let sleepers = Sleepers(
        (0..PROCESSES)
            .map(|_| Command::new("sleep").arg("9999").spawn().expect("sleep"))
            .collect(),
    );
    let pids: Vec<u32> = sleepers.0.iter().map(Child::id).collect();

    let sys_pids: Vec<Pid> = pids.iter().map(|p| Pid::from_u32(*p)).collect();
    let mut sys = System::new().expect("sysinfo supports this system");
    let kind = ProcessRefreshKind::nothing()
        .with_cpu()
        .with_memory()
        .with_disk_usage()
        .without_tasks();
    let mut seen = 0;
    let (sys_call, sys_pct) = once_a_second(secs, || {
        sys.refresh_processes_specifics(ProcessesToUpdate::Some(&sys_pids), true, kind);
        seen = sys.processes().len();
    });
    assert_eq!(seen, PROCESSES, "sysinfo saw every process");

    let mut kept = Kept::new(PathBuf::from("/proc"));
    let mut read = 0;
    let (procfs_call, procfs_pct) = once_a_second(secs, || {
        read = pids
            .iter()
            .filter(|&&p| {
                kept.stat(p)
                    .is_ok_and(|s| kept.io(p, s.start_ticks).is_ok())
            })
            .count();
    });
    assert_eq!(read, PROCESSES, "procfs read every process");

    println!("sysinfo_vs_procfs: {PROCESSES} processes, 1 Hz for {secs} s");
    println!("{:<52} {:>12} {:>12}", "reader", "a call", "% of a core");
    println!(
        "{:<52} {:>12?} {:>12.4}",
        "sysinfo 0.40 refresh_processes_specifics (cpu, mem, io)", sys_call, sys_pct
    );
    println!(
        "{:<52} {:>12?} {:>12.4}",
        "vramio kept stat + io (one pread each)", procfs_call, procfs_pct
    );
    drop(sleepers);
}
