//! The diagnosis and self families of `/metrics`: verdict, severity, findings, time-to-OOM and
//! time-to-full, then what vramio says about itself (sampler cost, collector errors, viewers,
//! build, and in hub mode which hosts are up).

use super::Scrape;
use super::families::{Labels, Out};
use shared::diagnosis::{Diagnosis, ProjectionKind, Verdict};
use shared::{Frame, Source};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

pub(super) fn encode(s: &Scrape, out: &mut Out) -> fmt::Result {
    diagnosis_families(s, out)?;
    self_families(s, out)
}

impl Scrape {
    fn diagnosed(&self) -> impl Iterator<Item = (Labels<'_>, &Frame, &Diagnosis)> {
        self.hosts.iter().filter_map(|h| {
            let frame = h.frame.as_deref()?;
            let diagnosis = h.diagnosis.as_deref()?;
            Some((self.base(h), frame, diagnosis))
        })
    }
}

fn diagnosis_families(s: &Scrape, out: &mut Out) -> fmt::Result {
    out.gauge(
        "vramio_verdict",
        "The diagnosis' verdict: one series per verdict id, 1 for the current one, else 0.",
        s.diagnosed().flat_map(|(base, _, d)| {
            Verdict::ALL.into_iter().map(move |v| {
                let mut labels = base.clone();
                labels.push(("verdict", Cow::Borrowed(v.id())));
                (labels, if v == d.verdict { 1.0 } else { 0.0 })
            })
        }),
    )?;
    out.gauge(
        "vramio_severity",
        "The worst severity of the diagnosis' findings: 0 ok, 1 warning, 2 critical, 3 unknown.",
        s.diagnosed()
            .map(|(base, _, d)| (base, f64::from(d.severity.exit_code()))),
    )?;
    out.gauge(
        "vramio_finding",
        "A rule of the decision tree that fired (1), with its severity and subject.",
        s.diagnosed().flat_map(|(base, _, d)| {
            let mut seen = HashSet::new();
            d.findings
                .iter()
                .filter(move |f| seen.insert((f.rule, f.subject.as_deref())))
                .map(move |f| {
                    let mut labels = base.clone();
                    labels.push(("rule", Cow::Borrowed(f.rule.id())));
                    labels.push(("severity", Cow::Borrowed(f.severity.id())));
                    labels.push(("subject", Cow::Borrowed(f.subject.as_deref().unwrap_or(""))));
                    (labels, 1.0)
                })
        }),
    )?;
    out.gauge(
        "vramio_gpu_time_to_oom_seconds",
        "Seconds until GPU memory is full at its current growth (absent unless it grows).",
        s.hosts.iter().flat_map(|h| {
            let frame = h.frame.as_deref();
            h.diagnosis
                .iter()
                .flat_map(|d| d.projections.iter())
                .filter(|p| p.kind == ProjectionKind::TimeToFullGpuMemory)
                .filter_map(move |p| {
                    let frame = frame?;
                    let index: u32 = p.subject.strip_prefix("gpu ")?.parse().ok()?;
                    let uuid = frame
                        .gpus
                        .iter()
                        .find(|g| g.index == index)
                        .and_then(|g| g.uuid.as_deref())
                        .unwrap_or("");
                    Some((s.gpu_labels(h, index, uuid), p.seconds))
                })
        }),
    )?;
    out.gauge(
        "vramio_mount_time_to_full_seconds",
        "Seconds until the filesystem is full at its current growth (absent unless it fills).",
        s.hosts.iter().filter(|h| h.is_up()).flat_map(|h| {
            h.diagnosis
                .iter()
                .flat_map(|d| d.projections.iter())
                .filter(|p| p.kind == ProjectionKind::TimeToFullDisk)
                .map(move |p| {
                    let mut labels = s.base(h);
                    labels.push(("mountpoint", Cow::Borrowed(p.subject.as_str())));
                    (labels, p.seconds)
                })
        }),
    )
}

fn self_families(s: &Scrape, out: &mut Out) -> fmt::Result {
    out.gauge(
        "vramio_sampler_seconds",
        "Time each source took the sampler in the newest tick.",
        s.up_hosts().flat_map(|(h, f)| {
            f.cost.iter().map(move |c| {
                let mut labels = s.base(h);
                labels.push(("source", Cow::Borrowed(c.source.id())));
                (labels, c.micros as f64 / 1e6)
            })
        }),
    )?;
    out.gauge(
        "vramio_collector_errors",
        "Failures the newest frame carries, per source (a GPU, a mount or a file that could not be read).",
        s.up_hosts().flat_map(|(h, f)| {
            Source::ALL.into_iter().map(move |source| {
                let mut labels = s.base(h);
                labels.push(("source", Cow::Borrowed(source.id())));
                (labels, f.errors_for(source).count() as f64)
            })
        }),
    )?;
    out.gauge(
        "vramio_last_frame_timestamp_seconds",
        "When the newest frame was sampled (Unix time).",
        s.up_hosts()
            .map(|(h, f)| (s.base(h), f.t_ms as f64 / 1000.0)),
    )?;
    // The server's own, once per scrape: a part that renders hosts only leaves them out.
    let globals = s.viewers.map(|v| v as f64);
    out.gauge(
        "vramio_viewers",
        "WebSocket viewers connected to this server now.",
        globals.map(|v| (Labels::new(), v)),
    )?;
    out.gauge(
        "vramio_build_info",
        "The vramio version serving these metrics (1).",
        globals.map(|_| {
            (
                vec![("version", Cow::Borrowed(env!("CARGO_PKG_VERSION")))],
                1.0,
            )
        }),
    )?;
    let h = s.history.as_ref();
    out.gauge(
        "vramio_history_bytes",
        "Size of the history file on disk (docs/history.md).",
        h.map(|h| (Labels::new(), h.bytes as f64)),
    )?;
    out.gauge(
        "vramio_history_write_paused",
        "Whether writing the history is paused now (1: a full disk or a failed write; it resumes by itself).",
        h.map(|h| (Labels::new(), if h.paused.is_some() { 1.0 } else { 0.0 })),
    )?;
    out.counter(
        "vramio_history_disk_full",
        "History commits refused because the disk was full.",
        h.map(|h| (Labels::new(), h.full)),
    )?;
    out.counter(
        "vramio_history_write_errors",
        "History commits that failed for another reason than a full disk.",
        h.map(|h| (Labels::new(), h.failed)),
    )?;
    out.counter(
        "vramio_history_dropped",
        "History samples dropped (the writer fell behind, or writing was paused over 10 minutes).",
        h.map(|h| (Labels::new(), h.dropped)),
    )?;
    if s.options.hub_mode {
        out.gauge(
            "vramio_host_up",
            "Whether the hub has fresh data from the host (0: down, connecting or stale; its series are absent).",
            s.hosts.iter().map(|h| {
                let labels = vec![("host", Cow::Borrowed(h.name.as_str()))];
                (labels, if h.is_up() { 1.0 } else { 0.0 })
            }),
        )?;
    }
    Ok(())
}
