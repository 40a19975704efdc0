//! Strategies for [`Frame`] and everything in it, and for windows of frames as `diagnose` takes
//! them. Every `Option` is sometimes `None`; numbers lean on the edges (see the parent module).

use super::{Floats, GIB, T0_MS, TIB, float, int, int32, name, one_of, opt};
use proptest::collection::vec;
use proptest::prelude::*;
use shared::{
    BlockCounters, BlockDevice, Bytes, BytesPerSec, Frame, Gpu, GpuApis, GpuMemory, GpuProcess,
    Job, JobDeviceIo, JobGpu, JobIo, JobPsi, MigInstance, MigSlot, Mount, NvmlStatus, Percent, Psi,
    SourceCost, SourceError, SystemStats,
};

static HOSTS: [&str; 3] = ["gpu-node-7", "node1", ""];
static GPU_NAMES: [&str; 3] = ["NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-32GB", ""];
static UUIDS: [&str; 3] = ["GPU-0", "GPU-1", "GPU-3f1c2a7e-91d4-4b2e-8c55-0a9b7e6d1f20"];
static PROCS: [&str; 3] = ["python3", "torchrun", ""];
static USERS: [&str; 3] = ["alice", "1001", ""];
static MOUNT_POINTS: [&str; 6] = ["/", "/data", "/dev/shm", "/tmp", "/home/ålice", ""];
static DEVICES: [&str; 5] = ["/dev/nvme0n1p1", "server:/export", "tmpfs", "overlay", ""];
static FS_TYPES: [&str; 5] = ["xfs", "ext4", "tmpfs", "nfs4", "overlay"];
static DISKS: [&str; 5] = ["nvme0n1", "sda", "sdb", "md0", ""];
static MESSAGES: [&str; 3] = [
    "GPU is lost (NVML_ERROR_GPU_IS_LOST)",
    "no NVIDIA driver found (libnvidia-ml.so.1)",
    "",
];
static JOB_IDS: [&str; 4] = ["4412", "train-llm.service", "2211", ""];
static STEPS: [&str; 3] = ["0", "extern", "batch"];
static ITEMS: [&str; 3] = ["gpu 0", "gpu 1", "/data"];

/// A percentage: mostly 0..100, with the float edges.
pub fn percent(f: Floats) -> impl Strategy<Value = Percent> {
    float(f, 0.0..100.0).prop_map(Percent)
}

/// Bytes, mostly below `top`.
fn bytes(top: u64) -> impl Strategy<Value = Bytes> {
    int(0..top).prop_map(Bytes)
}

fn gpu_memory() -> impl Strategy<Value = GpuMemory> {
    prop_oneof![
        // Consistent: used a share (0..=100.0%) of total, free the rest.
        3 => (int(GIB..200 * GIB), 0u64..=1000, opt(bytes(GIB))).prop_map(
            |(total, permille, reserved)| {
                let used = total / 1000 * permille;
                GpuMemory {
                    total_bytes: Bytes(total),
                    used_bytes: Bytes(used),
                    reserved_bytes: reserved,
                    free_bytes: Bytes(total.saturating_sub(used)),
                }
            }
        ),
        // Anything: used above total, a zero total, free that does not add up.
        1 => (bytes(200 * GIB), bytes(200 * GIB), opt(bytes(GIB)), bytes(200 * GIB)).prop_map(
            |(total_bytes, used_bytes, reserved_bytes, free_bytes)| GpuMemory {
                total_bytes,
                used_bytes,
                reserved_bytes,
                free_bytes,
            }
        ),
    ]
}

/// A MIG instance's ids: few values, so processes and instances meet.
fn mig_slot() -> impl Strategy<Value = MigSlot> {
    (int32(0..3), int32(0..2)).prop_map(|(gpu_instance_id, compute_instance_id)| MigSlot {
        gpu_instance_id,
        compute_instance_id,
    })
}

