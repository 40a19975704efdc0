//! Spine node 2, *GPU starved?* (a job holds GPU memory but utilization is low on average or
//! saw-toothed), and its branch: disk I/O slow, CPU-bound, checkpoint stall, else underutilized.
//! Emits one finding named after the leaf the branch reaches.

use super::ctx::{Ctx, NodeResult, any_yes, gib};
use super::disk_io::disk_io;
use super::disks::DiskSeries;
use super::evidence::Evidence;
use super::evidence::{Comparison, Held, Metric};
use super::gpu_memory::Out;
use super::gpus::GpuSeries;
use super::model::{Answer, Finding, NodeId, RuleId, Severity};
use super::stats::holds;
use super::suggestions::SuggestionId as S;
use super::system::SystemSeries;

/// The starved node's answer and the GPUs it found starved.
pub(crate) struct Starved {
    pub node: NodeResult,
    pub gpus: Vec<usize>,
}

impl Starved {
    /// `gpu 0, gpu 2`: the starved GPUs, the subject of a starvation finding.
    pub fn subject(&self, gpus: &[GpuSeries]) -> String {
        self.gpus
            .iter()
            .filter_map(|&i| gpus.get(i).map(|g| g.subject.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `gpu 0 averages 30% utilization, gpu 1 ...`, for suggestion texts.
    pub fn util_text(&self) -> String {
        self.node
            .evidence
            .iter()
            .filter(|e| e.metric == Metric::GpuUtilizationMean)
            .filter_map(|e| {
                Some(format!(
                    "{} averages {:.0}% utilization",
                    e.subject.as_deref()?,
                    e.value?
                ))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// *GPU starved?* on `gpus`; `held` when the previous diagnosis of the same scope (the host, or
/// one job) was starved, which relaxes the mean by the hysteresis band.
pub(crate) fn starved(ctx: &Ctx<'_>, gpus: &[GpuSeries], held: bool) -> Starved {
    let th = ctx.th;
    let mean_below = if held {
        th.starved_util_mean_pct + th.hysteresis_pct_points
    } else {
        th.starved_util_mean_pct
    };
    let mut evidence = Vec::new();
    let mut answers = Vec::with_capacity(gpus.len());
    let mut starved = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        let (job, job_of) = g.job;
        if job_of < th.min_samples {
            answers.push(Answer::Unknown);
            continue;
        }
        if !holds(job, job_of, th.hold_fraction) {
            let mut ev = ctx.ev(Metric::GpuJobPresent, Some(&g.subject), None, None);
            ev.value = Some(f64::from(job));
            ev.samples = Some((job, job_of));
            evidence.push(ev);
            answers.push(Answer::No);
            continue;
        }
        let (Some(mean), true) = (g.util.mean(), g.util.n >= th.min_samples) else {
            answers.push(Answer::Unknown);
            continue;
        };
        let mut ev = ctx.ev(
            Metric::GpuUtilizationMean,
            Some(&g.subject),
            Some(mean),
            Some((Comparison::Lt, mean_below)),
        );
        ev.samples = Some((g.util_below_starved, g.util.n));
        if held && mean < mean_below {
            ev.held = Some(Held {
                since_ms: starved_since(ctx),
                entered_at: th.starved_util_mean_pct,
                clears_at: mean_below,
            });
        }
        evidence.push(ev);
        let low_fraction = f64::from(g.util_low) / f64::from(g.util.n);
        let cv = g.util.cv();
        let sawtooth =
            cv.is_some_and(|cv| cv >= th.sawtooth_cv) && low_fraction >= th.sawtooth_low_fraction;
        if sawtooth {
            let mut ev = ctx.ev(
                Metric::GpuUtilizationCv,
                Some(&g.subject),
                cv,
                Some((Comparison::Ge, th.sawtooth_cv)),
            );
            ev.samples = Some((g.util_low, g.util.n));
            ev.detail = Some(format!(
                "utilization below {:.0}% in {} of {} samples",
                th.sawtooth_low_pct, g.util_low, g.util.n
            ));
            evidence.push(ev);
        }
        if mean < mean_below || sawtooth {
            starved.push(i);
            answers.push(Answer::Yes);
        } else {
            answers.push(Answer::No);
        }
    }
    Starved {
        node: NodeResult {
            answer: any_yes(answers),
            evidence,
        },
        gpus: starved,
    }
}

/// When the starved finding of the previous diagnosis was first reported (its earliest, if the
/// branch's leaf moved), else the previous diagnosis' time.
fn starved_since(ctx: &Ctx<'_>) -> u64 {
    ctx.prev
        .and_then(|p| {
            p.findings
                .iter()
                .filter(|f| starvation_rule(f.rule))
                .map(|f| f.since_ms)
                .min()
                .or(p.t_ms)
        })
        .unwrap_or(ctx.now_ms)
}

pub(crate) fn starvation_rule(r: RuleId) -> bool {
    matches!(
        r,
        RuleId::InputBoundDisk
            | RuleId::InputBoundCpu
            | RuleId::CheckpointStall
            | RuleId::GpuUnderutilized
    )
}

/// *CPU-bound?*: cores saturated in N of M samples (reached only when the disk did not answer yes).
pub(crate) fn cpu_bound(ctx: &Ctx<'_>, sys: &SystemSeries) -> NodeResult {
    let mut ev = ctx.tally_ev(Metric::CpuBusy, "host", &sys.cpu_busy);
    ev.subject = None;
    let answer = if !ctx.enough(&sys.cpu_busy) {
        Answer::Unknown
    } else if ctx.severity(&sys.cpu_busy).is_some() {
        Answer::Yes
    } else {
        Answer::No
    };
    NodeResult {
        answer,
        evidence: vec![ev],
    }
}

/// Write rates per frame of the window and their median: all block devices' (the host), or one
/// job's own.
pub(crate) struct Writes<'a> {
    pub by_frame: &'a [Option<f64>],
    pub median: Option<f64>,
}

impl<'a> From<&'a DiskSeries> for Writes<'a> {
    fn from(d: &'a DiskSeries) -> Self {
        Writes {
            by_frame: &d.write_by_frame,
            median: d.write_median,
        }
    }
}

/// *Checkpoint stall?*: utilization dips of the starved GPUs aligned with write bursts.
pub(crate) fn checkpoint_stall(
    ctx: &Ctx<'_>,
    gpus: &[GpuSeries],
    starved: &[usize],
    disks: Writes<'_>,
) -> NodeResult {
    let th = ctx.th;
    let Some(write_median) = disks.median else {
        return NodeResult {
            answer: Answer::Unknown,
            evidence: vec![ctx.ev(Metric::WriteRate, None, None, None)],
        };
    };
    let burst = th
        .write_burst_min_bytes_per_sec
        .max(th.write_burst_ratio * write_median);
    let is_burst = |i: usize| {
        disks
            .by_frame
            .get(i)
            .copied()
            .flatten()
            .is_some_and(|w| w > burst)
    };
    let (mut dips, mut aligned, mut bursts) = (0u32, 0u32, 0u32);
    for i in 0..ctx.frames.len() {
        bursts += u32::from(is_burst(i));
        let (mut sum, mut k) = (0.0, 0u32);
        for &g in starved {
            if let Some(Some(u)) = gpus.get(g).and_then(|g| g.util_by_frame.get(i)) {
                sum += u;
                k += 1;
            }
        }
        if k == 0 || sum / f64::from(k) >= th.stall_util_pct {
            continue;
        }
        dips += 1;
        let near = is_burst(i) || (i > 0 && is_burst(i - 1)) || is_burst(i + 1);
        aligned += u32::from(near);
    }
    let yes = aligned >= th.stall_min_dips && holds(aligned, dips, th.stall_aligned_fraction);
    let mut ev = ctx.ev(
        Metric::UtilDipsAtWriteBursts,
        None,
        Some(f64::from(aligned)),
        Some((Comparison::Ge, f64::from(th.stall_min_dips))),
    );
    ev.samples = Some((aligned, dips));
    ev.detail = Some(format!(
        "{bursts} samples with writes above {:.0} MiB/s (median {:.0} MiB/s)",
        burst / (1024.0 * 1024.0),
        write_median / (1024.0 * 1024.0)
    ));
    NodeResult {
        answer: if yes { Answer::Yes } else { Answer::No },
        evidence: vec![ev],
    }
}

/// The branch below a *yes* at the starved node: its node results in visit order and the finding.
pub(crate) fn classify(
    ctx: &Ctx<'_>,
    gpus: &[GpuSeries],
    st: &Starved,
    disks: &DiskSeries,
    sys: &SystemSeries,
    out: &mut Out,
) -> Vec<(NodeId, NodeResult)> {
    let mut visited = Vec::with_capacity(3);
    let subject = st.subject(gpus);
    let starved_ev: Vec<Evidence> = st.node.evidence.clone();
    let util_text = st.util_text();
    let disk = disk_io(ctx, disks, sys);
    let disk_answer = disk.answer;
    visited.push((NodeId::DiskIo, disk));
    let mut unknowns = u32::from(disk_answer == Answer::Unknown);
    let (rule, subject, conf, ids, why) = if disk_answer == Answer::Yes {
        let dev = disks.busiest.as_ref().map(|b| b.name.clone());
        let free = sys.mem_available_now.map_or("unknown".to_owned(), gib);
        let disk_text = disks.busiest.as_ref().map_or_else(String::new, |b| {
            let mib = |v: f64| v / (1024.0 * 1024.0);
            let mut t = format!(
                "{} reads {:.0} MiB/s on average (median {:.0}, peak {:.0})",
                b.name,
                mib(b.read.mean().unwrap_or(0.0)),
                mib(b.read_median.unwrap_or(0.0)),
                mib(b.read.max.unwrap_or(0.0))
            );
            if let (Some(m), Some(p)) = (b.await_median, b.await_p10) {
                t.push_str(&format!(", r_await {m:.1} ms (lowest decile {p:.1} ms)"));
            }
            if let Some(q) = b.queue_median {
                t.push_str(&format!(", queue {q:.1}"));
            }
            t
        });
        let psi = sys
            .psi_io
            .last
            .map_or(String::new(), |p| format!("; PSI io {p:.0}%"));
        let why = format!("{util_text} while {disk_text}{psi}; MemAvailable {free}");
        let corroborated = sys
            .iowait
            .mean()
            .is_some_and(|w| w >= ctx.th.iowait_corroborate_pct);
        (
            RuleId::InputBoundDisk,
            dev.or(Some(subject)),
            if corroborated { 0.85 } else { 0.7 },
            vec![
                S::DataloaderWorkers,
                S::StageOnLocalNvme,
                S::CacheInRam,
                S::ShardedFormats,
            ],
            why,
        )
    } else {
        let cpu = cpu_bound(ctx, sys);
        let cpu_answer = cpu.answer;
        let busy = (cpu.evidence.first()).and_then(|e| e.value);
        visited.push((NodeId::CpuBound, cpu));
        unknowns += u32::from(cpu_answer == Answer::Unknown);
        if cpu_answer == Answer::Yes {
            let t = &sys.cpu_busy;
            (
                RuleId::InputBoundCpu,
                Some(subject),
                f64::from(t.warn) / f64::from(t.of.max(1)),
                vec![S::DataloaderWorkers, S::GpuDecoding, S::ShardedFormats],
                format!(
                    "{util_text} while the CPUs are {:.0}% busy (>= {:.0}% in {} of {} samples) and reads are not the limit",
                    busy.unwrap_or(0.0),
                    t.band.warn,
                    t.warn,
                    t.of
                ),
            )
        } else {
            let ck = checkpoint_stall(ctx, gpus, &st.gpus, disks.into());
            let ck_answer = ck.answer;
            let ck_text = ck.evidence.first().map(|e| {
                let (a, d) = e.samples.unwrap_or((0, 0));
                format!("{a} of {d} utilization dips coincide with write bursts")
            });
            visited.push((NodeId::CheckpointStall, ck));
            unknowns += u32::from(ck_answer == Answer::Unknown);
            if ck_answer == Answer::Yes {
                (
                    RuleId::CheckpointStall,
                    Some(subject),
                    0.75,
                    vec![S::AsyncCheckpoint, S::SaveWeightsOnly],
                    format!("{util_text}; {}", ck_text.unwrap_or_default()),
                )
            } else {
                (
                    RuleId::GpuUnderutilized,
                    Some(subject),
                    // Less sure when the disk, CPU or write data was missing.
                    0.6 - 0.1 * f64::from(unknowns),
                    vec![S::FewerSyncPoints, S::DataloaderWorkers],
                    format!("{util_text}; neither disk, CPU nor checkpoint writes explain it"),
                )
            }
        }
    };
    let mut evidence = starved_ev;
    for (_, r) in &visited {
        if r.answer == Answer::Yes {
            evidence.extend(r.evidence.iter().cloned());
        }
    }
    // A persisting starvation keeps its start even when the branch's leaf moves.
    let since_ms = match &subject {
        Some(s) if ctx.held_since(rule, s).is_some() => ctx.since(rule, s),
        _ if ctx.prev.is_some_and(|p| p.verdict.is_starvation()) => starved_since(ctx),
        _ => ctx.now_ms,
    };
    out.findings.push(Finding {
        rule,
        severity: Severity::Warning,
        confidence: conf,
        subject,
        since_ms,
        evidence,
        suggestions: ids.into_iter().map(|id| id.with_why(why.clone())).collect(),
    });
    visited
}
