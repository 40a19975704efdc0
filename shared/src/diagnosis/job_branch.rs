//! A starved job's branch of the tree (docs/jobs.md#5-a-verdict-per-job): the disk question with
//! who reads the busy device (the job itself, or another job: contention), the CPU question, the
//! checkpoint question on the job's own writes, else underutilized.

use super::ctx::{Ctx, NodeResult};
use super::disk_io::disk_io;
use super::disks::DiskSeries;
use super::evidence::{Comparison, Evidence, Metric};
use super::gpu_memory::Out;
use super::gpus::GpuSeries;
use super::job_series::{JobSeries, top_other_reader};
use super::model::{Answer, Finding, NodeId, RuleId, Severity};
use super::per_job::Contention;
use super::starvation::{Starved, Writes, checkpoint_stall, cpu_bound};
use super::suggestions::SuggestionId as S;
use super::system::SystemSeries;

/// The host's series a job's starved branch reads, and every job's I/O.
pub(crate) struct Host<'a> {
    pub(crate) disks: &'a DiskSeries,
    pub(crate) sys: &'a SystemSeries,
    pub(crate) jobs: &'a [JobSeries],
}

/// The starved branch for job `k`: disk (with who reads), CPU, its own checkpoint writes, else
/// underutilized. Pushes the finding; returns the visited nodes, the rule and any contention.
pub(crate) fn branch(
    ctx: &Ctx<'_>,
    host: &Host<'_>,
    k: usize,
    (gpus, st): (&[GpuSeries], &Starved),
    out: &mut Out,
) -> (Vec<(NodeId, NodeResult)>, RuleId, Option<Contention>) {
    let Host { disks, sys, jobs } = *host;
    let job = &jobs[k];
    let th = ctx.th;
    let gpu_text = st.util_text();
    let subject = st.subject(gpus);
    let mut evidence: Vec<Evidence> = st.node.evidence.clone();
    let mut visited = Vec::with_capacity(3);
    let mib = |v: f64| v / (1024.0 * 1024.0);

    let mut disk = disk_io(ctx, disks, sys);
    let device = disks.busiest.as_ref().map(|b| b.name.clone());
    if disk.answer == Answer::Yes
        && let Some(dev) = device
    {
        // Capped: a broken recording's rates can sum past f64, and JSON has no infinity.
        let device_mean = disks
            .busiest
            .as_ref()
            .and_then(|b| b.read.mean())
            .unwrap_or(0.0)
            .min(f64::MAX);
        // A hostile or broken frame can make the device's mean anything: the level is a finite
        // rate, or the evidence could not be encoded (JSON has no infinities).
        let raw = th.job_read_fraction * device_mean;
        let share_level = if raw.is_nan() {
            0.0
        } else {
            raw.clamp(0.0, f64::MAX)
        };
        let own = job.reads_from(&dev);
        let mut ev = ctx.ev(
            Metric::JobReadRateMean,
            Some(&job.label),
            own,
            Some((Comparison::Ge, share_level)),
        );
        ev.detail = Some(match own {
            Some(_) => format!("{dev} reads {:.0} MiB/s on average", mib(device_mean)),
            None => "this job's reads were not measured (see its I/O)".to_owned(),
        });
        disk.evidence.push(ev);
        let other = top_other_reader(jobs, k, &dev).filter(|(_, r)| {
            r.is_finite()
                && *r >= share_level
                && own.is_none_or(|o| *r > o)
                && *r >= th.min_read_bytes_per_sec
        });
        let contention = other.map(|(i, r)| {
            let o = &jobs[i];
            let mut ev = ctx.ev(Metric::JobReadRateMean, Some(&o.label), Some(r), None);
            ev.detail = Some(format!("another job reading from {dev}"));
            disk.evidence.push(ev);
            Contention {
                kind: o.kind,
                id: o.id.clone(),
                step: o.step.clone(),
                label: o.label.clone(),
                device: dev.clone(),
                read_bytes_per_sec: r,
                own_read_bytes_per_sec: own,
            }
        });
        if contention.is_none() && own.is_some_and(|o| o < share_level) {
            // Busy, but not with this job's reads (nor another job's): its GPUs wait on
            // something else, which the rest of the branch looks for.
            disk.answer = Answer::No;
            if let Some(e) = disk
                .evidence
                .iter_mut()
                .rev()
                .find(|e| e.metric == Metric::JobReadRateMean)
            {
                e.detail = Some(format!(
                    "{dev} is busy ({:.0} MiB/s on average), but not with this job's reads",
                    mib(device_mean)
                ));
            }
        } else {
            let own_text = match own {
                Some(o) => format!("this job reads {:.0} MiB/s of it", mib(o)),
                None => "this job's own reads were not measured".to_owned(),
            };
            let why = match &contention {
                Some(c) => format!(
                    "{gpu_text} while {dev} reads {:.0} MiB/s on average and {} reads {:.0} MiB/s of it; {own_text}",
                    mib(device_mean),
                    c.label,
                    mib(c.read_bytes_per_sec)
                ),
                None => format!(
                    "{gpu_text} while {dev} reads {:.0} MiB/s on average and {own_text}",
                    mib(device_mean)
                ),
            };
            let ids = if contention.is_some() {
                vec![S::SeparateReaders, S::StageOnLocalNvme, S::CacheInRam]
            } else {
                vec![
                    S::DataloaderWorkers,
                    S::StageOnLocalNvme,
                    S::CacheInRam,
                    S::ShardedFormats,
                ]
            };
            evidence.extend(disk.evidence.iter().cloned());
            visited.push((NodeId::DiskIo, disk));
            push(
                ctx,
                out,
                Found {
                    rule: RuleId::InputBoundDisk,
                    subject: Some(dev),
                    confidence: 0.7,
                    ids,
                    why,
                },
                evidence,
            );
            return (visited, RuleId::InputBoundDisk, contention);
        }
    }
    let disk_unknown = disk.answer == Answer::Unknown;
    visited.push((NodeId::DiskIo, disk));
    let cpu = cpu_bound(ctx, sys);
    if cpu.answer == Answer::Yes {
        let busy = cpu.evidence.first().and_then(|e| e.value).unwrap_or(0.0);
        evidence.extend(cpu.evidence.iter().cloned());
        visited.push((NodeId::CpuBound, cpu));
        let why = format!(
            "{gpu_text} while the host's CPUs are {busy:.0}% busy and reads are not the limit"
        );
        let ids = vec![S::DataloaderWorkers, S::GpuDecoding, S::ShardedFormats];
        push(
            ctx,
            out,
            Found {
                rule: RuleId::InputBoundCpu,
                subject: Some(subject),
                confidence: 0.6,
                ids,
                why,
            },
            evidence,
        );
        return (visited, RuleId::InputBoundCpu, None);
    }
    let cpu_unknown = cpu.answer == Answer::Unknown;
    visited.push((NodeId::CpuBound, cpu));
    // The job's own writes where they were measured, else every device's.
    let own_writes = job.write_median.is_some();
    let writes = if own_writes {
        Writes {
            by_frame: &job.writes_by_frame,
            median: job.write_median,
        }
    } else {
        Writes::from(disks)
    };
    let mut ck = checkpoint_stall(ctx, gpus, &st.gpus, writes);
    if let Some(e) = ck.evidence.first_mut() {
        let whose = if own_writes {
            "this job's writes"
        } else {
            "all devices' writes (this job's were not measured)"
        };
        e.detail = Some(match e.detail.take() {
            Some(d) => format!("{whose}: {d}"),
            None => whose.to_owned(),
        });
    }
    let ck_unknown = ck.answer == Answer::Unknown;
    if ck.answer == Answer::Yes {
        let (a, d) = ck
            .evidence
            .first()
            .and_then(|e| e.samples)
            .unwrap_or((0, 0));
        evidence.extend(ck.evidence.iter().cloned());
        visited.push((NodeId::CheckpointStall, ck));
        let why = format!("{gpu_text}; {a} of {d} utilization dips coincide with its write bursts");
        let ids = vec![S::AsyncCheckpoint, S::SaveWeightsOnly];
        push(
            ctx,
            out,
            Found {
                rule: RuleId::CheckpointStall,
                subject: Some(subject),
                confidence: 0.75,
                ids,
                why,
            },
            evidence,
        );
        return (visited, RuleId::CheckpointStall, None);
    }
    visited.push((NodeId::CheckpointStall, ck));
    let unknowns = [disk_unknown, cpu_unknown, ck_unknown]
        .iter()
        .filter(|u| **u)
        .count() as f64;
    let why = format!("{gpu_text}; neither the disk, the CPUs nor its own writes explain it");
    let ids = vec![S::FewerSyncPoints, S::DataloaderWorkers];
    let found = Found {
        rule: RuleId::GpuUnderutilized,
        subject: Some(subject),
        // Less sure when the disk, CPU or write data was missing.
        confidence: 0.6 - 0.1 * unknowns,
        ids,
        why,
    };
    push(ctx, out, found, evidence);
    (visited, RuleId::GpuUnderutilized, None)
}

/// What the starved branch found for a job, before it becomes a [`Finding`].
struct Found {
    rule: RuleId,
    subject: Option<String>,
    confidence: f64,
    ids: Vec<S>,
    why: String,
}

fn push(ctx: &Ctx<'_>, out: &mut Out, found: Found, evidence: Vec<Evidence>) {
    let Found {
        rule,
        subject,
        confidence,
        ids,
        why,
    } = found;
    out.findings.push(Finding {
        rule,
        severity: Severity::Warning,
        confidence,
        subject,
        since_ms: ctx.now_ms,
        evidence,
        suggestions: ids.into_iter().map(|id| id.with_why(why.clone())).collect(),
    });
}
