//! The jobs source on a `/proc` tree written by the test (identity per pid and start time, the
//! GPU part, sorting), and its pure helpers. Real processes and real cgroups are in
//! `backend/tests/jobs.rs`.

use super::gpu_part::job_gpus;
use super::*;
use shared::{BytesPerSec, GpuMemory, GpuProcess, GpuState, IoCounter, Percent};
use std::fs;

/// A `/proc/<pid>/stat` line: `comm`, parent, start time, utime and stime, resident pages.
fn stat_line(pid: u32, comm: &str, ppid: u32, start: u64, cpu: u64, rss: u64) -> String {
    let mut f: Vec<String> = vec![pid.to_string(), format!("({comm})"), "S".into()];
    f.push(ppid.to_string());
    f.extend(["1", "1", "0", "-1", "4194304", "0", "0", "0", "0"].map(String::from));
    f.push(cpu.to_string()); // utime
    f.push("0".into()); // stime
    f.extend(["0", "0", "20", "0", "1", "0"].map(String::from));
    f.push(start.to_string()); // starttime (22)
    f.push("1000000".into()); // vsize
    f.push(rss.to_string()); // rss (24)
    while f.len() < 52 {
        f.push("0".into());
    }
    f.join(" ") + "\n"
}

/// A `/proc` tree in a folder of its own, removed on drop.
struct FakeProc(Dir);

struct Dir(PathBuf);

impl Dir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

