//! The measured families of `/metrics`: GPUs and their processes, mounts, block devices and the
//! host's memory, CPU and pressure, each from the newest frame of every host that is up.
//!
//! Base units throughout (bytes, seconds, ratios 0..1); counters keep /proc's cumulative
//! semantics so `rate()` works on them as on node_exporter's. A reading the frame lacks has no
//! sample, never a 0.

use super::{HostData, Scrape};
use prometheus_client::encoding::{DescriptorEncoder, EncodeCounterValue, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use shared::{Frame, Gpu, GpuState, NvmlStatus, Presence};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// The labels of one sample.
pub(super) type Labels<'a> = Vec<(&'static str, Cow<'a, str>)>;

/// Writes families through `prometheus_client`'s encoder. Every family gets its HELP and TYPE
/// even with no sample, so the set of names a scrape shows does not depend on the data.
pub(super) struct Out<'e> {
    enc: DescriptorEncoder<'e>,
}

impl<'e> Out<'e> {
    pub(super) fn new(enc: DescriptorEncoder<'e>) -> Self {
        Out { enc }
    }

    pub(super) fn gauge<'a>(
        &mut self,
        name: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Labels<'a>, f64)>,
    ) -> fmt::Result {
        let mut family = self
            .enc
            .encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (labels, value) in samples {
            ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }

    /// A counter family; `name` is without `_total`, which the encoder appends.
    pub(super) fn counter<'a, V: EncodeCounterValue>(
        &mut self,
        name: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Labels<'a>, V)>,
    ) -> fmt::Result {
        let mut family = self
            .enc
            .encode_descriptor(name, help, None, MetricType::Counter)?;
        for (labels, value) in samples {
            ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

impl Scrape {
    /// The labels every series of `host` starts with: `host` in hub mode, none otherwise.
    pub(super) fn base<'a>(&self, host: &'a HostData) -> Labels<'a> {
        let mut labels = Vec::with_capacity(6);
        if self.options.hub_mode {
            labels.push(("host", Cow::Borrowed(host.name.as_str())));
        }
        labels
    }

    fn gpus(&self) -> impl Iterator<Item = (&HostData, &Frame, &Gpu)> {
        self.up_hosts()
            .flat_map(|(h, f)| f.gpus.iter().map(move |g| (h, f, g)))
    }

    pub(super) fn gpu_labels<'a>(
        &self,
        host: &'a HostData,
        index: u32,
        uuid: &'a str,
    ) -> Labels<'a> {
        let mut labels = self.base(host);
        labels.push(("gpu", Cow::Owned(index.to_string())));
        labels.push(("uuid", Cow::Borrowed(uuid)));
        labels
    }
}

/// Bytes as the float a gauge takes (exact below 2^53, i.e. 8 PiB).
fn f(bytes: u64) -> f64 {
    bytes as f64
}

pub(super) fn encode(s: &Scrape, out: &mut Out) -> fmt::Result {
    gpu_families(s, out)?;
    storage_families(s, out)?;
    host_families(s, out)
}

