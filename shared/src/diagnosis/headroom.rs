//! Headroom hints on a GPU that is neither pressed nor starved: memory low while utilization is
//! high means room to raise the batch size. Findings of severity `ok`.

use super::ctx::{Ctx, gib};
use super::evidence::{Comparison, Metric};
use super::gpu_memory::Out;
use super::gpus::GpuSeries;
use super::model::{Finding, RuleId, Severity};
use super::stats::holds;
use super::suggestions::SuggestionId as S;

pub(crate) fn evaluate(ctx: &Ctx<'_>, gpus: &[GpuSeries], out: &mut Out) {
    let th = ctx.th;
    for g in gpus {
        let (Some(util), Some(mem)) = (g.util.mean(), g.mem.last) else {
            continue;
        };
        if !ctx.enough(&g.mem)
            || g.util.n < th.min_samples
            || !holds(g.mem_low, g.mem.of, th.hold_fraction)
            || util <= th.headroom_util_pct
        {
            continue;
        }
        let mut mem_ev = ctx.ev(
            Metric::GpuMemoryUsed,
            Some(&g.subject),
            Some(mem),
            Some((Comparison::Lt, th.headroom_mem_pct)),
        );
        mem_ev.samples = Some((g.mem_low, g.mem.of));
        let util_ev = ctx.ev(
            Metric::GpuUtilizationMean,
            Some(&g.subject),
            Some(util),
            Some((Comparison::Gt, th.headroom_util_pct)),
        );
        let free = g.total_bytes.map(|t| t * (1.0 - mem / 100.0));
        let why = format!(
            "{} is {util:.0}% busy but uses only {mem:.0}% of its memory ({} free)",
            g.subject,
            free.map_or("unknown".to_owned(), gib)
        );
        out.findings.push(Finding {
            rule: RuleId::Headroom,
            severity: Severity::Ok,
            confidence: f64::from(g.mem_low) / f64::from(g.mem.of),
            subject: Some(g.subject.clone()),
            since_ms: ctx.since(RuleId::Headroom, &g.subject),
            evidence: vec![mem_ev, util_ev],
            suggestions: vec![S::RaiseBatchSize.with_why(why)],
        });
    }
}