impl FakeProc {
    fn new() -> Self {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("vramio-jobs-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("mkdir");
        FakeProc(Dir(dir))
    }

    fn process(&self, pid: u32, comm: &str, ppid: u32, start: u64, cgroup: &str) {
        let dir = self.0.path().join(pid.to_string());
        fs::create_dir_all(dir.join("task")).expect("mkdir");
        fs::write(dir.join("stat"), stat_line(pid, comm, ppid, start, 100, 50)).expect("stat");
        fs::write(dir.join("cgroup"), cgroup).expect("cgroup");
        fs::write(dir.join("cmdline"), format!("{comm}\0train.py\0")).expect("cmdline");
        fs::write(
            dir.join("io"),
            "rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 0\n",
        )
        .expect("io");
    }

    fn jobs(&self) -> ProcJobs {
        ProcJobs::new(self.0.path().to_owned(), None).with_period(Duration::ZERO)
    }
}

fn gpu(index: u32, util: f64, processes: &[(u32, Option<u64>)]) -> Gpu {
    let mut g = Gpu::unread(index, Some(format!("GPU-{index}")), None, GpuState::Ok);
    g.utilization_gpu_pct = Some(Percent(util));
    g.memory = Some(GpuMemory {
        total_bytes: Bytes(1000),
        used_bytes: Bytes(500),
        reserved_bytes: None,
        free_bytes: Bytes(500),
    });
    g.processes = Some(
        processes
            .iter()
            .map(|&(pid, used)| GpuProcess {
                pid,
                presence: Presence::Visible,
                name: None,
                user: Some("ana".into()),
                used_bytes: used.map(Bytes),
                mig: None,
            })
            .collect(),
    );
    g
}

#[test]
fn a_reused_pid_is_a_new_job_and_a_known_one_keeps_its_identity() {
    let proc = FakeProc::new();
    proc.process(
        77,
        "python",
        1,
        1000,
        "0::/system.slice/slurmstepd.scope/job_1/step_0\n",
    );
    let mut jobs = proc.jobs();
    let gpus = [gpu(0, 50.0, &[(77, Some(100))])];
    let first = jobs.sample(&gpus);
    assert_eq!((first[0].kind, first[0].id.as_str()), (JobKind::Slurm, "1"));
    // The same process (same start) is not looked up again: its cgroup is read once.
    fs::write(
        proc.0.path().join("77/cgroup"),
        "0::/system.slice/slurmstepd.scope/job_9/step_0\n",
    )
    .expect("cgroup");
    assert_eq!(jobs.sample(&gpus)[0].id, "1");
    // Pid 77 again, started later: another process, another job.
    proc.process(
        77,
        "python",
        1,
        2000,
        "0::/system.slice/slurmstepd.scope/job_2/step_0\n",
    );
    let reused = jobs.sample(&gpus);
    assert_eq!(reused.len(), 1);
    assert_eq!(reused[0].id, "2");
}

#[test]
fn processes_without_a_cgroup_job_group_by_their_tree() {
    let proc = FakeProc::new();
    proc.process(
        10,
        "bash",
        1,
        5,
        "0::/user.slice/user-1000.slice/session-1.scope\n",
    );
    proc.process(
        20,
        "torchrun",
        10,
        6,
        "0::/user.slice/user-1000.slice/session-1.scope\n",
    );
    proc.process(
        21,
        "python",
        20,
        7,
        "0::/user.slice/user-1000.slice/session-1.scope\n",
    );
    proc.process(
        22,
        "python",
        20,
        7,
        "0::/user.slice/user-1000.slice/session-1.scope\n",
    );
    let mut jobs = proc.jobs();
    let found = jobs.sample(&[
        gpu(0, 40.0, &[(21, Some(300))]),
        gpu(1, 60.0, &[(22, Some(200))]),
    ]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let job = &found[0];
    assert_eq!((job.kind, job.id.as_str()), (JobKind::Process, "20"));
    assert_eq!(
        job.name.as_deref(),
        Some("torchrun"),
        "comm, never the command line"
    );
    assert_eq!(job.gpu_pids, vec![21, 22]);
    assert_eq!(job.user.as_deref(), Some("ana"));
    assert_eq!(job.gpu_memory(), Some(Bytes(500)));
    // Alone on each GPU: the device's utilization is the job's.
    let util: Vec<_> = job.gpus.iter().map(|g| g.utilization_pct).collect();
    assert_eq!(util, vec![Some(Percent(40.0)), Some(Percent(60.0))]);
    assert_eq!(job.gpus[0].memory_share_pct, Some(Percent(30.0)));
    // A fake /proc has no children files: torchrun is the only other process found.
    assert_eq!(job.workers, Some(1));
    assert_eq!(job.rss_bytes, Some(Bytes(3 * 50 * procfs::page_size())));
    // One reading so far: the I/O is known to be readable, its rates are not yet.
    let io = job.io.as_ref().expect("readable counters");
    assert_eq!(io.counter, IoCounter::ProcIo);
    assert_eq!(io.read_bytes_per_sec, None);
    assert_eq!(job.cpu_pct, None);
    // A second reading gives rates: the counters did not move.
    let again = jobs.sample(&[
        gpu(0, 40.0, &[(21, Some(300))]),
        gpu(1, 60.0, &[(22, Some(200))]),
    ]);
    let io = again[0].io.as_ref().expect("readable counters");
    assert_eq!(io.read_bytes_per_sec, Some(BytesPerSec(0.0)));
    assert_eq!(again[0].cpu_pct, Some(Percent(0.0)));
}

#[test]
fn a_shared_gpu_gives_no_job_its_utilization_and_jobs_sort_by_memory() {
    let proc = FakeProc::new();
    proc.process(31, "a", 1, 5, "0::/system.slice/alpha.service\n");
    proc.process(32, "b", 1, 5, "0::/system.slice/beta.service\n");
    let mut jobs = proc.jobs();
    let found = jobs.sample(&[gpu(0, 90.0, &[(31, Some(100)), (32, Some(700))])]);
    let ids: Vec<_> = found.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["beta.service", "alpha.service"]);
    assert!(found.iter().all(|j| j.gpus[0].utilization_pct.is_none()));
    // A process NVML knows no memory for: the job's figure is absent, not 0.
    let unknown = jobs.sample(&[gpu(0, 90.0, &[(31, None)])]);
    assert_eq!(unknown[0].gpus[0].memory_used_bytes, None);
    assert_eq!(unknown[0].gpu_memory(), None);
}

#[test]
fn processes_nvml_lists_but_this_proc_cannot_show_make_no_job() {
    let proc = FakeProc::new();
    let mut g = gpu(0, 10.0, &[(99, Some(1))]);
    let mut jobs = proc.jobs();
    assert!(
        jobs.sample(std::slice::from_ref(&g)).is_empty(),
        "pid 99 is not in this /proc"
    );
    if let Some(p) = g.processes.as_mut() {
        p[0].presence = Presence::NotVisible;
    }
    assert!(jobs.sample(&[g]).is_empty());
}

#[test]
fn finds_the_cgroup2_mount_on_unified_and_hybrid_hosts() {
    let hybrid = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";
    assert_eq!(
        parse_cgroup2_mount(hybrid),
        Some(PathBuf::from("/sys/fs/cgroup/unified"))
    );
    assert_eq!(
        parse_cgroup2_mount("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n"),
        Some(PathBuf::from("/sys/fs/cgroup"))
    );
    assert_eq!(
        parse_cgroup2_mount("cgroup /sys/fs/cgroup/cpu cgroup rw 0 0\n"),
        None
    );
}

/// A Slurm job whose v2 cgroup has `io.stat`: its I/O is the cgroup's, per device by name, with
/// IOPS; the totals leave out a device-mapper device that its disk counts again; where the file
/// is not (no `io` controller), the processes' `/proc/<pid>/io` sums stand.
#[test]
fn a_cgroup_with_io_stat_gives_the_jobs_io_per_device() {
    let proc = FakeProc::new();
    let root = proc.0.path();
    // The job's own cgroup (its steps are below it): where its io.stat is read.
    let job_dir = "system.slice/slurmstepd.scope/job_5";
    proc.process(90, "python", 1, 1000, &format!("0::/{job_dir}/step_0\n"));
    let cg = root.join("cgroup2");
    fs::create_dir_all(cg.join(job_dir)).expect("mkdir");
    let sys = root.join("sys");
    fs::create_dir_all(sys.join("dev/block")).expect("mkdir");
    std::os::unix::fs::symlink("../../devices/virtual/nvme1n1", sys.join("dev/block/259:1"))
        .expect("link");
    std::os::unix::fs::symlink(
        "../../devices/virtual/block/dm-0",
        sys.join("dev/block/253:0"),
    )
    .expect("link");
    let write_stat = |r: u64, w: u64, ios: u64| {
        fs::write(
            cg.join(job_dir).join("io.stat"),
            format!(
                "259:1 rbytes={r} wbytes={w} rios={ios} wios=1 dbytes=0 dios=0\n\
                 253:0 rbytes={r} wbytes={w} rios={ios} wios=1 dbytes=0 dios=0\n"
            ),
        )
        .expect("io.stat")
    };
    write_stat(0, 0, 0);
    let mut jobs = ProcJobs::new(root.to_owned(), Some(cg.clone()))
        .with_sys(sys)
        .with_period(Duration::ZERO);
    let gpus = [gpu(0, 50.0, &[(90, Some(100))])];
    let first = jobs.sample(&gpus);
    let io = first[0].io.as_ref().expect("io");
    assert_eq!(io.counter, IoCounter::CgroupIoStat);
    assert_eq!(io.read_bytes_per_sec, None, "a rate needs two readings");
    std::thread::sleep(Duration::from_millis(200));
    write_stat(100 << 20, 10 << 20, 800);
    let second = jobs.sample(&gpus);
    let io = second[0].io.as_ref().expect("io");
    let names: Vec<&str> = io.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["dm-0", "nvme1n1"]);
    let read = io.read_bytes_per_sec.expect("a read rate").0;
    let nvme = &io.devices[1];
    assert_eq!(read, nvme.read_bytes_per_sec.0, "dm-0 is not counted twice");
    // 100 MiB over about 0.2 s.
    assert!(
        read > 100.0 * 1024.0 * 1024.0 && read < 600.0 * 1024.0 * 1024.0,
        "{read}"
    );
    assert!(nvme.read_iops.is_some_and(|r| r > 800.0));
    assert_eq!(io.read_iops, nvme.read_iops);
    assert_eq!(second[0].io_absent, None);
    // No io.stat (the controller is off there): the processes' counters.
    fs::remove_file(cg.join(job_dir).join("io.stat")).expect("rm");
    let third = jobs.sample(&gpus);
    assert_eq!(
        third[0].io.as_ref().map(|io| io.counter),
        Some(IoCounter::ProcIo)
    );
}

