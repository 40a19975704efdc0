//! One merged moment of imported samples into a [`Frame`]: the rows become the frame's GPUs,
//! processes, disks, mounts and CPU figures, and what the logs lack stays absent. A GPU without
//! memory figures carries an error that names them, so the diagnosis says what is missing.

use super::model::{CpuRow, DiskRow, GpuRow, MigRow, MountRow, ProcessRow, Sample};
use shared::{
    BlockDevice, Bytes, BytesPerSec, Frame, Gpu, GpuMemory, GpuProcess, GpuState, MigInstance,
    Mount, MountKind, NvmlStatus, Percent, Presence, Source, SourceError, SystemStats,
};

use crate::collect::sources::gpu::mig::MAX_MIG_DEVICES;
use crate::collect::sources::jobs::job_gpu;
use shared::{Job, JobGpu, JobKind, MigSlot};
use std::collections::{BTreeMap, HashMap};

/// What the frames of an import say about NVML when no log has GPU rows.
pub const NO_GPU_LOG: &str = "no GPU data in the imported logs";

/// The frame at `t_ms` from the samples merged into it (several files' samples of one moment).
pub fn frame(host: &str, seq: u64, t_ms: u64, interval_ms: u64, samples: &[&Sample]) -> Frame {
    let mut f = Frame::empty(host, seq, t_ms, interval_ms);
    let gpu_rows: Vec<&GpuRow> = samples.iter().flat_map(|s| &s.gpus).collect();
    let processes: Vec<&ProcessRow> = samples.iter().flat_map(|s| &s.processes).collect();
    let instances: Vec<&MigRow> = samples.iter().flat_map(|s| &s.mig).collect();
    let driver = gpu_rows.iter().find_map(|g| g.driver_version.clone());
    f.nvml = if gpu_rows.is_empty() && processes.is_empty() {
        NvmlStatus::Error {
            message: NO_GPU_LOG.into(),
        }
    } else {
        NvmlStatus::Ok {
            driver_version: driver,
        }
    };
    for (pos, row) in gpu_rows.iter().enumerate() {
        let index = row
            .index
            .unwrap_or_else(|| u32::try_from(pos).unwrap_or(u32::MAX));
        let mut g = gpu(index, row);
        g.mig = instances
            .iter()
            .filter(|m| m.gpu_index == Some(index))
            .filter_map(|m| mig_instance(m))
            .collect();
        // Two samples of one moment (or a repeated row) name an instance once; NVML has 7.
        g.mig.sort_by_key(|i| i.index);
        g.mig.dedup_by_key(|i| i.index);
        g.mig.truncate(MAX_MIG_DEVICES as usize);
        let mine: Vec<GpuProcess> = processes
            .iter()
            .filter(|p| {
                p.gpu_index == Some(index) || (p.gpu_uuid.is_some() && p.gpu_uuid == row.uuid)
            })
            .map(|p| process(p))
            .collect();
        // With a process log in this moment, a GPU it does not list has none.
        if !processes.is_empty() {
            g.processes = Some(mine);
            g.processes_t_ms = Some(t_ms);
        }
        if g.memory.is_none() {
            f.errors.push(SourceError {
                source: Source::Gpu,
                item: Some(format!("gpu {index}")),
                message: missing_memory(row),
            });
        }
        f.gpus.push(g);
    }
    f.block_devices = samples
        .iter()
        .flat_map(|s| &s.disks)
        .map(block_device)
        .collect();
    f.mounts = samples.iter().flat_map(|s| &s.mounts).map(mount).collect();
    f.system = samples.iter().find_map(|s| s.cpu.as_ref()).map(system);
    f.jobs = process_jobs(&f.gpus);
    f
}

/// Each process a log names is a job of its own, `process <pid>` (docs/jobs.md#imported-logs): a
/// log has no cgroups, process tree or per-process I/O, so a job's workers, CPU, host memory
/// and I/O are absent, and its GPU parts come from the log's memory per process.
fn process_jobs(gpus: &[Gpu]) -> Vec<Job> {
    // Each GPU's (and MIG instance's) processes counted once, then each process's part: linear
    // in the processes, however long a log's lists are.
    let mut parts: BTreeMap<u32, (Option<String>, Vec<JobGpu>)> = BTreeMap::new();
    for g in gpus {
        let list = g.processes.as_deref().unwrap_or_default();
        let mut on: HashMap<Option<MigSlot>, usize> = HashMap::new();
        for p in list {
            *on.entry(p.mig).or_default() += 1;
        }
        for p in list {
            let alone = on.get(&p.mig) == Some(&1);
            let entry = parts
                .entry(p.pid)
                .or_insert_with(|| (p.name.clone(), Vec::new()));
            entry.1.extend(job_gpu(g, p.mig, &[p], alone));
        }
    }
    let mut jobs: Vec<Job> = parts
        .into_iter()
        .map(|(pid, (name, gpus))| Job {
            name,
            gpus,
            io_absent: Some(NO_JOB_IO.to_owned()),
            ..Job::new(JobKind::Process, pid.to_string(), vec![pid])
        })
        .collect();
    jobs.sort_by(|a, b| {
        b.gpu_memory()
            .map(|b| b.0)
            .cmp(&a.gpu_memory().map(|b| b.0))
            .then_with(|| a.id.cmp(&b.id))
    });
    jobs
}

/// Why an imported job has no I/O figures.
pub const NO_JOB_IO: &str = "the imported logs have no per-process I/O";