fn mig_instance(f: Floats) -> impl Strategy<Value = MigInstance> {
    (
        int32(0..7),
        opt(mig_slot()),
        opt(name(&UUIDS)),
        opt(gpu_memory()),
        opt(percent(f)),
    )
        .prop_map(
            |(index, slot, uuid, memory, utilization_gpu_pct)| MigInstance {
                index,
                slot,
                uuid,
                memory,
                utilization_gpu_pct,
            },
        )
}

fn gpu_process() -> impl Strategy<Value = GpuProcess> {
    (
        prop_oneof![3 => 1u32..5, 1 => any::<u32>()],
        one_of(),
        opt(name(&PROCS)),
        opt(name(&USERS)),
        opt(bytes(80 * GIB)),
        opt(mig_slot()),
    )
        .prop_map(|(pid, presence, name, user, used_bytes, mig)| GpuProcess {
            pid,
            presence,
            name,
            user,
            used_bytes,
            mig,
        })
}

pub fn gpu(f: Floats) -> impl Strategy<Value = Gpu> {
    let ident = (
        int32(0..4),
        opt(name(&UUIDS)),
        opt(name(&GPU_NAMES)),
        one_of(),
    );
    let readings = (
        opt(gpu_memory()),
        opt(percent(f)),
        opt(percent(f)),
        opt(float(f, 20.0..95.0)),
        opt(float(f, 50.0..700.0)),
        opt(float(f, 100.0..700.0)),
    );
    let apis = (opt(one_of()), opt(one_of()))
        .prop_map(|(memory, processes)| GpuApis { memory, processes });
    let lists = (
        opt(vec(gpu_process(), 0..4)),
        opt(int(T0_MS..T0_MS + 1_000_000)),
        opt(apis),
        prop_oneof![3 => Just(Vec::new()), 1 => vec(mig_instance(f), 0..3)],
    );
    (ident, readings, lists).prop_map(
        |(
            (index, uuid, name, state),
            (memory, util_gpu, util_mem, temperature_c, power_w, power_limit_w),
            (processes, processes_t_ms, nvml_api, mig),
        )| Gpu {
            index,
            uuid,
            name,
            state,
            memory,
            utilization_gpu_pct: util_gpu,
            utilization_memory_pct: util_mem,
            temperature_c,
            power_w,
            power_limit_w,
            processes,
            processes_t_ms,
            nvml_api,
            mig,
        },
    )
}

/// Size, used and available: consistent (a share used, the rest available), or anything.
fn mount_space() -> impl Strategy<Value = (Option<Bytes>, Option<Bytes>, Option<Bytes>)> {
    prop_oneof![
        3 => (int(GIB..16 * TIB), 0u64..=1000).prop_map(|(total, permille)| {
            let used = total / 1000 * permille;
            (Some(Bytes(total)), Some(Bytes(used)), Some(Bytes(total - used)))
        }),
        1 => (opt(bytes(16 * TIB)), opt(bytes(16 * TIB)), opt(bytes(16 * TIB))),
    ]
}

pub fn mount() -> impl Strategy<Value = Mount> {
    (
        (
            name(&MOUNT_POINTS),
            name(&DEVICES),
            opt(name(&FS_TYPES)),
            one_of(),
        ),
        mount_space(),
        (
            opt(int(0..1 << 32)),
            opt(int(0..1 << 32)),
            opt(any::<bool>()),
        ),
    )
        .prop_map(
            |(
                (mount_point, device, fs_type, kind),
                (total_bytes, used_bytes, available_bytes),
                (inodes_total, inodes_used, read_only),
            )| Mount {
                mount_point,
                device,
                fs_type,
                kind,
                total_bytes,
                used_bytes,
                available_bytes,
                inodes_total,
                inodes_used,
                read_only,
            },
        )
}

fn block_counters() -> impl Strategy<Value = BlockCounters> {
    (
        int(0..1 << 40),
        int(0..1 << 40),
        int(0..1 << 40),
        int(0..1 << 40),
    )
        .prop_map(|(r, w, io, weighted)| BlockCounters {
            reads_completed_total: r,
            writes_completed_total: w,
            io_time_ms_total: io,
            weighted_io_time_ms_total: weighted,
        })
}