/// With dcgm-exporter's mapping files, a process no cgroup names is the job its GPU's file names;
/// one on a GPU whose file names two jobs stays a process tree, and a cgroup job keeps its own.
#[test]
fn mapping_files_name_the_jobs_no_cgroup_names() {
    let proc = FakeProc::new();
    let root = proc.0.path();
    proc.process(
        40,
        "python",
        1,
        1000,
        "0::/user.slice/user-1000.slice/session-3.scope\n",
    );
    proc.process(
        41,
        "python",
        1,
        1001,
        "0::/user.slice/user-1000.slice/session-3.scope\n",
    );
    proc.process(
        42,
        "python",
        1,
        1002,
        "0::/system.slice/slurmstepd.scope/job_9/step_0\n",
    );
    let map = root.join("job-map");
    fs::create_dir_all(&map).expect("mkdir");
    fs::write(map.join("0"), "4412\n").expect("write");
    fs::write(map.join("1"), "1\n2\n").expect("write");
    fs::write(map.join("2"), "5555\n").expect("write");
    let mut jobs = proc.jobs().with_job_map(Some(map));
    let found = jobs.sample(&[
        gpu(0, 50.0, &[(40, Some(300))]),
        gpu(1, 50.0, &[(41, Some(200))]),
        gpu(2, 50.0, &[(42, Some(100))]),
    ]);
    let ids: Vec<(JobKind, &str)> = found.iter().map(|j| (j.kind, j.id.as_str())).collect();
    assert_eq!(
        ids,
        [
            (JobKind::Hpc, "4412"),
            (JobKind::Process, "41"),
            (JobKind::Slurm, "9")
        ]
    );
    assert_eq!(found[0].label(), "hpc 4412 (python)");
}

