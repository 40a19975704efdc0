//! `iostat -x` arithmetic: the `/proc/diskstats` counters of one device and the rates between two
//! readings of them. Pure: the tests give explicit intervals.

use procfs::DiskStat;
use std::time::Duration;

/// `/proc/diskstats` counts sectors of 512 bytes whatever the device's own sector size: "the
/// standard UNIX 512-byte sectors, not any device- or filesystem-specific block size"
/// (kernel `Documentation/block/stat.rst`, the same counters as
/// `Documentation/admin-guide/iostats.rst`).
pub const SECTOR_BYTES: u64 = 512;

/// The counters of one `/proc/diskstats` line that `iostat -x` uses (times in milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub reads: u64,
    pub sectors_read: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub sectors_written: u64,
    pub write_ms: u64,
    /// Time with at least one request in flight (`io_ticks`).
    pub io_ms: u64,
    /// Sum over requests of their time in flight (`time_in_queue`, weighted).
    pub weighted_ms: u64,
}

impl From<&DiskStat> for Counters {
    fn from(d: &DiskStat) -> Self {
        Counters {
            reads: d.reads,
            sectors_read: d.sectors_read,
            read_ms: d.time_reading,
            writes: d.writes,
            sectors_written: d.sectors_written,
            write_ms: d.time_writing,
            io_ms: d.time_in_progress,
            weighted_ms: d.weighted_time_in_progress,
        }
    }
}

/// `iostat -x` figures for one device over one interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    pub read_bytes_per_sec: f64,
    pub write_bytes_per_sec: f64,
    /// `r/s`
    pub read_iops: f64,
    /// `w/s`
    pub write_iops: f64,
    /// `%util`, capped at 100 (the kernel's tick accounting can overshoot the interval slightly).
    pub util_pct: f64,
    /// `r_await`; `None` when no read completed in the interval.
    pub r_await_ms: Option<f64>,
    /// `w_await`; `None` when no write completed in the interval.
    pub w_await_ms: Option<f64>,
    /// `aqu-sz`
    pub avg_queue_size: f64,
}

/// Rates between two readings `elapsed` apart; `None` for an empty interval. Counters that went
/// backwards (a device reset, or a 32-bit counter that wrapped) count as no activity.
pub fn rates(prev: &Counters, cur: &Counters, elapsed: Duration) -> Option<Rates> {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return None;
    }
    let ms = secs * 1000.0;
    let reads = cur.reads.saturating_sub(prev.reads);
    let writes = cur.writes.saturating_sub(prev.writes);
    let per_op = |time: u64, ops: u64| (ops > 0).then(|| time as f64 / ops as f64);
    Some(Rates {
        read_bytes_per_sec: (cur.sectors_read.saturating_sub(prev.sectors_read) * SECTOR_BYTES)
            as f64
            / secs,
        write_bytes_per_sec: (cur.sectors_written.saturating_sub(prev.sectors_written)
            * SECTOR_BYTES) as f64
            / secs,
        read_iops: reads as f64 / secs,
        write_iops: writes as f64 / secs,
        util_pct: (cur.io_ms.saturating_sub(prev.io_ms) as f64 / ms * 100.0).min(100.0),
        r_await_ms: per_op(cur.read_ms.saturating_sub(prev.read_ms), reads),
        w_await_ms: per_op(cur.write_ms.saturating_sub(prev.write_ms), writes),
        avg_queue_size: cur.weighted_ms.saturating_sub(prev.weighted_ms) as f64 / ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn rates_follow_iostat_x() {
        let prev = Counters {
            reads: 10,
            sectors_read: 100,
            read_ms: 50,
            writes: 20,
            sectors_written: 200,
            write_ms: 80,
            io_ms: 1000,
            weighted_ms: 3000,
        };
        let cur = Counters {
            reads: 110,
            sectors_read: 100 + 4096,
            read_ms: 50 + 300,
            writes: 20,
            sectors_written: 200,
            write_ms: 80,
            io_ms: 1000 + 250,
            weighted_ms: 3000 + 1000,
        };
        let r = rates(&prev, &cur, Duration::from_millis(500)).expect("non-empty interval");
        assert!(close(r.read_bytes_per_sec, 4096.0 * 512.0 * 2.0));
        assert!(close(r.write_bytes_per_sec, 0.0));
        assert!(close(r.read_iops, 200.0));
        assert!(close(r.util_pct, 50.0));
        assert_eq!(r.r_await_ms, Some(3.0));
        assert_eq!(r.w_await_ms, None);
        assert!(close(r.avg_queue_size, 2.0));
        assert_eq!(rates(&prev, &cur, Duration::ZERO), None);
    }

    #[test]
    fn counters_that_go_backwards_count_as_idle() {
        let prev = Counters {
            reads: 500,
            sectors_read: 9000,
            read_ms: 700,
            writes: 300,
            sectors_written: 8000,
            write_ms: 600,
            io_ms: 900,
            weighted_ms: 1300,
        };
        let reset = Counters {
            reads: 2,
            sectors_read: 16,
            ..Counters::default()
        };
        let r = rates(&prev, &reset, Duration::from_secs(1)).expect("non-empty interval");
        assert_eq!(r.read_bytes_per_sec, 0.0);
        assert_eq!(r.read_iops, 0.0);
        assert_eq!(r.r_await_ms, None);
        assert_eq!(r.util_pct, 0.0);
    }
}
