//! Spine node 3, *disk space at risk?*: used% on `f_bavail` held in N of M samples, Theil-Sen
//! time-to-full, inodes, and `/dev/shm` (too small for DataLoader workers, or nearly full).
//! Read-only mounts are skipped, and a filesystem mounted twice (bind mounts, an overlay's upper
//! dir seen through its mount) is judged once, at its first mount point.

use super::ctx::{Ctx, NodeResult, any_yes, duration, gib};
use super::evidence::{Comparison, Metric};
use super::gpu_memory::Out;
use super::model::{Answer, Finding, Projection, ProjectionKind, RuleId, Severity};
use super::stats::{Band, Dir, Tally};
use super::suggestions::SuggestionId as S;
use super::trend::{Subsample, rising, time_to_full};
use crate::frame::{Frame, Mount};

const SHM: &str = "/dev/shm";

fn mount_in<'f>(frame: &'f Frame, pos: usize, mount_point: &str) -> Option<&'f Mount> {
    match frame.mounts.get(pos) {
        Some(m) if m.mount_point == mount_point => Some(m),
        _ => frame.mounts.iter().find(|m| m.mount_point == mount_point),
    }
}

/// One mount's series over the window.
struct MountSeries<'f> {
    pos: usize,
    mount: &'f Mount,
    shm: bool,
    rule: RuleId,
    used: Tally,
    inodes: Tally,
    points: Vec<(f64, f64)>,
}

