//! GPU cards: one per GPU of the current host's latest frame, with memory, utilization,
//! temperature, power, state, its errors and its process table. Reads `Store::latest`, and
//! `Store::diagnosis` for the memory time-to-full projection.

use super::Errors;
use super::projection::ProjectionTag;
use crate::format::{
    DASH, gpu_item, item_errors, opt_bytes, opt_pct, opt_temp, power, section_errors,
};
use crate::store::use_store;
use leptos::prelude::*;
use shared::diagnosis::ProjectionKind;
use shared::units::Bytes;
use shared::{Gpu, GpuMemory, GpuProcess, GpuState, MemoryApi, Presence, Source};

/// The GPU section: its errors and a card per GPU.
#[component]
pub fn GpuSection() -> impl IntoView {
    let store = use_store();
    let indices = Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .map(|f| f.gpus.iter().map(|g| g.index).collect::<Vec<_>>())
                .unwrap_or_default()
        })
    });
    let errors = Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .map(|f| {
                    let items: Vec<String> = f.gpus.iter().map(|g| gpu_item(g.index)).collect();
                    section_errors(&f.errors, Source::Gpu, &items)
                })
                .unwrap_or_default()
        })
    });
    view! {
        <section class="section" aria-labelledby="gpus-h">
            <h2 id="gpus-h">"GPUs"</h2>
            <Errors list=errors />
            <Show
                when=move || !indices.with(Vec::is_empty)
                fallback=|| view! { <p class="empty">"No GPUs reported."</p> }
            >
                <div class="cards">
                    <For
                        each=move || indices.get()
                        key=|i| *i
                        children=move |index| view! { <GpuCard index /> }
                    />
                </div>
            </Show>
        </section>
    }
}

/// Processes sorted by memory held, largest first (unknown last), for the table.
pub fn by_memory(processes: &[GpuProcess]) -> Vec<GpuProcess> {
    let mut p = processes.to_vec();
    p.sort_by_key(|p| std::cmp::Reverse(p.used_bytes.map(|b| b.0)));
    p
}

/// What the process column shows: the name, or why there is none. A pid that exited and one this
/// vramio cannot see (it runs in a container and NVML reports host pids) are told apart.
pub fn process_label(p: &GpuProcess) -> String {
    match (p.presence, &p.name) {
        (Presence::Visible, Some(name)) => name.clone(),
        (Presence::Visible, None) => DASH.to_owned(),
        (Presence::Exited, _) => "(exited)".to_owned(),
        (Presence::NotVisible, _) => "(not visible here)".to_owned(),
    }
}

/// The hover text of the reserved figure: why it is missing when only NVML memory v1 answered.
fn reserved_title(gpu: Option<&Gpu>) -> Option<&'static str> {
    let v1 = gpu
        .and_then(|g| g.nvml_api)
        .and_then(|a| a.memory)
        .is_some_and(|m| m == MemoryApi::V1);
    v1.then_some("This driver answers only NVML memory v1, which does not report reserved memory")
}

fn state_label(state: GpuState) -> &'static str {
    match state {
        GpuState::Ok => "ok",
        GpuState::Lost => "LOST",
        GpuState::Error => "error",
    }
}