#[test]
fn a_job_has_a_part_per_mig_instance_with_that_instances_share_and_utilization() {
    use shared::{MigInstance, MigSlot};
    let slot = |gi| MigSlot {
        gpu_instance_id: gi,
        compute_instance_id: 0,
    };
    let mut g = gpu(
        0,
        70.0,
        &[(1, Some(100)), (2, Some(50)), (3, Some(20)), (4, Some(5))],
    );
    let procs = g.processes.as_mut().expect("processes");
    // 1 and 2 on instance 1 (one job), 3 alone on instance 2 (the same job), 4 without its ids.
    procs[0].mig = Some(slot(1));
    procs[1].mig = Some(slot(1));
    procs[2].mig = Some(slot(2));
    let instance = |index, gi, total, util: Option<f64>| MigInstance {
        index,
        slot: Some(slot(gi)),
        uuid: None,
        memory: Some(GpuMemory {
            total_bytes: Bytes(total),
            used_bytes: Bytes(0),
            reserved_bytes: None,
            free_bytes: Bytes(total),
        }),
        utilization_gpu_pct: util.map(Percent),
    };
    g.mig = vec![
        instance(0, 1, 200, Some(40.0)),
        instance(1, 2, 100, Some(10.0)),
    ];
    let parts = job_gpus(&g, &BTreeSet::from([1, 2, 3]));
    assert_eq!(parts.len(), 2, "{parts:?}");
    let one = &parts[0];
    assert_eq!(one.mig, Some(slot(1)));
    assert_eq!(one.memory_used_bytes, Some(Bytes(150)));
    assert_eq!(
        one.memory_share_pct,
        Some(Percent(75.0)),
        "of the instance's 200"
    );
    assert_eq!(
        one.utilization_pct,
        Some(Percent(40.0)),
        "alone on its instance"
    );
    let two = &parts[1];
    assert_eq!(two.mig, Some(slot(2)));
    assert_eq!(two.memory_share_pct, Some(Percent(20.0)));
    assert_eq!(two.utilization_pct, Some(Percent(10.0)));
    // Sharing instance 1 with another job: the instance's utilization is not its own.
    let shared = job_gpus(&g, &BTreeSet::from([1]));
    assert_eq!(shared[0].utilization_pct, None);
    // A process without its ids on a GPU in MIG mode: its pool is unknown, and so is the GPU's
    // utilization as its own.
    let lost = job_gpus(&g, &BTreeSet::from([4]));
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].mig, None);
    assert_eq!(lost[0].memory_used_bytes, Some(Bytes(5)));
    assert_eq!(lost[0].memory_share_pct, None);
    assert_eq!(lost[0].utilization_pct, None);
    // An instance no longer laid out: its part has no share or utilization.
    g.mig.truncate(1);
    let gone = job_gpus(&g, &BTreeSet::from([3]));
    assert_eq!(
        (gone[0].memory_share_pct, gone[0].utilization_pct),
        (None, None)
    );
}

