//! Spine node 1, *GPU memory too high?*: pressure held in N of M samples, growth towards OOM
//! (Theil-Sen time-to-full), and the refinements memory not held by the job, orphans and lost GPUs.

use super::ctx::{Ctx, NodeResult, any_yes, duration, gib};
use super::evidence::{Comparison, Evidence, Metric};
use super::gpus::GpuSeries;
use super::model::{Answer, Finding, Projection, ProjectionKind, RuleId, Severity};
use super::stats::holds;
use super::suggestions::SuggestionId as S;
use super::trend::{rising, time_to_full};
use crate::frame::NvmlStatus;

/// Findings and projections the rules add to.
#[derive(Default)]
pub(crate) struct Out {
    pub findings: Vec<Finding>,
    pub projections: Vec<Projection>,
    /// Reused by every Theil-Sen fit.
    pub scratch: Vec<f64>,
    /// Each GPU's answer to *GPU memory too high?* (index, answer), for the jobs on it.
    pub gpu_answers: Vec<(u32, Answer)>,
}

/// Confidence of a finding raised by a forecast alone (a trend is a guess about the future).
const FORECAST_CONFIDENCE: f64 = 0.7;

pub(crate) fn evaluate(ctx: &Ctx<'_>, gpus: &[GpuSeries], out: &mut Out) -> NodeResult {
    let th = ctx.th;
    let mut evidence = Vec::with_capacity(gpus.len() + 1);
    let mut answers = Vec::with_capacity(gpus.len());
    for g in gpus {
        let level = ctx.severity(&g.mem);
        let ev_level = ctx.hold(
            ctx.tally_ev(Metric::GpuMemoryUsed, &g.subject, &g.mem),
            RuleId::GpuMemoryPressure,
            &g.mem,
        );
        evidence.push(ev_level.clone());
        let trend = rising(&g.points, th, &mut out.scratch);
        let ttf = trend.zip(g.usable_bytes).and_then(|(t, usable)| {
            time_to_full(t, usable)
                .filter(|s| *s <= th.projection_horizon_s)
                .map(|s| (t, s))
        });
        let mut growing = None;
        if let Some((t, secs)) = ttf {
            out.projections.push(Projection {
                subject: g.subject.clone(),
                kind: ProjectionKind::TimeToFullGpuMemory,
                seconds: secs,
                slope_per_s: t.slope_per_s,
            });
            let ev = ctx.ev(
                Metric::GpuMemoryTimeToFull,
                Some(&g.subject),
                Some(secs),
                Some((Comparison::Lt, th.gpu_oom_horizon_s)),
            );
            if secs < th.gpu_oom_horizon_s {
                growing = Some((t.slope_per_s, secs));
            }
            evidence.push(ev);
        }
        let severity = match (level, growing) {
            (Some(l), Some(_)) => Some(l.worst(Severity::Warning)),
            (Some(l), None) => Some(l),
            (None, Some(_)) => Some(Severity::Warning),
            (None, None) => None,
        };
        let answer = match severity {
            Some(_) => Answer::Yes,
            None if g.unavailable_now || !ctx.enough(&g.mem) => Answer::Unknown,
            None => Answer::No,
        };
        answers.push(answer);
        // The jobs read their whole GPUs' answers; a MIG instance's they ask themselves.
        if !super::mig::is_instance_subject(&g.subject) {
            out.gpu_answers.push((g.index, answer));
        }
        let Some(severity) = severity else { continue };
        let mut ev = vec![ev_level];
        let mut why = Vec::new();
        if level.is_some() {
            why.push(format!(
                "{} used {:.1}% of {} (>= {:.0}% in {} of {} samples)",
                g.subject,
                g.mem.last.unwrap_or(0.0),
                gib(g.total_bytes.unwrap_or(0.0)),
                g.mem.band.warn,
                g.mem.warn,
                g.mem.of
            ));
        }
        if let Some((slope, secs)) = growing {
            ev.push(ctx.ev(
                Metric::GpuMemoryTimeToFull,
                Some(&g.subject),
                Some(secs),
                Some((Comparison::Lt, th.gpu_oom_horizon_s)),
            ));
            why.push(format!(
                "{} grows {:.0} MiB/s and is full in ~{} at this rate",
                g.subject,
                slope / (1024.0 * 1024.0),
                duration(secs)
            ));
        }
        let why = why.join("; ");
        let held = if severity == Severity::Critical {
            g.mem.crit
        } else {
            g.mem.warn
        };
        let confidence = match level {
            Some(_) if g.mem.of > 0 => f64::from(held) / f64::from(g.mem.of),
            _ => FORECAST_CONFIDENCE,
        };
        let mut ids = vec![
            S::GradientAccumulation,
            S::MixedPrecision,
            S::ActivationCheckpointing,
            S::ShardedTraining,
            S::CpuOffload,
            S::ExpandableSegments,
        ];
        if growing.is_some() {
            // Growth usually means a leak (tensors kept across steps) or varying shapes.
            ids.swap(0, 5);
        }
        out.findings.push(Finding {
            rule: RuleId::GpuMemoryPressure,
            severity,
            confidence,
            subject: Some(g.subject.clone()),
            since_ms: ctx.since(RuleId::GpuMemoryPressure, &g.subject),
            evidence: ev,
            suggestions: ids.into_iter().map(|id| id.with_why(why.clone())).collect(),
        });
    }
    if gpus.is_empty() {
        let mut ev = ctx.ev(Metric::GpuCount, None, Some(0.0), None);
        ev.detail = ctx.frames.last().and_then(|f| match &f.nvml {
            NvmlStatus::Ok { .. } => None,
            NvmlStatus::NoDriver { message } | NvmlStatus::Error { message } => {
                Some(message.clone())
            }
        });
        evidence.push(ev);
    }
    NodeResult {
        answer: any_yes(answers),
        evidence,
    }
}

