//! The Jobs table: the current host's jobs (GPU processes grouped by Slurm job, pod, container,
//! unit or process tree, docs/jobs.md) with their verdict, GPUs, GPU memory, utilization where it
//! is the job's, and disk I/O; worst verdict first, or by the header clicked. A job's row opens its
//! detail: its verdict with the evidence behind it, each GPU's memory and utilization next to the
//! job's I/O, processes and pressure. Reads `Store::latest` and `Store::diagnosis`; one reactive
//! node renders the whole table from a plain list.

use crate::diag::{local_tz, severity_attr};
use crate::format::{DASH, opt_bytes, opt_mib_s, opt_pct};
use crate::store::use_store;
use leptos::prelude::*;
use shared::diagnosis::words::{evidence_text, job_reason, verdict_text};
use shared::diagnosis::{Answer, Diagnosis, JobDiagnosis};
use shared::{Job, Percent};
use std::cmp::Ordering;

/// A job's key in the page (kind and id; its step is shown, not part of it: it goes absent
/// once a second step holds a GPU), stable across frames.
pub fn job_key(job: &Job) -> String {
    format!("{}:{}", job.kind.id(), job.id)
}

/// What the table is ordered by: the worst verdict (then the most GPU memory) by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    Verdict,
    Job,
    Vram,
    Util,
    Read,
    Write,
}

/// The header of each sortable column, in table order.
const SORTABLE: [(SortBy, &str, bool); 6] = [
    (SortBy::Job, "Job", false),
    (SortBy::Verdict, "Verdict", false),
    (SortBy::Vram, "VRAM", true),
    (SortBy::Util, "GPU util", true),
    (SortBy::Read, "Read", true),
    (SortBy::Write, "Write", true),
];

/// How bad a job's verdict is, for "worst first": its severity, then whether it names a cause at
/// all; a job without a verdict yet ranks lowest.
fn badness(d: Option<&JobDiagnosis>) -> (u8, bool, bool) {
    d.map_or((0, false, false), |d| {
        (
            d.severity.rank(),
            d.verdict != shared::diagnosis::Verdict::Healthy,
            true,
        )
    })
}

/// Descending by an optional figure (ascending when `reverse`); unknown figures go last
/// whichever way it is sorted.
fn by_figure(a: Option<f64>, b: Option<f64>, reverse: bool) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) if reverse => a.total_cmp(&b),
        (Some(a), Some(b)) => b.total_cmp(&a),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Orders `jobs` (each with its verdict) by `by`, worst or biggest first, ascending when
/// `reverse`; ties keep the server's order (biggest GPU memory first).
pub fn sort_jobs(jobs: &mut [(Job, Option<JobDiagnosis>)], by: SortBy, reverse: bool) {
    let vram = |j: &Job| j.gpu_memory().map(|b| b.0 as f64);
    let read = |j: &Job| {
        j.io.as_ref()
            .and_then(|io| io.read_bytes_per_sec)
            .map(|r| r.0)
    };
    let write = |j: &Job| {
        j.io.as_ref()
            .and_then(|io| io.write_bytes_per_sec)
            .map(|r| r.0)
    };
    let flip = |o: Ordering| if reverse { o.reverse() } else { o };
    jobs.sort_by(|(a, da), (b, db)| match by {
        SortBy::Verdict => flip(badness(db.as_ref()).cmp(&badness(da.as_ref())))
            .then_with(|| by_figure(vram(a), vram(b), false)),
        SortBy::Job => flip(a.label().cmp(&b.label())),
        SortBy::Vram => by_figure(vram(a), vram(b), reverse),
        SortBy::Util => by_figure(util(a).map(|p| p.0), util(b).map(|p| p.0), reverse),
        SortBy::Read => by_figure(read(a), read(b), reverse),
        SortBy::Write => by_figure(write(a), write(b), reverse),
    });
}

/// Each job of the newest frame with its verdict from the diagnosis, if there is one for it.
fn with_verdicts(jobs: &[Job], d: Option<&Diagnosis>) -> Vec<(Job, Option<JobDiagnosis>)> {
    jobs.iter()
        .map(|j| (j.clone(), d.and_then(|d| d.of_job(j)).cloned()))
        .collect()
}

/// `0, 1` for the GPUs a job holds memory on; `0 (MIG 1/0)` for a MIG instance of one.
pub fn gpus_text(job: &Job) -> String {
    if job.gpus.is_empty() {
        return DASH.to_owned();
    }
    let list: Vec<String> = job.gpus.iter().map(shared::JobGpu::place).collect();
    list.join(", ")
}

