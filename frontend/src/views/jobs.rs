//! The Jobs table: the current host's jobs (GPU processes grouped by Slurm job, pod, container,
//! unit or process tree, docs/jobs.md), biggest GPU memory first as the server orders them, with
//! their GPUs, GPU memory, utilization where it is the job's, and disk I/O. A job's row opens its
//! detail: each GPU's memory and utilization next to the job's I/O, processes and pressure.
//! Reads `Store::latest`; one reactive node renders the whole table from a plain list.

use crate::format::{DASH, opt_bytes, opt_mib_s, opt_pct};
use crate::store::use_store;
use leptos::prelude::*;
use shared::{Job, Percent};

/// A job's key in the page (kind and id), stable across frames.
pub fn job_key(job: &Job) -> String {
    format!("{}:{}", job.kind.id(), job.id)
}

/// `0, 1` for the GPUs a job holds memory on.
pub fn gpus_text(job: &Job) -> String {
    if job.gpus.is_empty() {
        return DASH.to_owned();
    }
    let list: Vec<String> = job.gpus.iter().map(|g| g.index.to_string()).collect();
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
    let jobs = Memo::new(move |_| {
        store
            .latest
            .with(|f| f.as_ref().map(|f| f.jobs.clone()).unwrap_or_default())
    });
    let open = RwSignal::new(None::<String>);
    move || {
        let list = jobs.get();
        if list.is_empty() {
            return None;
        }
        let shown = open.get();
        let rows = list
            .into_iter()
            .map(|job| {
                let key = job_key(&job);
                let is_open = shown.as_deref() == Some(key.as_str());
                let toggle_key = key.clone();
                let toggle = move |_| {
                    open.update(|o| {
                        *o = (o.as_deref() != Some(toggle_key.as_str())).then(|| toggle_key.clone())
                    })
                };
                let io = job.io.as_ref();
                let io_title = job.io_absent.clone().or_else(|| io.map(|io| io.counter.note().to_owned()));
                let util_title = util(&job).is_none().then_some(NOT_THE_JOBS);
                let detail = is_open.then(|| view! { <JobDetail job=job.clone() /> });
                view! {
                    <tr data-testid="job-row" data-job=key.clone() class:open=is_open>
                        <td>
                            <button class="job-name" aria-expanded=is_open.to_string() on:click=toggle>
                                {job.label()}
                            </button>
                        </td>
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
                                <th>"Job"</th>
                                <th>"User"</th>
                                <th>"GPUs"</th>
                                <th class="num">"VRAM"</th>
                                <th class="num">"GPU util"</th>
                                <th class="num">"Read"</th>
                                <th class="num">"Write"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            </section>
        })
    }
}

/// One job's GPUs next to its I/O, processes and pressure.
#[component]
fn JobDetail(job: Job) -> impl IntoView {
    let gpus = job
        .gpus
        .iter()
        .map(|g| {
            let util = g.utilization_pct.map_or_else(
                || format!("util {DASH} (not this job's alone)"),
                |p| format!("util {}", opt_pct(Some(p))),
            );
            format!(
                "GPU {}: {} ({} of its memory), {util}",
                g.index,
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
    let procs = format!(
        "{} GPU processes (pids {}), {} others; RSS {}, CPU {}",
        job.gpu_pids.len(),
        job.gpu_pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        job.workers
            .map_or_else(|| DASH.to_owned(), |n| n.to_string()),
        opt_bytes(job.rss_bytes),
        opt_pct(job.cpu_pct)
    );
    let psi = job.psi_io.map(|p| {
        format!(
            "I/O pressure of its cgroup: some {}",
            opt_pct(Some(p.some_avg10))
        )
    });
    view! {
        <tr class="job-detail" data-testid="job-detail">
            <td colspan="7">
                <ul>
                    {gpus}
                    <li data-testid="job-io">{io}</li>
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
    use shared::{JobGpu, JobKind};

    fn job(utils: &[Option<f64>]) -> Job {
        Job {
            kind: JobKind::Slurm,
            id: "4412".into(),
            step: None,
            name: None,
            user: None,
            gpus: utils
                .iter()
                .enumerate()
                .map(|(i, u)| JobGpu {
                    index: i as u32,
                    uuid: None,
                    memory_used_bytes: None,
                    memory_share_pct: None,
                    utilization_pct: u.map(Percent),
                })
                .collect(),
            gpu_pids: vec![1],
            workers: None,
            rss_bytes: None,
            cpu_pct: None,
            io: None,
            io_absent: None,
            psi_io: None,
            psi_memory: None,
        }
    }

    #[test]
    fn utilization_is_the_jobs_only_where_it_is_alone_on_every_gpu() {
        assert_eq!(util(&job(&[Some(40.0), Some(60.0)])), Some(Percent(50.0)));
        assert_eq!(util(&job(&[Some(40.0), None])), None);
        assert_eq!(util(&job(&[])), None);
    }

    #[test]
    fn keys_and_gpu_lists() {
        let j = job(&[Some(1.0), None]);
        assert_eq!(job_key(&j), "slurm:4412");
        assert_eq!(gpus_text(&j), "0, 1");
        assert_eq!(gpus_text(&job(&[])), DASH);
    }
}