pub fn block_device(f: Floats) -> impl Strategy<Value = BlockDevice> {
    let rate = move || opt(float(f, 0.0..4e9).prop_map(BytesPerSec));
    (
        (
            name(&DISKS),
            opt(any::<bool>()),
            vec(name(&DISKS), 0..3),
            opt(bytes(1 << 50)),
            opt(bytes(1 << 50)),
        ),
        (
            rate(),
            rate(),
            opt(float(f, 0.0..1e6)),
            opt(float(f, 0.0..1e6)),
        ),
        (
            opt(percent(f)),
            opt(float(f, 0.0..50.0)),
            opt(float(f, 0.0..50.0)),
            opt(float(f, 0.0..64.0)),
            opt(block_counters()),
        ),
    )
        .prop_map(
            |(
                (name, rotational, partitions, read_bytes_total, write_bytes_total),
                (read_bytes_per_sec, write_bytes_per_sec, read_iops, write_iops),
                (util_pct, r_await_ms, w_await_ms, avg_queue_size, counters),
            )| BlockDevice {
                name,
                rotational,
                partitions,
                read_bytes_total,
                write_bytes_total,
                read_bytes_per_sec,
                write_bytes_per_sec,
                read_iops,
                write_iops,
                util_pct,
                r_await_ms,
                w_await_ms,
                avg_queue_size,
                counters,
            },
        )
}

fn psi(f: Floats) -> impl Strategy<Value = Psi> {
    (percent(f), opt(percent(f)), opt(int(0..1 << 40))).prop_map(
        |(some_avg10, full_avg10, some_total_us)| Psi {
            some_avg10,
            full_avg10,
            some_total_us,
        },
    )
}

pub fn system(f: Floats) -> impl Strategy<Value = SystemStats> {
    (
        (
            opt(int32(1..256)),
            opt(percent(f)),
            opt(percent(f)),
            opt(bytes(2 * TIB)),
            opt(bytes(2 * TIB)),
            opt(bytes(2 * TIB)),
        ),
        (
            opt(bytes(64 * GIB)),
            opt(bytes(64 * GIB)),
            opt(bytes(256 * GIB)),
            opt(bytes(256 * GIB)),
            opt(psi(f)),
            opt(psi(f)),
        ),
    )
        .prop_map(
            |(
                (cpu_count, cpu_pct, iowait_pct, mem_total, mem_available, page_cache),
                (dirty, writeback, swap_total, swap_used, psi_io, psi_memory),
            )| SystemStats {
                cpu_count,
                cpu_pct,
                iowait_pct,
                mem_total_bytes: mem_total,
                mem_available_bytes: mem_available,
                page_cache_bytes: page_cache,
                dirty_bytes: dirty,
                writeback_bytes: writeback,
                swap_total_bytes: swap_total,
                swap_used_bytes: swap_used,
                psi_io,
                psi_memory,
            },
        )
}

fn job_psi(f: Floats) -> impl Strategy<Value = JobPsi> {
    (percent(f), opt(percent(f))).prop_map(|(some_avg10, full_avg10)| JobPsi {
        some_avg10,
        full_avg10,
    })
}

fn job_gpu(f: Floats) -> impl Strategy<Value = JobGpu> {
    (
        int32(0..8),
        opt(name(&UUIDS)),
        opt(bytes(80 * GIB)),
        opt(percent(f)),
        opt(percent(f)),
        opt(mig_slot()),
    )
        .prop_map(
            |(index, uuid, memory_used_bytes, memory_share_pct, utilization_pct, mig)| JobGpu {
                index,
                uuid,
                memory_used_bytes,
                memory_share_pct,
                utilization_pct,
                mig,
            },
        )
}