#[test]
fn a_cgroup_job_is_counted_by_its_cgroup_files_and_a_reset_counter_gives_no_rate() {
    let proc = FakeProc::new();
    let cg2 = proc.0.path().join("cg2");
    let job = cg2.join("system.slice/slurmstepd.scope/job_5");
    fs::create_dir_all(job.join("step_0")).expect("mkdir");
    let slurm = "0::/system.slice/slurmstepd.scope/job_5/step_0\n";
    proc.process(77, "python", 1, 1000, slurm);
    proc.process(78, "pt_data_worker", 77, 1001, slurm);
    // Another job's GPU process in a cgroup nested in this one's: not this job's worker.
    proc.process(
        79,
        "python",
        1,
        1002,
        "0::/user.slice/user-1000.slice/session-1.scope\n",
    );
    fs::write(job.join("cgroup.procs"), "77\n").expect("procs");
    fs::write(job.join("step_0/cgroup.procs"), "78\n79\n").expect("procs");
    fs::write(job.join("cpu.stat"), "usage_usec 1000000\nuser_usec 1\n").expect("cpu");
    fs::write(job.join("memory.stat"), "anon 40960\nfile_mapped 4096\n").expect("mem");
    let mut jobs = ProcJobs::new(proc.0.path().to_owned(), Some(cg2)).with_period(Duration::ZERO);
    let gpus = [gpu(0, 50.0, &[(77, Some(100)), (79, Some(100))])];
    let slurm_job = |found: Vec<Job>| {
        found
            .into_iter()
            .find(|j| j.kind == JobKind::Slurm)
            .expect("the Slurm job")
    };
    let first = slurm_job(jobs.sample(&gpus));
    assert_eq!(first.workers, Some(1), "{first:#?}");
    assert_eq!(first.rss_bytes, Some(Bytes(45_056)), "anon + file_mapped");
    assert!(first.memory_from_cgroup);
    assert_eq!(first.cpu_pct, None, "one reading");
    assert!(!first.cpu_from_cgroup, "no figure yet");
    std::thread::sleep(Duration::from_millis(20));
    fs::write(job.join("cpu.stat"), "usage_usec 1010000\n").expect("cpu");
    let second = slurm_job(jobs.sample(&gpus));
    assert!(second.cpu_from_cgroup);
    let cpu = second.cpu_pct.expect("a rate").0;
    assert!(
        cpu > 0.0 && cpu <= 10_000.0 / 20.0 * 1.0,
        "10 ms of CPU in over 20 ms: {cpu}%"
    );
    // The cgroup made again: its counter starts over, and is no rate.
    fs::write(job.join("cpu.stat"), "usage_usec 5\n").expect("cpu");
    let third = slurm_job(jobs.sample(&gpus));
    assert_eq!(third.cpu_pct, None, "{third:#?}");
    assert!(!third.cpu_from_cgroup);
}

#[test]
fn a_kernel_without_per_task_io_files_keeps_the_processes() {
    let proc = FakeProc::new();
    let session = "0::/user.slice/user-1000.slice/session-1.scope\n";
    proc.process(20, "torchrun", 1, 5, session);
    proc.process(21, "python", 20, 7, session);
    for pid in [20, 21] {
        fs::remove_file(proc.0.path().join(format!("{pid}/io"))).expect("rm io");
    }
    let mut jobs = proc.jobs();
    let gpus = [gpu(0, 40.0, &[(21, Some(300))])];
    for _ in 0..2 {
        let found = jobs.sample(&gpus);
        let job = &found[0];
        assert_eq!(job.workers, Some(1), "{job:#?}");
        assert!(job.rss_bytes.is_some(), "still read: {job:#?}");
        assert_eq!(job.io, None);
    }
}