fn gpu(index: u32, row: &GpuRow) -> Gpu {
    let mut g = Gpu::unread(index, row.uuid.clone(), row.name.clone(), GpuState::Ok);
    g.memory = match (row.memory_total_bytes, row.memory_used_bytes) {
        (Some(total), Some(used)) => Some(GpuMemory {
            total_bytes: Bytes(total),
            used_bytes: Bytes(used),
            reserved_bytes: row.memory_reserved_bytes.map(Bytes),
            free_bytes: Bytes(
                row.memory_free_bytes
                    .unwrap_or_else(|| total.saturating_sub(used)),
            ),
        }),
        // Total from used + free when the log has those two.
        (None, Some(used)) => row.memory_free_bytes.map(|free| GpuMemory {
            total_bytes: Bytes(used.saturating_add(free)),
            used_bytes: Bytes(used),
            reserved_bytes: row.memory_reserved_bytes.map(Bytes),
            free_bytes: Bytes(free),
        }),
        _ => None,
    };
    g.utilization_gpu_pct = row.util_gpu_pct.map(Percent);
    g.utilization_memory_pct = row.util_mem_pct.map(Percent);
    g.temperature_c = row.temperature_c;
    g.power_w = row.power_w;
    g.power_limit_w = row.power_limit_w;
    g
}

/// "the log has no memory.used, memory.total" for the fields a GPU row lacks.
fn missing_memory(row: &GpuRow) -> String {
    let mut missing = Vec::new();
    if row.memory_used_bytes.is_none() {
        missing.push("memory.used");
    }
    if row.memory_total_bytes.is_none() && row.memory_free_bytes.is_none() {
        missing.push("memory.total");
    }
    format!("the log has no {} for this GPU", missing.join(" or "))
}

fn process(p: &ProcessRow) -> GpuProcess {
    GpuProcess {
        pid: p.pid,
        // A log names the processes it saw; whether they still run is not known here.
        presence: Presence::Visible,
        name: p.name.clone(),
        user: None,
        used_bytes: p.used_bytes.map(Bytes),
        mig: p.mig,
    }
}

/// A MIG instance as the log gives it: its ids, memory and index; no uuid or utilization. A row
/// without its MIG device index is left out.
fn mig_instance(m: &MigRow) -> Option<MigInstance> {
    Some(MigInstance {
        index: m.device?,
        slot: m.slot,
        uuid: None,
        memory: m
            .memory_total_bytes
            .zip(m.memory_used_bytes)
            .map(|(total, used)| GpuMemory {
                total_bytes: Bytes(total),
                used_bytes: Bytes(used),
                reserved_bytes: None,
                free_bytes: Bytes(total.saturating_sub(used)),
            }),
        utilization_gpu_pct: None,
    })
}

fn block_device(d: &DiskRow) -> BlockDevice {
    BlockDevice {
        name: d.device.clone(),
        rotational: None,
        partitions: Vec::new(),
        read_bytes_total: None,
        write_bytes_total: None,
        read_bytes_per_sec: d.read_bytes_per_sec.map(BytesPerSec),
        write_bytes_per_sec: d.write_bytes_per_sec.map(BytesPerSec),
        read_iops: d.read_iops,
        write_iops: d.write_iops,
        util_pct: d.util_pct.map(Percent),
        r_await_ms: d.r_await_ms.or(d.await_ms),
        w_await_ms: d.w_await_ms.or(d.await_ms),
        avg_queue_size: d.avg_queue_size,
        counters: None,
    }
}

fn mount(m: &MountRow) -> Mount {
    Mount {
        mount_point: m.mount_point.clone(),
        device: m.source.clone(),
        fs_type: m.fs_type.clone(),
        kind: kind(m.fs_type.as_deref(), &m.source),
        total_bytes: m.size_bytes.map(Bytes),
        used_bytes: m.used_bytes.map(Bytes),
        available_bytes: m.avail_bytes.map(Bytes),
        inodes_total: m.inodes_total,
        inodes_used: m
            .inodes_used
            .or_else(|| Some(m.inodes_total?.saturating_sub(m.inodes_free?))),
        read_only: None,
    }
}

/// What a `df` line says about the storage: by type when `-T` gave one, else by the source.
fn kind(fs_type: Option<&str>, source: &str) -> MountKind {
    match fs_type {
        Some(
            "nfs" | "nfs4" | "cifs" | "smb3" | "lustre" | "gpfs" | "beegfs" | "ceph" | "glusterfs",
        ) => MountKind::Network,
        Some("tmpfs" | "devtmpfs") => MountKind::Tmpfs,
        Some("overlay") => MountKind::Overlay,
        Some(_) if source.starts_with("/dev/") => MountKind::Local,
        Some(_) => MountKind::Other,
        None if source == "tmpfs" || source == "devtmpfs" => MountKind::Tmpfs,
        None if source == "overlay" => MountKind::Overlay,
        None if source.contains(":/") || source.starts_with("//") => MountKind::Network,
        None if source.starts_with("/dev/") => MountKind::Local,
        None => MountKind::Other,
    }
}

fn system(c: &CpuRow) -> SystemStats {
    let busy = match (c.idle_pct, c.iowait_pct) {
        (Some(idle), Some(iowait)) => Some((100.0 - idle - iowait).clamp(0.0, 100.0)),
        _ => None,
    };
    SystemStats {
        cpu_pct: busy.map(Percent),
        iowait_pct: c.iowait_pct.map(Percent),
        ..SystemStats::default()
    }
}