/// The refinements of the GPU-memory branch: lost GPUs, memory not held by the job, orphans.
pub(crate) fn refinements(ctx: &Ctx<'_>, gpus: &[GpuSeries], out: &mut Out) {
    let th = ctx.th;
    let n = ctx.frames.len() as u32;
    if let Some(NvmlStatus::Error { message }) = ctx.frames.last().map(|f| &f.nvml) {
        let mut ev = ctx.ev(Metric::NvmlStatus, Some("nvml"), None, None);
        ev.detail = Some(message.clone());
        out.findings
            .push(unavailable_finding(ctx, "nvml", ev, message));
    }
    for g in gpus {
        if g.unavailable > 0 {
            let detail = g.last_error.clone().unwrap_or_default();
            let mut ev = ctx.ev(Metric::GpuUnavailable, Some(&g.subject), None, None);
            ev.value = Some(f64::from(g.unavailable));
            ev.samples = Some((g.unavailable, n));
            ev.detail = Some(detail.clone());
            out.findings
                .push(unavailable_finding(ctx, &g.subject, ev, &detail));
        }
        let (held, of, diff) = g.unattributed;
        if of >= th.min_samples && holds(held, of, th.hold_fraction) {
            let mut ev = ctx.ev(
                Metric::GpuMemoryNotHeldByProcesses,
                Some(&g.subject),
                diff,
                Some((Comparison::Gt, th.gpu_unattributed_bytes)),
            );
            ev.samples = Some((held, of));
            let why = format!(
                "{}: {} of device memory is not held by any listed process (> {})",
                g.subject,
                gib(diff.unwrap_or(0.0)),
                gib(th.gpu_unattributed_bytes)
            );
            out.findings.push(Finding {
                rule: RuleId::GpuMemoryNotHeldByJob,
                severity: Severity::Warning,
                confidence: f64::from(held) / f64::from(of),
                subject: Some(g.subject.clone()),
                since_ms: ctx.since(RuleId::GpuMemoryNotHeldByJob, &g.subject),
                evidence: vec![ev],
                suggestions: vec![
                    S::IsolateGpus.with_why(why.clone()),
                    S::KillOrphans.with_why(why),
                ],
            });
        }
        let (held, of, orphan) = g.orphan;
        if let Some((pid, bytes)) = orphan
            && of >= th.min_samples
            && holds(held, of, th.hold_fraction)
        {
            let mut ev = ctx.ev(
                Metric::GpuMemoryOrphan,
                Some(&g.subject),
                Some(bytes),
                Some((Comparison::Gt, th.orphan_min_bytes)),
            );
            ev.samples = Some((held, of));
            ev.detail = Some(format!("pid {pid} no longer exists on this host"));
            let why = format!(
                "{}: pid {pid} holds {} but no such process is visible here",
                g.subject,
                gib(bytes)
            );
            out.findings.push(Finding {
                rule: RuleId::GpuMemoryOrphan,
                severity: Severity::Warning,
                // Without any visible process name the pids may merely be hidden (containers).
                confidence: if g.named_process_seen { 0.9 } else { 0.4 },
                subject: Some(g.subject.clone()),
                since_ms: ctx.since(RuleId::GpuMemoryOrphan, &g.subject),
                evidence: vec![ev],
                suggestions: vec![S::KillOrphans.with_why(why)],
            });
        }
    }
}

fn unavailable_finding(ctx: &Ctx<'_>, subject: &str, ev: Evidence, detail: &str) -> Finding {
    Finding {
        rule: RuleId::GpuUnavailable,
        severity: Severity::Unknown,
        confidence: 1.0,
        subject: Some(subject.to_owned()),
        since_ms: ctx.since(RuleId::GpuUnavailable, subject),
        evidence: vec![ev],
        suggestions: vec![S::CheckGpuHealth.with_why(format!("{subject}: {detail}"))],
    }
}