fn gpu_families<'s>(s: &'s Scrape, out: &mut Out) -> fmt::Result {
    let gl =
        |h: &'s HostData, g: &'s Gpu| s.gpu_labels(h, g.index, g.uuid.as_deref().unwrap_or(""));
    out.gauge(
        "vramio_gpu_info",
        "A GPU NVML reports (1), with its name and the driver version.",
        s.gpus().map(|(h, frame, g)| {
            let driver = match &frame.nvml {
                NvmlStatus::Ok { driver_version } => driver_version.as_deref().unwrap_or(""),
                _ => "",
            };
            let mut labels = gl(h, g);
            labels.push(("name", Cow::Borrowed(g.name.as_deref().unwrap_or(""))));
            labels.push(("driver", Cow::Borrowed(driver)));
            (labels, 1.0)
        }),
    )?;
    out.gauge(
        "vramio_gpu_up",
        "Whether the GPU answered NVML this tick (0: lost or failing; its readings are absent).",
        s.gpus()
            .map(|(h, _, g)| (gl(h, g), if g.state == GpuState::Ok { 1.0 } else { 0.0 })),
    )?;
    type Pick = fn(&Gpu) -> Option<f64>;
    let readings: [(&str, &str, Pick); 9] = [
        (
            "vramio_gpu_memory_total_bytes",
            "GPU memory in all (NVML total).",
            |g| g.memory.map(|m| f(m.total_bytes.0)),
        ),
        (
            "vramio_gpu_memory_used_bytes",
            "GPU memory used by processes (NVML v2 used; with v1 drivers it includes the reserved).",
            |g| g.memory.map(|m| f(m.used_bytes.0)),
        ),
        (
            "vramio_gpu_memory_free_bytes",
            "GPU memory free (NVML free).",
            |g| g.memory.map(|m| f(m.free_bytes.0)),
        ),
        (
            "vramio_gpu_memory_reserved_bytes",
            "GPU memory reserved by the driver and firmware (NVML v2 only; absent on older drivers).",
            |g| g.memory?.reserved_bytes.map(|b| f(b.0)),
        ),
        (
            "vramio_gpu_utilization_ratio",
            "Share of the last sample period a kernel ran on the GPU (NVML utilization.gpu, 0..1).",
            |g| g.utilization_gpu_pct.map(|p| p.0 / 100.0),
        ),
        (
            "vramio_gpu_memory_utilization_ratio",
            "Share of the last sample period GPU memory was read or written (NVML utilization.memory, 0..1).",
            |g| g.utilization_memory_pct.map(|p| p.0 / 100.0),
        ),
        (
            "vramio_gpu_temperature_celsius",
            "GPU core temperature.",
            |g| g.temperature_c,
        ),
        ("vramio_gpu_power_watts", "GPU power draw.", |g| g.power_w),
        (
            "vramio_gpu_power_limit_watts",
            "GPU power management limit.",
            |g| g.power_limit_w,
        ),
    ];
    for (name, help, pick) in readings {
        out.gauge(
            name,
            help,
            s.gpus().filter_map(|(h, _, g)| Some((gl(h, g), pick(g)?))),
        )?;
    }
    // A GPU in MIG mode: each instance's own memory (docs/jobs.md#mig), labelled with the GPU
    // and the instance's ids and uuid. An instance without its ids has no series.
    type PickMig = fn(&shared::GpuMemory) -> u64;
    let mig: [(&str, &str, PickMig); 2] = [
        (
            "vramio_gpu_mig_memory_total_bytes",
            "Memory of a MIG instance (its own pool), labelled gpu_instance and compute_instance.",
            |m| m.total_bytes.0,
        ),
        (
            "vramio_gpu_mig_memory_used_bytes",
            "Memory used on a MIG instance.",
            |m| m.used_bytes.0,
        ),
    ];
    for (name, help, pick) in mig {
        out.gauge(
            name,
            help,
            s.gpus().flat_map(|(h, _, g)| {
                // Two instances with the same ids (a peer's frame) would give one series twice,
                // which makes Prometheus refuse the whole scrape: the first of them only.
                let mut seen = HashSet::new();
                g.mig.iter().filter_map(move |i| {
                    let slot = i.slot.filter(|s| seen.insert(*s))?;
                    let mut labels = gl(h, g);
                    labels.push(("gpu_instance", Cow::Owned(slot.gpu_instance_id.to_string())));
                    labels.push((
                        "compute_instance",
                        Cow::Owned(slot.compute_instance_id.to_string()),
                    ));
                    labels.push(("mig_uuid", Cow::Borrowed(i.uuid.as_deref().unwrap_or(""))));
                    Some((labels, f(pick(i.memory.as_ref()?))))
                })
            }),
        )?;
    }
    out.gauge(
        "vramio_gpu_process_memory_used_bytes",
        "GPU memory a process holds on the GPU; process is its name, (exited) or (not visible).",
        s.gpus().flat_map(|(h, _, g)| {
            let mut seen = HashSet::new();
            g.processes
                .iter()
                .flatten()
                // NVML may list a pid as both a compute and a graphics process: one series.
                .filter(move |p| seen.insert(p.pid))
                .filter_map(move |p| {
                    let used = p.used_bytes?;
                    let mut labels = gl(h, g);
                    labels.push(("pid", Cow::Owned(p.pid.to_string())));
                    let process = match (p.presence, p.name.as_deref()) {
                        (_, Some(name)) => name,
                        (Presence::Exited, None) => "(exited)",
                        (_, None) => "(not visible)",
                    };
                    labels.push(("process", Cow::Borrowed(process)));
                    if s.options.show_users {
                        labels.push(("user", Cow::Borrowed(p.user.as_deref().unwrap_or(""))));
                    }
                    Some((labels, f(used.0)))
                })
        }),
    )
}