fn job_io(f: Floats) -> impl Strategy<Value = JobIo> {
    let device = (
        name(&DEVICES),
        float(f, 0.0..4e9).prop_map(BytesPerSec),
        float(f, 0.0..4e9).prop_map(BytesPerSec),
        opt(float(f, 0.0..1e6)),
        opt(float(f, 0.0..1e6)),
    )
        .prop_map(
            |(name, read_bytes_per_sec, write_bytes_per_sec, read_iops, write_iops)| JobDeviceIo {
                name,
                read_bytes_per_sec,
                write_bytes_per_sec,
                read_iops,
                write_iops,
            },
        );
    (
        (
            one_of(),
            opt(float(f, 0.0..4e9).prop_map(BytesPerSec)),
            opt(float(f, 0.0..4e9).prop_map(BytesPerSec)),
            int32(0..3),
        ),
        (
            opt(float(f, 0.0..1e6)),
            opt(float(f, 0.0..1e6)),
            vec(device, 0..=2),
        ),
    )
        .prop_map(
            |(
                (counter, read_bytes_per_sec, write_bytes_per_sec, unreadable),
                (read_iops, write_iops, devices),
            )| JobIo {
                counter,
                read_bytes_per_sec,
                write_bytes_per_sec,
                unreadable,
                read_iops,
                write_iops,
                devices,
            },
        )
}

/// A job, every field drawn (the sampler's invariants, such as absent I/O with a reason, are not
/// the wire's).
pub fn job(f: Floats) -> impl Strategy<Value = Job> {
    (
        (
            one_of(),
            name(&JOB_IDS),
            opt(name(&STEPS)),
            opt(name(&PROCS)),
            opt(name(&USERS)),
        ),
        (
            vec(job_gpu(f), 0..=3),
            vec(1u32..100_000, 0..=3),
            opt(int32(0..64)),
            opt(bytes(TIB)),
            opt(percent(f)),
        ),
        (
            opt(job_io(f)),
            opt(name(&MESSAGES)),
            opt(job_psi(f)),
            opt(job_psi(f)),
        ),
    )
        .prop_map(
            |(
                (kind, id, step, name, user),
                (gpus, gpu_pids, workers, rss_bytes, cpu_pct),
                (io, io_absent, psi_io, psi_memory),
            )| Job {
                kind,
                id,
                step,
                name,
                user,
                gpus,
                gpu_pids,
                workers,
                rss_bytes,
                cpu_pct,
                // Both ways of counting, from what was drawn.
                cpu_from_cgroup: workers.is_some_and(|w| w % 2 == 0),
                memory_from_cgroup: rss_bytes.is_some_and(|b| b.0 % 2 == 0),
                io,
                io_absent,
                psi_io,
                psi_memory,
            },
        )
}

fn nvml() -> impl Strategy<Value = NvmlStatus> {
    prop_oneof![
        4 => opt(name(&["580.00", "470.256.02"]))
            .prop_map(|driver_version| NvmlStatus::Ok { driver_version }),
        1 => name(&MESSAGES).prop_map(|message| NvmlStatus::NoDriver { message }),
        1 => name(&MESSAGES).prop_map(|message| NvmlStatus::Error { message }),
    ]
}

fn source_error() -> impl Strategy<Value = SourceError> {
    (one_of(), opt(name(&ITEMS)), name(&MESSAGES)).prop_map(|(source, item, message)| SourceError {
        source,
        item,
        message,
    })
}

fn source_cost() -> impl Strategy<Value = SourceCost> {
    (one_of(), int(0..100_000)).prop_map(|(source, micros)| SourceCost { source, micros })
}

/// One frame, every field drawn. With `renumber`, GPUs are indexed 0, 1, ... as NVML lists them;
/// without, indexes repeat or skip.
pub fn frame(f: Floats) -> impl Strategy<Value = Frame> {
    (
        (
            int(0..1_000_000),
            int(T0_MS..T0_MS + 1_000_000),
            name(&HOSTS),
            int(0..10_000),
            nvml(),
        ),
        (
            vec(gpu(f), 0..=4),
            any::<bool>(),
            vec(mount(), 0..=4),
            vec(block_device(f), 0..=4),
            opt(system(f)),
        ),
        (
            vec(source_error(), 0..3),
            vec(source_cost(), 0..5),
            vec(job(f), 0..=2),
        ),
    )
        .prop_map(
            |(
                (seq, t_ms, host, interval_ms, nvml),
                (mut gpus, renumber, mounts, block_devices, system),
                (errors, cost, jobs),
            )| {
                if renumber {
                    for (i, g) in (0u32..).zip(gpus.iter_mut()) {
                        g.index = i;
                    }
                }
                Frame {
                    seq,
                    t_ms,
                    host,
                    interval_ms,
                    nvml,
                    gpus,
                    mounts,
                    block_devices,
                    system,
                    jobs,
                    errors,
                    cost,
                }
            },
        )
}