pub(crate) fn evaluate(ctx: &Ctx<'_>, gpus_present: bool, out: &mut Out) -> NodeResult {
    let th = ctx.th;
    let Some(newest) = ctx.frames.last() else {
        return NodeResult {
            answer: Answer::Unknown,
            evidence: Vec::new(),
        };
    };
    if newest.mounts.is_empty() {
        return NodeResult {
            answer: Answer::Unknown,
            evidence: vec![ctx.ev(Metric::MountCount, None, Some(0.0), None)],
        };
    }
    let mut sub = Subsample::new(ctx.frames.len(), th.trend_max_points);
    let mut evidence = Vec::new();
    let mut answers = Vec::new();
    let mut states = Vec::with_capacity(newest.mounts.len());
    for (pos, m) in newest.mounts.iter().enumerate() {
        // The same filesystem mounted twice (a bind mount) is judged once. Only a real device
        // or a network export identifies a filesystem: every tmpfs is called "tmpfs", and two
        // tmpfs of equal size (/tmp and /dev/shm at half the RAM) are different filesystems.
        let identifies = m.device.starts_with('/') || m.device.contains(':');
        let duplicate = identifies
            && newest.mounts[..pos].iter().any(|o| {
                o.device == m.device && o.total_bytes == m.total_bytes && o.read_only != Some(true)
            });
        // An imported `df -i` has no sizes: such a mount is judged by its inodes alone.
        if m.read_only == Some(true) || m.total_bytes.is_some_and(|b| b.0 == 0) || duplicate {
            continue;
        }
        let subject = m.mount_point.as_str();
        let shm = subject == SHM;
        let (warn, crit) = if shm {
            (th.shm_full_pct, None)
        } else {
            (th.disk_warn_pct, Some(th.disk_crit_pct))
        };
        let rule = if shm {
            RuleId::DevShm
        } else {
            RuleId::DiskSpaceRisk
        };
        let at_least = |warn, crit| Band {
            warn,
            crit,
            dir: Dir::AtLeast,
        };
        states.push(MountSeries {
            pos,
            mount: m,
            shm,
            rule,
            used: Tally::new(ctx.band(at_least(warn, crit), rule, subject)),
            inodes: Tally::new(ctx.band(at_least(th.inodes_warn_pct, None), rule, subject)),
            points: Vec::with_capacity((th.trend_max_points as usize).min(ctx.frames.len()) + 1),
        });
    }
    // Space moves slowly: mounts are read on the trend subsample only (at most
    // `trend_max_points` frames), for the N-of-M counts as well as the trend.
    for f in ctx.frames {
        if !sub.next() {
            continue;
        }
        let t_s = ctx.t_s(f);
        for st in &mut states {
            let Some(x) = mount_in(f, st.pos, &st.mount.mount_point) else {
                continue;
            };
            if let Some(p) = x.used_pct() {
                st.used.add(p.0);
            }
            if let Some(p) = x.inodes_used_pct() {
                st.inodes.add(p.0);
            }
            if let Some(used) = x.used_bytes {
                st.points.push((t_s, used.0 as f64));
            }
        }
    }
    for st in states {
        let MountSeries {
            mount: m,
            shm,
            rule,
            used,
            inodes,
            points,
            ..
        } = st;
        let subject = m.mount_point.as_str();
        let mut sev = ctx.severity(&used);
        let used_ev = ctx.hold(ctx.tally_ev(Metric::MountUsed, subject, &used), rule, &used);
        evidence.push(used_ev.clone());
        let mut ev = vec![used_ev];
        let mut why = Vec::new();
        if sev.is_some() {
            why.push(format!(
                "{subject} is {:.1}% full, {} left (>= {:.0}% in {} of {} samples)",
                used.last.unwrap_or(0.0),
                gib(m.available_bytes.map_or(0.0, |b| b.0 as f64)),
                used.band.warn,
                used.warn,
                used.of
            ));
        }
        if ctx.severity(&inodes).is_some() {
            sev = Some(sev.map_or(Severity::Warning, |s| s.worst(Severity::Warning)));
            let e = ctx.hold(
                ctx.tally_ev(Metric::InodesUsed, subject, &inodes),
                rule,
                &inodes,
            );
            evidence.push(e.clone());
            ev.push(e);
            why.push(format!(
                "{subject} uses {:.1}% of its inodes",
                inodes.last.unwrap_or(0.0)
            ));
        }
        let total = m.total_bytes.map(|b| b.0 as f64);
        if shm
            && gpus_present
            && let Some(total) = total.filter(|t| *t < th.shm_min_bytes)
        {
            sev = Some(sev.map_or(Severity::Warning, |s| s.worst(Severity::Warning)));
            let e = ctx.ev(
                Metric::ShmSize,
                Some(subject),
                Some(total),
                Some((Comparison::Lt, th.shm_min_bytes)),
            );
            evidence.push(e.clone());
            ev.push(e);
            why.push(format!(
                "{SHM} is only {} while GPUs are in use (DataLoader workers share batches through it)",
                gib(total)
            ));
        }
        let capacity = m
            .used_bytes
            .zip(m.available_bytes)
            .map(|(u, a)| u.0 as f64 + a.0 as f64);
        let trend = rising(&points, th, &mut out.scratch);
        if let Some((t, secs)) = trend
            .zip(capacity)
            .and_then(|(t, capacity)| time_to_full(t, capacity).map(|s| (t, s)))
            && secs <= th.projection_horizon_s
        {
            out.projections.push(Projection {
                subject: subject.to_owned(),
                kind: ProjectionKind::TimeToFullDisk,
                seconds: secs,
                slope_per_s: t.slope_per_s,
            });
            let e = ctx.ev(
                Metric::MountTimeToFull,
                Some(subject),
                Some(secs),
                Some((Comparison::Lt, th.disk_full_horizon_s)),
            );
            evidence.push(e.clone());
            if secs < th.disk_full_horizon_s {
                sev = Some(sev.map_or(Severity::Warning, |s| s.worst(Severity::Warning)));
                ev.push(e);
                why.push(format!(
                    "{subject} grows {:.1} MiB/s and is full in ~{}",
                    t.slope_per_s / (1024.0 * 1024.0),
                    duration(secs)
                ));
            }
        }
        answers.push(match sev {
            Some(_) => Answer::Yes,
            None if !ctx.enough(&used) => Answer::Unknown,
            None => Answer::No,
        });
        let Some(severity) = sev else { continue };
        let why = why.join("; ");
        let ids = if shm {
            vec![S::LargerShm]
        } else {
            vec![
                S::KeepLastK,
                S::SaveWeightsOnly,
                S::MoveOutputDirs,
                S::LogRotation,
            ]
        };
        out.findings.push(Finding {
            rule,
            severity,
            confidence: if used.of > 0 && used.warn > 0 {
                f64::from(used.warn) / f64::from(used.of)
            } else {
                0.7
            },
            subject: Some(subject.to_owned()),
            since_ms: ctx.since(rule, subject),
            evidence: ev,
            suggestions: ids.into_iter().map(|id| id.with_why(why.clone())).collect(),
        });
    }
    if answers.is_empty() {
        // Mounts exist but none is writable: nothing can fill up.
        evidence.push(ctx.ev(Metric::WritableMountCount, None, Some(0.0), None));
        return NodeResult {
            answer: Answer::No,
            evidence,
        };
    }
    NodeResult {
        answer: any_yes(answers),
        evidence,
    }
}