/// The job's GPU utilization: the mean over its GPUs when it is alone on each, else unknown
/// (NVML's device figure belongs to every job on a shared GPU).
pub fn util(job: &Job) -> Option<Percent> {
    let known: Vec<f64> = job
        .gpus
        .iter()
        .map(|g| g.utilization_pct.map(|p| p.0))
        .collect::<Option<_>>()?;
    (!known.is_empty()).then(|| Percent(known.iter().sum::<f64>() / known.len() as f64))
}

/// What a missing utilization means, for its hover text.
const NOT_THE_JOBS: &str = "Unknown for this job: a GPU it shares with other processes (NVML's figure is the device's), or no figure from NVML";

#[component]
pub fn JobsSection() -> impl IntoView {
    let store = use_store();
    let history = crate::history::use_history();
    // A job's run is read from the stored history and its own series, which a link that shows
    // live data only, or hides user names (a job's id can name its owner), does not get.
    let offer_run =
        history.stored && use_context::<shared::access::SessionInfo>().is_none_or(|s| s.show_users);
    let sort = RwSignal::new((SortBy::Verdict, false));
    let jobs = Memo::new(move |_| {
        let jobs = store
            .latest
            .with(|f| f.as_ref().map(|f| f.jobs.clone()).unwrap_or_default());
        let mut list = store.diagnosis.with(|d| with_verdicts(&jobs, d.as_deref()));
        let (by, reverse) = sort.get();
        sort_jobs(&mut list, by, reverse);
        list
    });
    let open = RwSignal::new(None::<String>);
    move || {
        let list = jobs.get();
        if list.is_empty() {
            return None;
        }
        let shown = open.get();
        let (sorted_by, reversed) = sort.get();
        let headers = SORTABLE
            .iter()
            .map(|&(by, name, num)| {
                let active = by == sorted_by;
                // Names sort A to Z first; verdicts and figures worst or biggest first.
                let ascending = (by == SortBy::Job) != reversed;
                let aria = active.then_some(if ascending { "ascending" } else { "descending" });
                let click = move |_| {
                    sort.update(|s| *s = (by, s.0 == by && !s.1));
                };
                view! {
                    <th class:num=num aria-sort=aria>
                        <button class="sort" class:active=active data-sort=name on:click=click>
                            {name}
                        </button>
                    </th>
                }
            })
            .collect::<Vec<_>>();
        let mut headers = headers.into_iter();
        let (job_h, verdict_h) = (headers.next(), headers.next());
        let rows = list
            .into_iter()
            .map(|(job, verdict)| {
                let key = job_key(&job);
                let is_open = shown.as_deref() == Some(key.as_str());
                let toggle_key = key.clone();
                let toggle = move |_| {
                    open.update(|o| {
                        *o = (o.as_deref() != Some(toggle_key.as_str())).then(|| toggle_key.clone())
                    })
                };
                let run_job = crate::history::JobRun { key: key.clone(), label: job.label() };
                let run = move |_| {
                    history.show_job(store.current_host.get_untracked(), run_job.clone());
                    if let Some(el) = document().get_element_by_id("charts-h") {
                        el.scroll_into_view();
                    }
                };
                let io = job.io.as_ref();
                let io_title = job.io_absent.clone().or_else(|| io.map(|io| io.counter.note().to_owned()));
                let util_title = util(&job).is_none().then_some(NOT_THE_JOBS);
                let verdict_cell = match &verdict {
                    Some(v) => view! {
                        <td data-testid="job-verdict" data-verdict=v.verdict.id()
                            class=format!("job-verdict sev-{}", severity_attr(v.severity))
                            title=job_reason(v, local_tz())>
                            {verdict_text(v.verdict)}
                        </td>
                    }
                    .into_any(),
                    None => view! { <td data-testid="job-verdict">{DASH}</td> }.into_any(),
                };
                let detail = is_open.then(|| view! { <JobDetail job=job.clone() verdict=verdict.clone() /> });
                view! {
                    <tr data-testid="job-row" data-job=key.clone() class:open=is_open>
                        <td>
                            <button class="job-name" aria-expanded=is_open.to_string() on:click=toggle>
                                {job.label()}
                            </button>
                            {offer_run.then(|| view! {
                                " "
                                <button
                                    type="button"
                                    class="job-run-link"
                                    data-testid="job-run-link"
                                    title="Show this job's whole run on the charts, from the stored history"
                                    on:click=run
                                >
                                    "whole run"
                                </button>
                            })}
                        </td>
                        {verdict_cell}
                        <td data-testid="job-user">{job.user.clone().unwrap_or_else(|| DASH.to_owned())}</td>
                        <td>{gpus_text(&job)}</td>
                        <td class="num" data-testid="job-vram">{opt_bytes(job.gpu_memory())}</td>
                        <td class="num" title=util_title>{opt_pct(util(&job))}</td>
                        <td class="num" title=io_title.clone()>{opt_mib_s(io.and_then(|io| io.read_bytes_per_sec))}</td>
                        <td class="num" title=io_title>{opt_mib_s(io.and_then(|io| io.write_bytes_per_sec))}</td>
                    </tr>
                    {detail}
                }
            })
            .collect_view();
        Some(view! {
            <section class="section" aria-labelledby="jobs-h" data-testid="jobs">
                <h2 id="jobs-h">"Jobs"</h2>
                <div class="table-wrap">
                    <table class="procs jobs">
                        <thead>
                            <tr>
                                {job_h}
                                {verdict_h}
                                <th>"User"</th>
                                <th>"GPUs"</th>
                                {headers.collect_view()}
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            </section>
        })
    }
}