/// How a window's frames are timed.
#[derive(Clone, Debug)]
enum Clock {
    /// `t0 + k * interval`, seq `k`, saturating at the top.
    Steady { t0: u64, interval: u64 },
    /// As drawn: repeats, backwards steps, any interval.
    Drawn,
}

fn clock() -> impl Strategy<Value = Clock> {
    prop_oneof![
        4 => (
            int(T0_MS..T0_MS + 1_000_000),
            prop_oneof![
                4 => Just(1000u64),
                1 => proptest::sample::select(&[0u64, 1, 250, 60_000, u64::MAX][..]),
            ],
        )
            .prop_map(|(t0, interval)| Clock::Steady { t0, interval }),
        1 => Just(Clock::Drawn),
    ]
}

/// Adds `k * step` (saturating) to every cumulative or growing figure of frame `k` and takes it
/// from what shrinks as they grow, so trends (time to OOM, to a full disk, swap growth) are fitted.
fn ramp(frames: &mut [Frame], step: u64) {
    for (k, f) in (0u64..).zip(frames.iter_mut()) {
        let d = step.saturating_mul(k);
        let up = |b: &mut Bytes| b.0 = b.0.saturating_add(d);
        let down = |b: &mut Bytes| b.0 = b.0.saturating_sub(d);
        for m in f.gpus.iter_mut().filter_map(|g| g.memory.as_mut()) {
            up(&mut m.used_bytes);
            down(&mut m.free_bytes);
        }
        for m in &mut f.mounts {
            m.used_bytes.iter_mut().for_each(up);
            m.available_bytes.iter_mut().for_each(down);
        }
        for b in &mut f.block_devices {
            b.read_bytes_total.iter_mut().for_each(up);
            b.write_bytes_total.iter_mut().for_each(up);
            if let Some(c) = &mut b.counters {
                for v in [
                    &mut c.reads_completed_total,
                    &mut c.writes_completed_total,
                    &mut c.io_time_ms_total,
                    &mut c.weighted_io_time_ms_total,
                ] {
                    *v = v.saturating_add(d);
                }
            }
        }
        if let Some(s) = &mut f.system {
            s.swap_used_bytes.iter_mut().for_each(up);
            s.mem_available_bytes.iter_mut().for_each(down);
        }
    }
}

/// A window as `diagnose` takes it: up to `max_len` frames, each a copy of one of a few drawn
/// frames (so conditions hold over N of M samples), timed by a clock (steady, or as drawn with
/// repeats and backward steps), with a few times overwritten (jumps either way) and sometimes a
/// ramp on every growing figure.
pub fn window(max_len: usize) -> impl Strategy<Value = Vec<Frame>> {
    (
        vec(frame(Floats::Any), 1..=4),
        vec(0usize..4, 0..=max_len),
        clock(),
        vec((any::<prop::sample::Index>(), int(0..u64::MAX)), 0..3),
        opt(int(0..GIB)),
    )
        .prop_map(|(templates, picks, clock, jumps, step)| {
            let mut frames: Vec<Frame> = picks
                .iter()
                .map(|&i| templates[i % templates.len()].clone())
                .collect();
            if let Clock::Steady { t0, interval } = clock {
                for (k, f) in (0u64..).zip(frames.iter_mut()) {
                    f.seq = k;
                    f.t_ms = t0.saturating_add(interval.saturating_mul(k));
                    f.interval_ms = interval;
                }
            }
            if !frames.is_empty() {
                for (at, t_ms) in jumps {
                    let n = frames.len();
                    frames[at.index(n)].t_ms = t_ms;
                }
            }
            if let Some(step) = step {
                ramp(&mut frames, step);
            }
            frames
        })
}
