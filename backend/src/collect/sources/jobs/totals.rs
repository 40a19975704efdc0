//! The sums over a job's processes at a measurement: resident memory, CPU and `/proc/<pid>/io`
//! rates over the time since each process's previous reading, and why I/O is absent.

use super::procs::{IoBytes, Stat, Unread};
use super::{Counters, IO_NEEDS_ROOT};
use shared::{BytesPerSec, IoCounter, JobIo, Percent};
use std::time::Instant;

/// Sums over a job's processes.
#[derive(Default)]
pub(super) struct Totals {
    /// Processes whose `stat` was read, and their resident pages.
    pub(super) stats: u32,
    pub(super) rss_pages: u64,
    /// CPU seconds over wall seconds, summed over processes read twice.
    cpu: Option<f64>,
    read_rate: Option<f64>,
    write_rate: Option<f64>,
    io_read: u32,
    io_denied: u32,
}

/// Seconds from `prev`'s reading to `now`, when positive.
fn since(prev: Option<&Counters>, now: Instant) -> Option<(f64, &Counters)> {
    let prev = prev?;
    let secs = now.saturating_duration_since(prev.at).as_secs_f64();
    (secs > 0.0).then_some((secs, prev))
}

impl Totals {
    pub(super) fn add_stat(
        &mut self,
        prev: Option<&Counters>,
        stat: &Stat,
        now: Instant,
        ticks_per_sec: u64,
    ) {
        self.stats += 1;
        self.rss_pages = self.rss_pages.saturating_add(stat.rss_pages);
        let Some((secs, prev)) = since(prev, now) else {
            return;
        };
        if let Some(before) = prev.cpu_ticks {
            let ticks = stat.cpu_ticks.saturating_sub(before) as f64;
            *self.cpu.get_or_insert(0.0) += ticks / ticks_per_sec as f64 / secs;
        }
    }

    pub(super) fn add_io(
        &mut self,
        prev: Option<&Counters>,
        io: Result<IoBytes, Unread>,
        now: Instant,
    ) {
        match io {
            Ok(_) => self.io_read += 1,
            Err(Unread::Denied) => self.io_denied += 1,
            Err(Unread::Gone) => {}
        }
        let Some((secs, prev)) = since(prev, now) else {
            return;
        };
        if let (Ok(cur), Some(old)) = (io, prev.io) {
            *self.read_rate.get_or_insert(0.0) += cur.read.saturating_sub(old.read) as f64 / secs;
            *self.write_rate.get_or_insert(0.0) +=
                cur.write.saturating_sub(old.write) as f64 / secs;
        }
    }

    pub(super) fn cpu_pct(&self) -> Option<Percent> {
        self.cpu.map(|c| Percent(c * 100.0))
    }

    /// The job's I/O, or why there is none.
    pub(super) fn io(&self) -> (Option<JobIo>, Option<String>) {
        if self.io_read == 0 {
            let why = (self.io_denied > 0).then(|| IO_NEEDS_ROOT.to_owned());
            return (None, why);
        }
        let io = JobIo {
            counter: IoCounter::ProcIo,
            read_iops: None,
            write_iops: None,
            devices: Vec::new(),
            read_bytes_per_sec: self.read_rate.map(BytesPerSec),
            write_bytes_per_sec: self.write_rate.map(BytesPerSec),
            unreadable: self.io_denied,
        };
        (Some(io), None)
    }
}