/// A job summed from its processes' `io`: a worker that exited and was waited for is counted
/// again in its parent's counters (the kernel adds it there), so what was last read of it is
/// taken off; a process born since the last measurement counts whole; an older one seen for
/// the first time counts nothing (its bytes are not this interval's).
#[test]
fn a_reaped_worker_is_not_counted_twice_and_a_newborn_counts_whole() {
    let proc = FakeProc::new();
    let root = proc.0.path();
    let job_dir = "system.slice/slurmstepd.scope/job_6";
    let cgroup = format!("0::/{job_dir}/step_0\n");
    let cg = root.join("cgroup2");
    let step = cg.join(job_dir).join("step_0");
    fs::create_dir_all(&step).expect("mkdir");
    fs::write(cg.join(job_dir).join("cgroup.procs"), "").expect("procs");
    let io = |pid: u32, read: u64| {
        fs::write(
            root.join(pid.to_string()).join("io"),
            format!("rchar: 0\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: {read}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"),
        )
        .expect("io")
    };
    let uptime =
        |secs: u64| fs::write(root.join("uptime"), format!("{secs}.00 1.00\n")).expect("uptime");
    let tps = procfs::ticks_per_second();
    proc.process(90, "python", 1, 10 * tps, &cgroup);
    proc.process(91, "pt_data_worker", 90, 10 * tps + 1, &cgroup);
    io(90, 1000);
    io(91, 500);
    fs::write(step.join("cgroup.procs"), "90\n91\n").expect("procs");
    uptime(20);
    let mut jobs = ProcJobs::new(root.to_owned(), Some(cg.clone())).with_period(Duration::ZERO);
    let gpus = [gpu(0, 50.0, &[(90, Some(100))])];
    let a = Instant::now();
    let first = jobs.sample(&gpus);
    let b = Instant::now();
    assert_eq!(
        first[0].io.as_ref().and_then(|i| i.read_bytes_per_sec),
        None
    );
    std::thread::sleep(Duration::from_millis(200));
    // 91 exited and was waited for: 90 now counts its 500 B, its last 100 B and 50 B of its own.
    fs::remove_dir_all(root.join("91")).expect("rm");
    io(90, 1000 + 500 + 100 + 50);
    // 92 was born since (after 20 s of uptime); 93 is older, first seen now.
    proc.process(92, "pt_data_worker", 90, 25 * tps, &cgroup);
    io(92, 300);
    proc.process(93, "sh", 1, 15 * tps, &cgroup);
    io(93, 10_000);
    fs::write(step.join("cgroup.procs"), "90\n92\n93\n").expect("procs");
    uptime(30);
    let c = Instant::now();
    let second = jobs.sample(&gpus);
    let d = Instant::now();
    let rate = second[0]
        .io
        .as_ref()
        .and_then(|i| i.read_bytes_per_sec)
        .expect("a read rate")
        .0;
    // 90's 650 B, less 91's 500 B it holds again, plus 92's 300 B: 450 B over the interval.
    let (low, high) = (450.0 / (d - a).as_secs_f64(), 450.0 / (c - b).as_secs_f64());
    assert!(
        rate >= low && rate <= high,
        "{rate} B/s not in {low}..{high}"
    );
}

/// A cgroup job's folders are walked again when a step ends and another begins, though
/// `cgroup.stat` counts as many folders below it as before.
#[test]
fn a_new_step_with_as_many_folders_is_walked() {
    let proc = FakeProc::new();
    let root = proc.0.path();
    let job_dir = "system.slice/slurmstepd.scope/job_8";
    let cg = root.join("cgroup2");
    let job = cg.join(job_dir);
    fs::create_dir_all(job.join("step_0")).expect("mkdir");
    fs::write(job.join("cgroup.procs"), "").expect("procs");
    fs::write(
        job.join("cgroup.stat"),
        "nr_descendants 1\nnr_dying_descendants 0\n",
    )
    .expect("stat");
    fs::write(job.join("step_0/cgroup.procs"), "90\n91\n").expect("procs");
    proc.process(90, "python", 1, 1000, &format!("0::/{job_dir}/step_0\n"));
    proc.process(
        91,
        "pt_data_worker",
        90,
        1001,
        &format!("0::/{job_dir}/step_0\n"),
    );
    let mut jobs = ProcJobs::new(root.to_owned(), Some(cg.clone())).with_period(Duration::ZERO);
    let first = jobs.sample(&[gpu(0, 50.0, &[(90, Some(100))])]);
    assert_eq!((first[0].id.as_str(), first[0].workers), ("8", Some(1)));
    // step_0 ended, step_1 began: still one folder below the job's.
    fs::remove_dir_all(job.join("step_0")).expect("rm");
    fs::create_dir_all(job.join("step_1")).expect("mkdir");
    fs::write(job.join("step_1/cgroup.procs"), "95\n96\n97\n").expect("procs");
    for pid in [95, 96, 97] {
        let comm = if pid == 95 {
            "python"
        } else {
            "pt_data_worker"
        };
        proc.process(pid, comm, 95, 1100, &format!("0::/{job_dir}/step_1\n"));
    }
    let second = jobs.sample(&[gpu(0, 50.0, &[(95, Some(100))])]);
    assert_eq!(second[0].gpu_pids, vec![95]);
    assert_eq!(second[0].workers, Some(2), "step_1's workers are found");
}