/// One job's verdict with its evidence, its GPUs next to its I/O, processes and pressure.
#[component]
fn JobDetail(job: Job, verdict: Option<JobDiagnosis>) -> impl IntoView {
    let tz = local_tz();
    let why = verdict.as_ref().map(|v| {
        // The evidence of the nodes that answered yes (what decided it), else of the last one.
        let decided: Vec<String> = v
            .path
            .iter()
            .filter(|n| n.answer == Answer::Yes)
            .chain(v.path.last().filter(|_| !v.path.iter().any(|n| n.answer == Answer::Yes)))
            .flat_map(|n| n.evidence.iter().map(|e| evidence_text(e, tz)))
            .collect();
        let contention = v.contention.as_ref().map(|c| {
            format!(
                "{} reads {} from {}, the device this job waits on",
                c.label,
                opt_mib_s(Some(shared::BytesPerSec(c.read_bytes_per_sec))),
                c.device
            )
        });
        let fixes: Vec<&str> = v
            .findings
            .iter()
            .flat_map(|f| f.suggestions.iter().map(|s| s.title()))
            .collect();
        view! {
            <li data-testid="job-why">
                <strong>{verdict_text(v.verdict)}</strong>
                <ul class="job-evidence">
                    {decided.into_iter().map(|t| view! { <li>{t}</li> }).collect_view()}
                    {contention.map(|c| view! { <li data-testid="job-contention">{c}</li> })}
                </ul>
                {(!fixes.is_empty()).then(|| view! { <span class="job-fixes">{format!("Try: {}", fixes.join("; "))}</span> })}
            </li>
        }
    });
    let gpus = job
        .gpus
        .iter()
        .map(|g| {
            let why = if g.mig.is_some() {
                "no per-instance figure from NVML"
            } else {
                "not this job's alone"
            };
            let util = g.utilization_pct.map_or_else(
                || format!("util {DASH} ({why})"),
                |p| format!("util {}", opt_pct(Some(p))),
            );
            format!(
                "GPU {}: {} ({} of its memory), {util}",
                g.place(),
                opt_bytes(g.memory_used_bytes),
                opt_pct(g.memory_share_pct)
            )
        })
        .map(|line| view! { <li>{line}</li> })
        .collect_view();
    let io = match (&job.io, &job.io_absent) {
        (Some(io), _) => format!(
            "read {}, write {}{}: {}",
            opt_mib_s(io.read_bytes_per_sec),
            opt_mib_s(io.write_bytes_per_sec),
            if io.unreadable > 0 {
                format!(" ({} processes unreadable, not counted)", io.unreadable)
            } else {
                String::new()
            },
            io.counter.note()
        ),
        (None, Some(why)) => format!("I/O unknown: {why}"),
        (None, None) => format!("I/O {DASH}"),
    };
    let devices = job.io.as_ref().map(|io| {
        io.devices
            .iter()
            .map(|d| {
                let iops = match (d.read_iops, d.write_iops) {
                    (Some(r), Some(w)) => format!(", {r:.0} reads/s, {w:.0} writes/s"),
                    _ => String::new(),
                };
                let line = format!(
                    "{}: read {}, write {}{iops}",
                    d.name,
                    opt_mib_s(Some(d.read_bytes_per_sec)),
                    opt_mib_s(Some(d.write_bytes_per_sec))
                );
                view! { <li data-testid="job-device">{line}</li> }
            })
            .collect_view()
    });
    // Where the memory and CPU were counted (docs/jobs.md#2-the-figures-of-a-job).
    let by = |cgroup: bool| if cgroup { " (its cgroup's)" } else { "" };
    let procs = format!(
        "{} GPU processes (pids {}), {} others; memory {}{}, CPU {}{}",
        job.gpu_pids.len(),
        job.gpu_pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        job.workers
            .map_or_else(|| DASH.to_owned(), |n| n.to_string()),
        opt_bytes(job.rss_bytes),
        by(job.memory_from_cgroup && job.rss_bytes.is_some()),
        opt_pct(job.cpu_pct),
        by(job.cpu_from_cgroup && job.cpu_pct.is_some())
    );
    let psi = job.psi_io.map(|p| {
        format!(
            "I/O pressure of its cgroup: some {}",
            opt_pct(Some(p.some_avg10))
        )
    });
    view! {
        <tr class="job-detail" data-testid="job-detail">
            <td colspan="8">
                <ul>
                    {why}
                    {gpus}
                    <li data-testid="job-io">{io}</li>
                    {devices}
                    <li>{procs}</li>
                    {psi.map(|p| view! { <li>{p}</li> })}
                </ul>
            </td>
        </tr>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::{Severity, Verdict};
    use shared::{JobGpu, JobKind};

    fn job(utils: &[Option<f64>]) -> Job {
        Job {
            gpus: utils
                .iter()
                .enumerate()
                .map(|(i, u)| JobGpu {
                    index: i as u32,
                    uuid: None,
                    memory_used_bytes: None,
                    memory_share_pct: None,
                    utilization_pct: u.map(Percent),
                    mig: None,
                })
                .collect(),
            ..Job::new(JobKind::Slurm, "4412", vec![1])
        }
    }

    #[test]
    fn utilization_is_the_jobs_only_where_it_is_alone_on_every_gpu() {
        assert_eq!(util(&job(&[Some(40.0), Some(60.0)])), Some(Percent(50.0)));
        assert_eq!(util(&job(&[Some(40.0), None])), None);
        assert_eq!(util(&job(&[])), None);
    }

    fn judged(
        id: &str,
        vram_gib: Option<u64>,
        verdict: Option<(Verdict, Severity)>,
    ) -> (Job, Option<JobDiagnosis>) {
        let mut j = job(&[Some(50.0)]);
        j.id = id.into();
        j.gpus[0].memory_used_bytes = vram_gib.map(|g| shared::Bytes(g << 30));
        let d = verdict.map(|(verdict, severity)| JobDiagnosis {
            kind: j.kind,
            id: j.id.clone(),
            step: None,
            label: j.label(),
            user: None,
            gpus: vec![0],
            verdict,
            severity,
            path: Vec::new(),
            findings: Vec::new(),
            contention: None,
        });
        (j, d)
    }

    fn ids(list: &[(Job, Option<JobDiagnosis>)]) -> Vec<&str> {
        list.iter().map(|(j, _)| j.id.as_str()).collect()
    }

    #[test]
    fn worst_verdict_first_then_most_memory_and_unknown_figures_last() {
        let mut list = vec![
            judged(
                "healthy-big",
                Some(70),
                Some((Verdict::Healthy, Severity::Ok)),
            ),
            judged("no-verdict", Some(80), None),
            judged(
                "starved",
                Some(10),
                Some((Verdict::InputBoundDisk, Severity::Warning)),
            ),
            judged(
                "oom",
                Some(5),
                Some((Verdict::GpuMemoryPressure, Severity::Critical)),
            ),
            judged(
                "healthy-small",
                None,
                Some((Verdict::Healthy, Severity::Ok)),
            ),
        ];
        sort_jobs(&mut list, SortBy::Verdict, false);
        assert_eq!(
            ids(&list),
            [
                "oom",
                "starved",
                "healthy-big",
                "healthy-small",
                "no-verdict"
            ]
        );
        sort_jobs(&mut list, SortBy::Vram, false);
        assert_eq!(
            ids(&list),
            [
                "no-verdict",
                "healthy-big",
                "starved",
                "oom",
                "healthy-small"
            ]
        );
        // Reversed: smallest first, and the unknown still last.
        sort_jobs(&mut list, SortBy::Vram, true);
        assert_eq!(
            ids(&list),
            [
                "oom",
                "starved",
                "healthy-big",
                "no-verdict",
                "healthy-small"
            ]
        );
        sort_jobs(&mut list, SortBy::Job, false);
        assert_eq!(ids(&list)[0], "healthy-big");
    }

    #[test]
    fn keys_and_gpu_lists() {
        let j = job(&[Some(1.0), None]);
        assert_eq!(job_key(&j), "slurm:4412");
        assert_eq!(gpus_text(&j), "0, 1");
        assert_eq!(gpus_text(&job(&[])), DASH);
    }
}