#[component]
fn GpuCard(index: u32) -> impl IntoView {
    let store = use_store();
    let gpu = Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .and_then(|f| f.gpus.iter().find(|g| g.index == index).cloned())
        })
    });
    let errors = Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .map(|f| item_errors(&f.errors, Source::Gpu, &gpu_item(index)))
                .unwrap_or_default()
        })
    });
    let text = move |f: fn(&Gpu) -> String| {
        move || gpu.with(|g| g.as_ref().map_or_else(|| DASH.to_owned(), f))
    };
    let mem = move || gpu.with(|g| g.as_ref().and_then(|g| g.memory));
    let mem_text =
        move |f: fn(&GpuMemory) -> Option<Bytes>| move || opt_bytes(mem().as_ref().and_then(f));
    let mem_attr = move |f: fn(&GpuMemory) -> Option<Bytes>| {
        move || mem().as_ref().and_then(f).map(|b| b.0.to_string())
    };
    let share = move |f: fn(&GpuMemory) -> Option<Bytes>| {
        move || {
            super::bar_width(mem().and_then(|m| f(&m).and_then(|b| b.percent_of(m.total_bytes))))
        }
    };
    let reserved_title = move || gpu.with(|g| reserved_title(g.as_ref()));
    let state = move || gpu.with(|g| g.as_ref().map(|g| g.state));
    let util = move || gpu.with(|g| g.as_ref().and_then(|g| g.utilization_gpu_pct));
    view! {
        <article
            class="card gpu-card"
            class:lost=move || state() == Some(GpuState::Lost)
            data-testid="gpu-card"
            data-gpu-index=index.to_string()
        >
            <header class="card-head">
                <span class="gpu-index">"GPU " {index}</span>
                <h3 class="gpu-name" data-testid="gpu-name">
                    {text(|g| g.name.clone().unwrap_or_else(|| "GPU".into()))}
                </h3>
                <span
                    class="state"
                    data-state=move || state().map(state_label)
                    class:state-bad=move || state().is_some_and(|s| s != GpuState::Ok)
                >
                    {move || state().map_or(DASH, state_label)}
                </span>
            </header>
            <div class="uuid">{text(|g| g.uuid.clone().unwrap_or_default())}</div>
            <Show when=move || state() == Some(GpuState::Lost)>
                <p class="lost-note">"This GPU has fallen off the bus: no readings until it is back."</p>
            </Show>
            <Errors list=errors />
            <div class="mem">
                <div class="bar mem-bar">
                    <div class="bar-fill" style:width=share(|m| Some(m.used_bytes))></div>
                    <div class="bar-reserved" style:width=share(|m| m.reserved_bytes)></div>
                </div>
                <div class="mem-figures">
                    <span data-testid="gpu-mem-used" data-bytes=mem_attr(|m| Some(m.used_bytes))>
                        {mem_text(|m| Some(m.used_bytes))}
                    </span>
                    " used · "
                    <span class="reserved" data-testid="gpu-mem-reserved" title=reserved_title>
                        {mem_text(|m| m.reserved_bytes)}
                    </span>
                    " reserved · "
                    <span data-testid="gpu-mem-total" data-bytes=mem_attr(|m| Some(m.total_bytes))>
                        {mem_text(|m| Some(m.total_bytes))}
                    </span>
                    " total · "
                    <strong class="mem-pct">{move || opt_pct(mem().and_then(|m| m.used_pct()))}</strong>
                    " "
                    <ProjectionTag kind=ProjectionKind::TimeToFullGpuMemory subject=gpu_item(index) />
                </div>
            </div>
            <dl class="stats">
                <div>
                    <dt>"GPU util"</dt>
                    <dd data-testid="gpu-util" data-pct=move || util().map(|p| p.0.to_string())>
                        {move || opt_pct(util())}
                    </dd>
                </div>
                <div>
                    <dt>"Mem util"</dt>
                    <dd>{text(|g| opt_pct(g.utilization_memory_pct))}</dd>
                </div>
                <div>
                    <dt>"Temp"</dt>
                    <dd>{text(|g| opt_temp(g.temperature_c))}</dd>
                </div>
                <div>
                    <dt>"Power"</dt>
                    <dd>{text(|g| power(g.power_w, g.power_limit_w))}</dd>
                </div>
            </dl>
            <MigInstances gpu />
            <Processes gpu />
        </article>
    }
}

/// `1/0`: a MIG instance's GPU instance and compute instance, as `nvidia-smi` lists them.
pub fn slot_text(slot: Option<shared::MigSlot>) -> String {
    slot.map_or_else(
        || DASH.to_owned(),
        |s| format!("{}/{}", s.gpu_instance_id, s.compute_instance_id),
    )
}

/// A GPU in MIG mode's instances: each one's memory (its own pool), utilization where the driver
/// gives it (most do not: a dash), and how many processes run on it.
#[component]
fn MigInstances(gpu: Memo<Option<Gpu>>) -> impl IntoView {
    move || {
        gpu.with(|g| {
            let g = g.as_ref().filter(|g| !g.mig.is_empty())?;
            let rows = g
                .mig
                .iter()
                .map(|i| {
                    // An instance without its ids cannot be told its processes: a dash.
                    let procs = i.slot.and(g.processes.as_deref()).map(|list| {
                        list.iter().filter(|p| p.mig.is_some() && p.mig == i.slot).count()
                    });
                    let memory = i.memory.map_or_else(
                        || DASH.to_owned(),
                        |m| {
                            format!(
                                "{} / {} ({})",
                                opt_bytes(Some(m.used_bytes)),
                                opt_bytes(Some(m.total_bytes)),
                                opt_pct(m.used_pct())
                            )
                        },
                    );
                    view! {
                        <tr data-testid="gpu-mig" data-slot=slot_text(i.slot)>
                            <td>{slot_text(i.slot)}</td>
                            <td class="num" data-testid="gpu-mig-mem">{memory}</td>
                            <td class="num" data-testid="gpu-mig-util">{opt_pct(i.utilization_gpu_pct)}</td>
                            <td class="num">{procs.map_or_else(|| DASH.to_owned(), |n| n.to_string())}</td>
                        </tr>
                    }
                })
                .collect_view();
            Some(view! {
                <div class="table-wrap">
                    <table class="procs mig" data-testid="gpu-migs">
                        <thead>
                            <tr>
                                <th title="MIG instance: GPU instance / compute instance">"MIG"</th>
                                <th class="num">"Memory"</th>
                                <th class="num" title="Absent where the driver has no per-instance utilization">"Util"</th>
                                <th class="num" title="Processes on the instance">"Procs"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            })
        })
    }
}

