//! Host series over the window (CPU busy, iowait, PSI io/memory, MemAvailable, swap), gathered in
//! one pass and read by the CPU-bound, disk-I/O and host-memory rules.

use super::ctx::Ctx;
use super::model::RuleId;
use super::stats::{Band, Dir, Moments, Tally};
use super::trend::Subsample;

pub(crate) struct SystemSeries {
    pub cpu_busy: Tally,
    pub iowait: Moments,
    pub psi_io: Tally,
    /// MemAvailable as % of MemTotal, against the host-memory band.
    pub mem_available: Tally,
    pub psi_memory: Tally,
    /// Subsampled `(t_s, swap used bytes)`.
    pub swap_points: Vec<(f64, f64)>,
    pub swap_used_now: Option<f64>,
    pub mem_available_now: Option<f64>,
}

pub(crate) fn gather(ctx: &Ctx<'_>) -> SystemSeries {
    let th = ctx.th;
    let at_least = |warn: f64| Band {
        warn,
        crit: None,
        dir: Dir::AtLeast,
    };
    let host = "host";
    let mut s = SystemSeries {
        cpu_busy: Tally::new(at_least(th.cpu_busy_pct)),
        iowait: Moments::default(),
        psi_io: Tally::new(at_least(th.psi_io_some_pct)),
        mem_available: Tally::new(ctx.band(
            Band {
                warn: th.mem_available_warn_pct,
                crit: Some(th.mem_available_crit_pct),
                dir: Dir::Below,
            },
            RuleId::HostMemoryPressure,
            host,
        )),
        psi_memory: Tally::new(ctx.band(
            at_least(th.psi_memory_some_pct),
            RuleId::HostMemoryPressure,
            host,
        )),
        swap_points: Vec::new(),
        swap_used_now: None,
        mem_available_now: None,
    };
    let mut sub = Subsample::new(ctx.frames.len(), th.trend_max_points);
    for f in ctx.frames {
        let keep = sub.next();
        let Some(sys) = &f.system else { continue };
        if let Some(c) = sys.cpu_pct {
            s.cpu_busy.add(c.0);
        }
        if let Some(w) = sys.iowait_pct {
            s.iowait.add(w.0);
        }
        if let Some(p) = sys.psi_io {
            s.psi_io.add(p.some_avg10.0);
        }
        if let Some(p) = sys.psi_memory {
            s.psi_memory.add(p.some_avg10.0);
        }
        if let Some(avail) = sys.mem_available_bytes {
            s.mem_available_now = Some(avail.0 as f64);
            if let Some(p) = sys.mem_total_bytes.and_then(|t| avail.percent_of(t)) {
                s.mem_available.add(p.0);
            }
        }
        if sys.swap_total_bytes.is_some_and(|t| t.0 > 0)
            && let Some(used) = sys.swap_used_bytes.map(|b| b.0 as f64)
        {
            s.swap_used_now = Some(used);
            if keep {
                s.swap_points.push((ctx.t_s(f), used));
            }
        }
    }
    s
}
