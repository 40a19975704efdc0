//! The sums over a job's processes at a measurement: resident memory, CPU and `/proc/<pid>/io`
//! rates over the time since each process's previous reading, and why I/O is absent.
//!
//! A process's `io` counts its own bytes, and once it has exited and been waited for, its
//! parent's `io` counts them too (the kernel adds a reaped child's counters to its parent's). So
//! the job's bytes over an interval are each process's growth, plus all of a process born in
//! the interval, minus what was last read of each process gone since (its parent's growth holds
//! it again). Where the parent is not the job's (a worker reparented away), that subtraction
//! makes the job's figure too low for one interval, never below 0.

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
    /// Bytes read and written over the job's interval by the processes read twice (or born
    /// in it), before subtracting [`Totals::gone`].
    read_bytes: Option<u64>,
    write_bytes: Option<u64>,
    /// What was last read of the processes gone since the job's previous measurement.
    gone_read: u64,
    gone_write: u64,
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

    /// A process's `io`: its growth since `prev`, or all of it when it was `born` since the
    /// job's previous measurement; nothing for a process first read that is older (its bytes
    /// were not this interval's).
    pub(super) fn add_io(
        &mut self,
        prev: Option<&Counters>,
        io: Result<IoBytes, Unread>,
        born: bool,
    ) {
        match io {
            Ok(_) => self.io_read += 1,
            Err(Unread::Denied) => self.io_denied += 1,
            Err(Unread::Gone) => {}
        }
        let base = match prev.and_then(|p| p.io) {
            Some(old) => old,
            None if born => IoBytes::default(),
            None => return,
        };
        if let Ok(cur) = io {
            let r = self.read_bytes.get_or_insert(0);
            *r = r.saturating_add(cur.read.saturating_sub(base.read));
            let w = self.write_bytes.get_or_insert(0);
            *w = w.saturating_add(cur.write.saturating_sub(base.write));
        }
    }

    /// A process of the job gone since its previous measurement, with what was last read of it.
    pub(super) fn gone(&mut self, last: IoBytes) {
        self.gone_read = self.gone_read.saturating_add(last.read);
        self.gone_write = self.gone_write.saturating_add(last.write);
    }

    pub(super) fn cpu_pct(&self) -> Option<Percent> {
        self.cpu.map(|c| Percent(c * 100.0))
    }

    /// The job's I/O over `secs` since its previous measurement (none at its first), or why
    /// there is none.
    pub(super) fn io(&self, secs: Option<f64>) -> (Option<JobIo>, Option<String>) {
        if self.io_read == 0 {
            let why = (self.io_denied > 0).then(|| IO_NEEDS_ROOT.to_owned());
            return (None, why);
        }
        let io = JobIo {
            counter: IoCounter::ProcIo,
            read_iops: None,
            write_iops: None,
            devices: Vec::new(),
            read_bytes_per_sec: rate(self.read_bytes, self.gone_read, secs),
            write_bytes_per_sec: rate(self.write_bytes, self.gone_write, secs),
            unreadable: self.io_denied,
        };
        (Some(io), None)
    }
}

/// Bytes over `secs` less what gone processes' parents count again, per second.
fn rate(bytes: Option<u64>, gone: u64, secs: Option<f64>) -> Option<BytesPerSec> {
    let secs = secs.filter(|s| *s > 0.0)?;
    Some(BytesPerSec(bytes?.saturating_sub(gone) as f64 / secs))
}