/// Each GPU process's job (`slurm 4412`), by pid, from the frame's jobs.
pub fn job_of(jobs: &[shared::Job], pid: u32) -> Option<String> {
    jobs.iter()
        .find(|j| j.gpu_pids.contains(&pid))
        .map(shared::Job::id_label)
}

#[component]
fn Processes(gpu: Memo<Option<Gpu>>) -> impl IntoView {
    let store = use_store();
    move || {
        let jobs = store
            .latest
            .with(|f| f.as_ref().map(|f| f.jobs.clone()).unwrap_or_default());
        gpu.with(|g| match g.as_ref().and_then(|g| g.processes.as_deref()) {
            None => view! { <p class="empty">"Process list unavailable."</p> }.into_any(),
            Some([]) => view! { <p class="empty">"No processes."</p> }.into_any(),
            Some(list) => {
                let mig = list.iter().any(|p| p.mig.is_some());
                let rows = by_memory(list)
                    .into_iter()
                    .map(|p| {
                        let orphan = p.presence == Presence::Exited;
                        let hidden = p.presence == Presence::NotVisible;
                        let label = process_label(&p);
                        let job = job_of(&jobs, p.pid).unwrap_or_else(|| DASH.to_owned());
                        view! {
                            <tr
                                data-testid="gpu-proc"
                                data-pid=p.pid.to_string()
                                class:orphan=orphan
                                class:hidden-proc=hidden
                            >
                                <td class="num">{p.pid}</td>
                                <td>{label}</td>
                                <td>{p.user.unwrap_or_else(|| DASH.to_owned())}</td>
                                <td data-testid="gpu-proc-job">{job}</td>
                                {mig.then(|| view! { <td data-testid="gpu-proc-mig">{slot_text(p.mig)}</td> })}
                                <td class="num">{opt_bytes(p.used_bytes)}</td>
                            </tr>
                        }
                    })
                    .collect_view();
                view! {
                    <div class="table-wrap">
                        <table class="procs">
                            <thead>
                                <tr>
                                    <th class="num">"PID"</th>
                                    <th>"Process"</th>
                                    <th>"User"</th>
                                    <th>"Job"</th>
                                    {mig.then(|| view! { <th title="GPU instance / compute instance">"MIG"</th> })}
                                    <th class="num">"Memory"</th>
                                </tr>
                            </thead>
                            <tbody>{rows}</tbody>
                        </table>
                    </div>
                }
                .into_any()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: u32, used: Option<u64>) -> GpuProcess {
        GpuProcess {
            pid,
            presence: Presence::Exited,
            name: None,
            user: None,
            used_bytes: used.map(Bytes),
            mig: None,
        }
    }

    #[test]
    fn processes_sort_by_memory_unknown_last() {
        let sorted = by_memory(&[proc(1, Some(10)), proc(2, None), proc(3, Some(30))]);
        let pids: Vec<u32> = sorted.iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![3, 1, 2]);
    }

    #[test]
    fn exited_and_hidden_processes_are_told_apart() {
        let mut p = proc(7, Some(1));
        assert_eq!(process_label(&p), "(exited)");
        p.presence = Presence::NotVisible;
        assert_eq!(process_label(&p), "(not visible here)");
        p.presence = Presence::Visible;
        p.name = Some("python3".to_owned());
        assert_eq!(process_label(&p), "python3");
    }

    #[test]
    fn a_missing_reserved_figure_says_why() {
        let mut g = Gpu::unread(0, Some("GPU-0".into()), Some("V100".into()), GpuState::Ok);
        assert_eq!(reserved_title(Some(&g)), None);
        g.nvml_api = Some(shared::GpuApis {
            memory: Some(MemoryApi::V1),
            processes: None,
        });
        assert!(reserved_title(Some(&g)).is_some_and(|t| t.contains("v1")));
    }

    #[test]
    fn lost_is_loud() {
        assert_eq!(state_label(GpuState::Lost), "LOST");
        assert_eq!(state_label(GpuState::Ok), "ok");
    }
}
