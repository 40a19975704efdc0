//! Spine node 4, *host RAM pressure?*: MemAvailable low in N of M samples, PSI memory, swap in use
//! and growing.

use super::ctx::{Ctx, NodeResult, gib};
use super::evidence::{Comparison, Metric};
use super::gpu_memory::Out;
use super::model::{Answer, Finding, RuleId, Severity};
use super::suggestions::SuggestionId as S;
use super::system::SystemSeries;
use super::trend::rising;

pub(crate) fn evaluate(ctx: &Ctx<'_>, sys: &SystemSeries, out: &mut Out) -> NodeResult {
    let th = ctx.th;
    let host = "host";
    let mut evidence = Vec::new();
    let mut sev: Option<Severity> = None;
    let mut why = Vec::new();
    let mut known = false;
    let mut fired = Vec::new();
    if ctx.enough(&sys.mem_available) {
        known = true;
        let e = ctx.hold(
            ctx.tally_ev(Metric::MemAvailable, host, &sys.mem_available),
            RuleId::HostMemoryPressure,
            &sys.mem_available,
        );
        if let Some(s) = ctx.severity(&sys.mem_available) {
            sev = Some(s);
            let t = &sys.mem_available;
            let held = if s == Severity::Critical {
                t.crit
            } else {
                t.warn
            };
            why.push(format!(
                "MemAvailable is {:.1}% ({}) of RAM (< {:.0}% in {} of {} samples)",
                t.last.unwrap_or(0.0),
                sys.mem_available_now.map_or("unknown".to_owned(), gib),
                if s == Severity::Critical {
                    t.band.crit.unwrap_or(t.band.warn)
                } else {
                    t.band.warn
                },
                held,
                t.of
            ));
            fired.push(e.clone());
        }
        evidence.push(e);
    }
    if ctx.enough(&sys.psi_memory) {
        known = true;
        let e = ctx.hold(
            ctx.tally_ev(Metric::PsiMemorySome, host, &sys.psi_memory),
            RuleId::HostMemoryPressure,
            &sys.psi_memory,
        );
        if ctx.severity(&sys.psi_memory).is_some() {
            sev = Some(sev.map_or(Severity::Warning, |s| s.worst(Severity::Warning)));
            why.push(format!(
                "tasks stalled on memory {:.0}% of the time (PSI some avg10)",
                sys.psi_memory.last.unwrap_or(0.0)
            ));
            fired.push(e.clone());
        }
        evidence.push(e);
    }
    if let Some(t) = rising(&sys.swap_points, th, &mut out.scratch) {
        known = true;
        let e = ctx.ev(
            Metric::SwapGrowth,
            Some(host),
            Some(t.slope_per_s),
            Some((Comparison::Ge, th.swap_growth_bytes_per_sec)),
        );
        if t.slope_per_s >= th.swap_growth_bytes_per_sec
            && sys.swap_used_now.is_some_and(|u| u > 0.0)
        {
            sev = Some(sev.map_or(Severity::Warning, |s| s.worst(Severity::Warning)));
            why.push(format!(
                "swap use grows {:.1} MiB/s ({} in use)",
                t.slope_per_s / (1024.0 * 1024.0),
                gib(sys.swap_used_now.unwrap_or(0.0))
            ));
            fired.push(e.clone());
        }
        evidence.push(e);
    }
    let answer = match (sev, known) {
        (Some(_), _) => Answer::Yes,
        (None, true) => Answer::No,
        (None, false) => Answer::Unknown,
    };
    if let Some(severity) = sev {
        let why = why.join("; ");
        let t = &sys.mem_available;
        out.findings.push(Finding {
            rule: RuleId::HostMemoryPressure,
            severity,
            confidence: if t.of > 0 && t.warn > 0 {
                f64::from(t.warn) / f64::from(t.of)
            } else {
                0.7
            },
            subject: Some(host.to_owned()),
            since_ms: ctx.since(RuleId::HostMemoryPressure, host),
            evidence: fired,
            suggestions: vec![S::ReduceHostMemory.with_why(why)],
        });
    }
    if !known {
        evidence.push(ctx.ev(Metric::MemAvailable, None, None, None));
    }
    NodeResult { answer, evidence }
}
