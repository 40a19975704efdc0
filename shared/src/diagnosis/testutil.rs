//! Frame builders for the diagnosis tests: a healthy baseline host and closures that bend it into
//! each scenario.

use crate::frame::{
    BlockDevice, Frame, Gpu, GpuMemory, GpuProcess, GpuState, Mount, MountKind, Presence, Psi,
    SystemStats,
};
use crate::units::{Bytes, BytesPerSec, Percent};

pub const MIB: u64 = 1024 * 1024;
pub const GIB: u64 = 1024 * MIB;
pub const T0_MS: u64 = 1_700_000_000_000;

/// A GPU of `total_gib` using `used_pct`% with one named process holding all but 1 GiB.
pub fn gpu(index: u32, total_gib: u64, used_pct: f64, util: f64) -> Gpu {
    let total = total_gib * GIB;
    let used = (total as f64 * used_pct / 100.0) as u64;
    Gpu {
        index,
        uuid: Some(format!("GPU-{index}")),
        name: Some("NVIDIA H100 80GB HBM3".to_owned()),
        state: GpuState::Ok,
        memory: Some(GpuMemory {
            total_bytes: Bytes(total),
            used_bytes: Bytes(used),
            reserved_bytes: Some(Bytes(0)),
            free_bytes: Bytes(total - used),
        }),
        utilization_gpu_pct: Some(Percent(util)),
        utilization_memory_pct: Some(Percent(util / 2.0)),
        temperature_c: Some(60.0),
        power_w: Some(400.0),
        power_limit_w: Some(700.0),
        processes: Some(vec![proc_(4242, Some("python"), used.saturating_sub(GIB))]),
        processes_t_ms: None,
        nvml_api: None,
        mig: Vec::new(),
    }
}

/// A process holding `used` bytes: visible with `name`, or exited (an orphan) without one.
pub fn proc_(pid: u32, name: Option<&str>, used: u64) -> GpuProcess {
    GpuProcess {
        pid,
        presence: if name.is_some() {
            Presence::Visible
        } else {
            Presence::Exited
        },
        name: name.map(str::to_owned),
        user: None,
        used_bytes: Some(Bytes(used)),
        mig: None,
    }
}

/// Sets used memory in MiB (keeping the process list consistent).
pub fn set_used_mib(g: &mut Gpu, used_mib: u64) {
    if let Some(m) = &mut g.memory {
        m.used_bytes = Bytes(used_mib * MIB);
        m.free_bytes = Bytes(m.total_bytes.0.saturating_sub(used_mib * MIB));
    }
    g.processes = Some(vec![proc_(
        4242,
        Some("python"),
        (used_mib * MIB).saturating_sub(GIB),
    )]);
}

pub fn mount(mount_point: &str, device: &str, total: u64, used: u64) -> Mount {
    Mount {
        mount_point: mount_point.to_owned(),
        device: device.to_owned(),
        fs_type: Some("ext4".to_owned()),
        kind: MountKind::LocalNvme,
        total_bytes: Some(Bytes(total)),
        used_bytes: Some(Bytes(used)),
        available_bytes: Some(Bytes(total - used)),
        inodes_total: Some(1_000_000),
        inodes_used: Some(100_000),
        read_only: Some(false),
    }
}

pub fn disk(name: &str, read_mib: f64, write_mib: f64, r_await: f64, queue: f64) -> BlockDevice {
    BlockDevice {
        name: name.to_owned(),
        rotational: Some(false),
        partitions: Vec::new(),
        read_bytes_total: Some(Bytes(0)),
        write_bytes_total: Some(Bytes(0)),
        read_bytes_per_sec: Some(BytesPerSec(read_mib * MIB as f64)),
        write_bytes_per_sec: Some(BytesPerSec(write_mib * MIB as f64)),
        read_iops: Some(100.0),
        write_iops: Some(10.0),
        util_pct: Some(Percent(20.0)),
        r_await_ms: Some(r_await),
        w_await_ms: Some(0.1),
        avg_queue_size: Some(queue),
        counters: None,
    }
}

pub fn system(cpu: f64, mem_available_pct: f64) -> SystemStats {
    let total = 256 * GIB;
    SystemStats {
        cpu_count: Some(32),
        cpu_pct: Some(Percent(cpu)),
        iowait_pct: Some(Percent(1.0)),
        mem_total_bytes: Some(Bytes(total)),
        mem_available_bytes: Some(Bytes((total as f64 * mem_available_pct / 100.0) as u64)),
        page_cache_bytes: Some(Bytes(10 * GIB)),
        dirty_bytes: Some(Bytes(0)),
        writeback_bytes: Some(Bytes(0)),
        swap_total_bytes: Some(Bytes(0)),
        swap_used_bytes: Some(Bytes(0)),
        psi_io: Some(Psi {
            some_avg10: Percent(0.5),
            full_avg10: Some(Percent(0.1)),
            some_total_us: None,
        }),
        psi_memory: Some(Psi {
            some_avg10: Percent(0.0),
            full_avg10: Some(Percent(0.0)),
            some_total_us: None,
        }),
    }
}

/// A healthy training host at sample `i`: one GPU at 70% memory and 90% utilization, `/` half
/// full, a 16 GiB `/dev/shm`, an NVMe reading a steady 50 MiB/s with no queue, CPUs 40% busy.
pub fn healthy(i: u64) -> Frame {
    let mut f = Frame::empty("node1", i, T0_MS + i * 1000, 1000);
    f.gpus = vec![gpu(0, 80, 70.0, 90.0)];
    f.mounts = vec![
        mount("/", "/dev/nvme0n1p2", 1000 * GIB, 500 * GIB),
        mount("/dev/shm", "tmpfs", 16 * GIB, 100 * MIB),
    ];
    f.mounts[1].kind = MountKind::Tmpfs;
    f.mounts[1].fs_type = Some("tmpfs".to_owned());
    f.block_devices = vec![disk("nvme0n1", 50.0, 5.0, 0.2, 0.1)];
    f.system = Some(system(40.0, 78.0));
    f
}

/// `n` healthy frames, each bent by `edit(i, frame)`.
pub fn window(n: u64, edit: impl Fn(u64, &mut Frame)) -> Vec<Frame> {
    (0..n)
        .map(|i| {
            let mut f = healthy(i);
            edit(i, &mut f);
            f
        })
        .collect()
}