fn storage_families(s: &Scrape, out: &mut Out) -> fmt::Result {
    let mounts = || {
        s.up_hosts().flat_map(|(h, f)| {
            f.mounts.iter().map(move |m| {
                let mut labels = s.base(h);
                labels.push(("mountpoint", Cow::Borrowed(m.mount_point.as_str())));
                labels.push(("device", Cow::Borrowed(m.device.as_str())));
                labels.push(("fstype", Cow::Borrowed(m.fs_type.as_deref().unwrap_or(""))));
                (labels, m)
            })
        })
    };
    out.gauge(
        "vramio_mount_size_bytes",
        "Filesystem size (statvfs f_blocks x f_frsize).",
        mounts().filter_map(|(l, m)| Some((l, f(m.total_bytes?.0)))),
    )?;
    out.gauge(
        "vramio_mount_avail_bytes",
        "Filesystem space available to unprivileged users (f_bavail), what a job can still write.",
        mounts().filter_map(|(l, m)| Some((l, f(m.available_bytes?.0)))),
    )?;
    out.gauge(
        "vramio_mount_used_bytes",
        "Filesystem space used (size minus free).",
        mounts().filter_map(|(l, m)| Some((l, f(m.used_bytes?.0)))),
    )?;
    out.gauge(
        "vramio_mount_inodes",
        "Filesystem inodes in all (named without _total: it is not a counter).",
        mounts().filter_map(|(l, m)| Some((l, f(m.inodes_total?)))),
    )?;
    out.gauge(
        "vramio_mount_inodes_free",
        "Filesystem inodes free.",
        mounts().filter_map(|(l, m)| Some((l, f(m.inodes_total?.saturating_sub(m.inodes_used?))))),
    )?;

    let devices = || {
        s.up_hosts().flat_map(|(h, f)| {
            f.block_devices.iter().map(move |d| {
                let mut labels = s.base(h);
                labels.push(("device", Cow::Borrowed(d.name.as_str())));
                (labels, d)
            })
        })
    };
    out.counter(
        "vramio_block_read_bytes",
        "Bytes read from the disk since boot (/proc/diskstats sectors read x 512).",
        devices().filter_map(|(l, d)| Some((l, d.read_bytes_total?.0))),
    )?;
    out.counter(
        "vramio_block_written_bytes",
        "Bytes written to the disk since boot (/proc/diskstats sectors written x 512).",
        devices().filter_map(|(l, d)| Some((l, d.write_bytes_total?.0))),
    )?;
    out.counter(
        "vramio_block_reads_completed",
        "Reads completed since boot (/proc/diskstats).",
        devices().filter_map(|(l, d)| Some((l, d.counters?.reads_completed_total))),
    )?;
    out.counter(
        "vramio_block_writes_completed",
        "Writes completed since boot (/proc/diskstats).",
        devices().filter_map(|(l, d)| Some((l, d.counters?.writes_completed_total))),
    )?;
    out.counter(
        "vramio_block_io_time_seconds",
        "Time the disk had I/O in flight (io_ticks); its rate is iostat's %util as a ratio.",
        devices().filter_map(|(l, d)| Some((l, d.counters?.io_time_ms_total as f64 / 1000.0))),
    )?;
    out.counter(
        "vramio_block_io_time_weighted_seconds",
        "Time in flight summed over requests (time_in_queue); its rate is iostat's aqu-sz.",
        devices()
            .filter_map(|(l, d)| Some((l, d.counters?.weighted_io_time_ms_total as f64 / 1000.0))),
    )
}

fn host_families(s: &Scrape, out: &mut Out) -> fmt::Result {
    let system = || {
        s.up_hosts()
            .filter_map(|(h, f)| f.system.as_ref().map(|sys| (s.base(h), sys)))
    };
    out.gauge(
        "vramio_memory_total_bytes",
        "Host memory in all (MemTotal).",
        system().filter_map(|(l, m)| Some((l, f(m.mem_total_bytes?.0)))),
    )?;
    out.gauge(
        "vramio_memory_available_bytes",
        "Host memory that can be allocated without swapping (MemAvailable).",
        system().filter_map(|(l, m)| Some((l, f(m.mem_available_bytes?.0)))),
    )?;
    out.gauge(
        "vramio_memory_page_cache_bytes",
        "Host page cache (Cached in /proc/meminfo).",
        system().filter_map(|(l, m)| Some((l, f(m.page_cache_bytes?.0)))),
    )?;
    out.gauge(
        "vramio_cpu_busy_ratio",
        "Share of all CPUs' time busy over the last interval (all but idle and iowait, 0..1).",
        system().filter_map(|(l, m)| Some((l, m.cpu_pct?.0 / 100.0))),
    )?;
    out.gauge(
        "vramio_cpu_iowait_ratio",
        "Share of all CPUs' time idle with I/O outstanding over the last interval (0..1).",
        system().filter_map(|(l, m)| Some((l, m.iowait_pct?.0 / 100.0))),
    )?;
    out.counter(
        "vramio_pressure_io_waiting_seconds",
        "Time some task waited on I/O since boot (PSI /proc/pressure/io some total).",
        system().filter_map(|(l, m)| Some((l, m.psi_io?.some_total_us? as f64 / 1e6))),
    )?;
    out.counter(
        "vramio_pressure_memory_waiting_seconds",
        "Time some task waited on memory since boot (PSI /proc/pressure/memory some total).",
        system().filter_map(|(l, m)| Some((l, m.psi_memory?.some_total_us? as f64 / 1e6))),
    )
}
