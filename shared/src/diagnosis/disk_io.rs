//! Branch node *disk I/O slow?* (below a starved GPU): on the busiest-read device, await far
//! above its own baseline with a queue, reads flat at the observed peak with a queue, `%util` on
//! rotational devices only, or PSI io while reads dominate; iowait only corroborates.

use super::ctx::{Ctx, NodeResult};
use super::disks::DiskSeries;
use super::evidence::{Comparison, Metric};
use super::model::Answer;
use super::system::SystemSeries;

/// *Disk I/O slow?* on the busiest-read device.
pub(crate) fn disk_io(ctx: &Ctx<'_>, disks: &DiskSeries, sys: &SystemSeries) -> NodeResult {
    let th = ctx.th;
    let mut evidence = Vec::new();
    let mut yes = false;
    let mut known = false;
    let reads_dominate = match (disks.read_mean, disks.write_mean) {
        (Some(r), Some(w)) => r >= w,
        _ => true,
    };
    if ctx.enough(&sys.psi_io) {
        known = true;
        let mut ev = ctx.tally_ev(Metric::PsiIoSome, "host", &sys.psi_io);
        ev.subject = None;
        // Checkpoint writes raise I/O pressure too; it points at input only while reads dominate.
        if ctx.severity(&sys.psi_io).is_some() && reads_dominate {
            yes = true;
        } else if !reads_dominate {
            ev.detail = Some("writes dominate: not counted as input pressure".to_owned());
        }
        evidence.push(ev);
    }
    if let Some(b) = &disks.busiest
        && b.read.n >= th.min_samples
    {
        known = true;
        let dev = Some(b.name.as_str());
        let mean = b.read.mean().unwrap_or(0.0);
        let mut ev = ctx.ev(
            Metric::ReadRateMean,
            dev,
            Some(mean),
            Some((Comparison::Ge, th.min_read_bytes_per_sec)),
        );
        ev.samples = Some((b.near_peak, b.read.n));
        evidence.push(ev);
        let reads_matter = mean >= th.min_read_bytes_per_sec;
        if let (Some(med), Some(peak)) = (b.read_median, b.read.max) {
            // Flat reads alone also describe a loader that reads exactly what the CPU decodes;
            // a device running at its peak also has requests queueing.
            let queued = b.queue_median.is_some_and(|q| q >= th.queue_min);
            let near = reads_matter && queued && peak > 0.0 && med >= th.read_peak_fraction * peak;
            let mut ev = ctx.ev(
                Metric::ReadMedianOverPeak,
                dev,
                Some(if peak > 0.0 { med / peak } else { 0.0 }),
                Some((Comparison::Ge, th.read_peak_fraction)),
            );
            ev.samples = Some((b.near_peak, b.read.n));
            evidence.push(ev);
            yes |= near;
        }
        if let (Some(med), Some(p10), true) =
            (b.await_median, b.await_p10, b.await_n >= th.min_samples)
        {
            let queue = b.queue_median;
            let slow = med > th.await_baseline_ratio * p10
                && med > th.await_min_ms
                && queue.is_some_and(|q| q >= th.queue_min);
            // Capped at the largest f64: a baseline near it (a broken recording) would make the
            // level infinite, which JSON writes as `null` and no reader takes for a number.
            let level = (th.await_baseline_ratio * p10)
                .max(th.await_min_ms)
                .min(f64::MAX);
            let mut ev = ctx.ev(
                Metric::RAwaitMedian,
                dev,
                Some(med),
                Some((Comparison::Gt, level)),
            );
            ev.detail = Some(format!(
                "lowest decile {p10:.1} ms; median queue {}",
                queue.map_or("unknown".to_owned(), |q| format!("{q:.1}"))
            ));
            evidence.push(ev);
            yes |= slow;
        }
        if b.rotational == Some(true)
            && let Some(u) = b.util_median
        {
            evidence.push(ctx.ev(
                Metric::DiskUtilMedian,
                dev,
                Some(u),
                Some((Comparison::Ge, th.rotational_util_pct)),
            ));
            yes |= u >= th.rotational_util_pct && reads_matter;
        }
    }
    if let Some(w) = sys.iowait.mean() {
        let mut ev = ctx.ev(
            Metric::IowaitMean,
            None,
            Some(w),
            Some((Comparison::Ge, th.iowait_corroborate_pct)),
        );
        ev.detail = Some("corroborates only".to_owned());
        evidence.push(ev);
    }
    if disks.devices == 0 && !known {
        evidence.push(ctx.ev(Metric::BlockDeviceCount, None, Some(0.0), None));
    }
    NodeResult {
        answer: match (yes, known) {
            (true, _) => Answer::Yes,
            (false, true) => Answer::No,
            (false, false) => Answer::Unknown,
        },
        evidence,
    }
}
