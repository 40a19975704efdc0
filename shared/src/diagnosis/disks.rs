//! Block-device series over the window: the busiest-read device's read rate, await, queue and
//! util, and the host's total read and write rates per frame (for checkpoint bursts). The busiest
//! device is found from the cumulative counters of the first and newest frames, so only that
//! device is looked up by name in every frame; totals sum each frame's devices without lookups.

use super::ctx::Ctx;
use super::stats::{Moments, median, quantile};
use crate::frame::{BlockDevice, Frame};

/// Window statistics of the device that read the most.
#[derive(Clone, Debug, Default)]
pub(crate) struct Busiest {
    pub name: String,
    pub rotational: Option<bool>,
    pub read: Moments,
    pub read_median: Option<f64>,
    /// Samples with a read rate within `read_peak_fraction` of the peak.
    pub near_peak: u32,
    pub await_n: u32,
    pub await_median: Option<f64>,
    pub await_p10: Option<f64>,
    pub queue_median: Option<f64>,
    pub util_median: Option<f64>,
}

pub(crate) struct DiskSeries {
    /// Devices in the newest frame.
    pub devices: usize,
    pub busiest: Option<Busiest>,
    /// Sum of write rates over devices, per frame (`None` where no device had a rate).
    pub write_by_frame: Vec<Option<f64>>,
    pub write_median: Option<f64>,
    pub write_mean: Option<f64>,
    /// Mean over frames of the sum of read rates.
    pub read_mean: Option<f64>,
}

fn device_in<'f>(frame: &'f Frame, pos: usize, name: &str) -> Option<&'f BlockDevice> {
    match frame.block_devices.get(pos) {
        Some(d) if d.name == name => Some(d),
        _ => frame.block_devices.iter().find(|d| d.name == name),
    }
}

/// Bytes read by the device named `name` over the window: from its cumulative counter (first
/// frame it appears in to the newest), or, where a log has only rates (an imported `iostat`),
/// the rates integrated over the frames' intervals.
fn bytes_read(frames: &[Frame], pos: usize, newest: &BlockDevice) -> f64 {
    let first = frames
        .first()
        .and_then(|f| device_in(f, pos, &newest.name))
        .or_else(|| {
            frames
                .iter()
                .find_map(|f| f.block_devices.iter().find(|d| d.name == newest.name))
        });
    if let Some((now, then)) = newest
        .read_bytes_total
        .zip(first.and_then(|d| d.read_bytes_total))
    {
        return now.0.saturating_sub(then.0) as f64;
    }
    frames
        .iter()
        .filter_map(|f| {
            let d = device_in(f, pos, &newest.name)?;
            Some(d.read_bytes_per_sec?.0 * f.interval_ms as f64 / 1000.0)
        })
        .sum()
}

/// A block device layered on other block devices (its I/O is also counted on them).
fn stacked(name: &str) -> bool {
    name.starts_with("dm-") || name.starts_with("md")
}

pub(crate) fn gather(ctx: &Ctx<'_>) -> DiskSeries {
    let n = ctx.frames.len();
    let mut write_by_frame = Vec::with_capacity(n);
    let mut read_total = Moments::default();
    let mut write_total = Moments::default();
    for f in ctx.frames {
        let (mut w, mut r) = (None::<f64>, None::<f64>);
        // Device-mapper (LVM, dm-crypt) and md RAID devices carry I/O that their member disks
        // count again: sum the physical disks only, unless a frame has nothing else.
        let physical = f.block_devices.iter().any(|d| !stacked(&d.name));
        for d in f
            .block_devices
            .iter()
            .filter(|d| !(physical && stacked(&d.name)))
        {
            if let Some(rb) = d.read_bytes_per_sec {
                r = Some(r.unwrap_or(0.0) + rb.0);
            }
            if let Some(wb) = d.write_bytes_per_sec {
                w = Some(w.unwrap_or(0.0) + wb.0);
            }
        }
        if let Some(r) = r {
            read_total.add(r);
        }
        if let Some(w) = w {
            write_total.add(w);
        }
        write_by_frame.push(w);
    }
    let mut buf: Vec<f64> = write_by_frame.iter().flatten().copied().collect();
    let write_median = median(&mut buf);
    let newest = ctx.frames.last().map_or(&[][..], |f| &f.block_devices[..]);
    // Ties (e.g. no reads at all) go to the first device, so the choice is stable.
    let busiest = newest
        .iter()
        .enumerate()
        .map(|(pos, d)| (pos, d, bytes_read(ctx.frames, pos, d)))
        .reduce(|best, c| if c.2 > best.2 { c } else { best })
        .map(|(pos, d, _)| busiest(ctx, pos, &d.name, &mut buf));
    DiskSeries {
        devices: newest.len(),
        busiest,
        write_by_frame,
        write_median,
        write_mean: write_total.mean(),
        read_mean: read_total.mean(),
    }
}

/// One pass over the busiest device's samples.
fn busiest(ctx: &Ctx<'_>, pos: usize, name: &str, buf: &mut Vec<f64>) -> Busiest {
    let n = ctx.frames.len();
    let mut b = Busiest {
        name: name.to_owned(),
        ..Busiest::default()
    };
    buf.clear();
    let (mut awaits, mut queues, mut utils) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for d in ctx.frames.iter().filter_map(|f| device_in(f, pos, name)) {
        if let Some(r) = d.read_bytes_per_sec {
            b.read.add(r.0);
            buf.push(r.0);
        }
        awaits.extend(d.r_await_ms);
        queues.extend(d.avg_queue_size);
        utils.extend(d.util_pct.map(|u| u.0));
        b.rotational = d.rotational.or(b.rotational);
    }
    let peak = b.read.max.unwrap_or(0.0);
    b.near_peak = buf
        .iter()
        .filter(|r| **r > 0.0 && **r >= ctx.th.read_peak_fraction * peak)
        .count() as u32;
    b.read_median = median(buf);
    b.await_n = awaits.len() as u32;
    b.await_median = median(&mut awaits);
    b.await_p10 = quantile(&mut awaits, 0.1);
    b.queue_median = median(&mut queues);
    b.util_median = median(&mut utils);
    b
}
