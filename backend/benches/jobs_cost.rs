//! What grouping GPU processes into jobs costs the sampler (docs/performance.md#jobs): 8 GPUs, 20
//! GPU processes in 4 jobs, each GPU process with 8 DataLoader-like workers (184 real processes:
//! copies of `sh` and `sleep`), the jobs source called once a second as the sampler calls it, for
//! `VRAMIO_JOBS_SECS` seconds (default 30) per row. Prints the CPU time of the calls per second
//! of wall time, in % of one core, for each row:
//!
//! - Slurm jobs: each job born in its own `job_N/step_0` cgroup in the v2 hierarchy and in the v1
//!   `memory` and `cpuacct` ones, as Slurm's cgroup plugins make them (needs root; skipped
//!   otherwise);
//!   with 8 workers per GPU process, and with 2 (10 a job, near the issue's "8 loader workers
//!   each" read per job);
//! - process-tree jobs (no cgroup of their own), 8 workers per GPU process, and 2;
//! - without jobs (the same GPUs listing no process);
//!
//! each after the first call, which finds every process's job (printed apart: it is paid once
//! per process), and the median time of a call that measured the processes (the slowest fifth: one call in
//! five measures) and of one that only carried the jobs. `VRAMIO_JOBS_ROW=Slurm` runs only the
//! rows whose label holds `Slurm`.
//!
//! `cargo bench -p vramio --bench jobs_cost`

use shared::{Bytes, Gpu, GpuProcess, GpuState, Percent, Presence};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vramio::collect::sources::jobs::{JobSource, ProcJobs, cgroup2_mount};

const JOBS: usize = 4;
const RANKS_PER_JOB: usize = 5;
const GPUS: u32 = 8;

/// The launchers, killed with their trees, and the cgroups made for them, removed after.
struct Trees(Vec<Child>, PathBuf, Vec<PathBuf>);

impl Drop for Trees {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // Each tree has its own process group (`setsid`): kill it whole.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", c.id())])
                .status();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.1);
        // Deepest first; a killed process may take a moment to leave its cgroup (up to 5 s).
        for dir in self.2.iter().rev() {
            for _ in 0..250 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The cgroup folders of Slurm job `n` in each hierarchy (v2, v1 `memory`, v1 `cpuacct`), made,
/// the deepest last; `None` when not root or a hierarchy is missing.
fn slurm_cgroups(n: usize) -> Option<Vec<PathBuf>> {
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let v2 = cgroup2_mount(Path::new("/proc/self/mounts"))?;
    let job = format!("job_{}{n}", std::process::id());
    let roots = [
        (v2, format!("system.slice/slurmstepd.scope/{job}/step_0")),
        (
            "/sys/fs/cgroup/memory".into(),
            format!("slurm/uid_0/{job}/step_0"),
        ),
        (
            "/sys/fs/cgroup/cpuacct".into(),
            format!("slurm/uid_0/{job}/step_0"),
        ),
    ];
    let mut made = Vec::new();
    for (root, rel) in roots {
        if !root.join("cgroup.procs").exists() {
            return None;
        }
        let mut at = root;
        for part in rel.split('/') {
            at.push(part);
            if !at.exists() {
                std::fs::create_dir(&at).ok()?;
                made.push(at.clone());
            }
        }
    }
    Some(made)
}

/// Starts the jobs (in Slurm cgroups when `slurm`), `workers` per GPU process, and returns the
/// GPU processes (ranks) of each; `None` when the cgroups cannot be made.
fn start(dir: &Path, slurm: bool, workers: usize) -> Option<(Trees, Vec<Vec<u32>>)> {
    std::fs::create_dir_all(dir).expect("mkdir");
    for name in ["trainer", "rank"] {
        std::fs::copy("/bin/sh", dir.join(name)).expect("copy sh");
    }
    let workers = "sleep 9999 & ".repeat(workers) + "wait";
    let ranks = format!(r#"for i in $(seq {RANKS_PER_JOB}); do "$0" -c "{workers}" & done; wait"#);
    let mut trees = Trees(Vec::new(), dir.to_owned(), Vec::new());
    for n in 0..JOBS {
        // setsid: a group of its own to kill; sh: a launcher above the job's top, `trainer`,
        // which starts once the launcher is in its cgroups (`read`), so the job is born there.
        let mut child = Command::new("setsid")
            .arg("sh")
            .arg("-c")
            .arg(format!(
                "read go; '{}' -c '{ranks}' '{}'; true",
                dir.join("trainer").display(),
                dir.join("rank").display()
            ))
            .stdin(Stdio::piped())
            .spawn()
            .expect("setsid");
        if slurm {
            let Some(made) = slurm_cgroups(n) else {
                trees.0.push(child);
                return None;
            };
            // The leaves: each hierarchy's `step_0`.
            for leaf in made.iter().filter(|d| d.ends_with("step_0")) {
                std::fs::write(leaf.join("cgroup.procs"), child.id().to_string()).ok()?;
            }
            trees.2.extend(made);
        }
        writeln!(child.stdin.as_mut().expect("stdin"), "go").expect("go");
        trees.0.push(child);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let per_rank = workers.matches("sleep").count();
    loop {
        // setsid execs sh itself (no fork: a process that leads no group).
        let jobs: Vec<Vec<u32>> = trees
            .0
            .iter()
            .filter_map(|c| children(c.id()).first().copied())
            .map(children)
            .collect();
        let ready = jobs.len() == JOBS
            && jobs.iter().all(|ranks| {
                ranks.len() == RANKS_PER_JOB && ranks.iter().all(|r| children(*r).len() == per_rank)
            });
        if ready {
            return Some((trees, jobs));
        }
        assert!(Instant::now() < deadline, "the process trees did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn gpus(jobs: &[Vec<u32>], listed: bool) -> Vec<Gpu> {
    let mut gpus: Vec<Gpu> = (0..GPUS)
        .map(|i| {
            let mut g = Gpu::unread(i, Some(format!("GPU-{i}")), None, GpuState::Ok);
            g.utilization_gpu_pct = Some(Percent(80.0));
            g.processes = Some(Vec::new());
            g
        })
        .collect();
    if listed {
        for (k, pid) in jobs.iter().flatten().enumerate() {
            if let Some(list) = gpus[k % GPUS as usize].processes.as_mut() {
                list.push(GpuProcess {
                    pid: *pid,
                    presence: Presence::Visible,
                    name: Some("rank".into()),
                    user: Some("root".into()),
                    used_bytes: Some(Bytes(20 << 30)),
                    mig: None,
                });
            }
        }
    }
    gpus
}

/// Thread CPU time (the calls run on this thread).
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Calls the source once a second for `secs`; returns the CPU per wall second after the first
/// call (which finds every process's job once: printed apart, as it is paid once a job), and
/// each call's CPU time.
fn run(gpus: &[Gpu], secs: u64) -> (f64, Vec<Duration>) {
    let mut source = ProcJobs::system();
    let mut calls = Vec::new();
    let start = Instant::now();
    let mut steady_from = start;
    let mut cpu = Duration::ZERO;
    for tick in 0..secs {
        let before = thread_cpu();
        let jobs = source.sample(gpus);
        let took = thread_cpu() - before;
        std::hint::black_box(&jobs);
        if tick == 0 {
            steady_from = Instant::now();
        } else {
            cpu += took;
        }
        calls.push(took);
        let next = start + Duration::from_secs(tick + 1);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    (
        cpu.as_secs_f64() / steady_from.elapsed().as_secs_f64() * 100.0,
        calls,
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// One row: the jobs' cost in % of a core, the measuring and carrying calls' medians, the jobs
/// found and the processes in all.
fn row(label: &str, slurm: bool, workers: usize, secs: u64) {
    // `VRAMIO_JOBS_ROW`: only the rows whose label holds it (to profile one).
    if std::env::var("VRAMIO_JOBS_ROW").is_ok_and(|only| !label.contains(&only)) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("vramio-jobs-cost-{}", std::process::id()));
    let Some((trees, jobs)) = start(&dir, slurm, workers) else {
        println!("{label:<52} (skipped: needs root and the v2, v1 memory and cpuacct hierarchies)");
        return;
    };
    let processes = JOBS * RANKS_PER_JOB * (1 + workers) + JOBS;
    let (pct, mut calls) = run(&gpus(&jobs, true), secs);
    let first = calls.remove(0);
    // A call every 5 s measures (the slowest ones); the others carry the jobs.
    let mut sorted = calls.clone();
    sorted.sort();
    let measuring = sorted.split_off(sorted.len() - (calls.len() / 5).max(1));
    let found = ProcJobs::system().sample(&gpus(&jobs, true));
    println!(
        "{label:<52} {processes:>5} {pct:>10.4} {first:>10.1?} {:>10.1?} {:>10.1?} {:>4}",
        median(measuring),
        median(sorted),
        found.len()
    );
    drop(trees);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let secs: u64 = std::env::var("VRAMIO_JOBS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    println!(
        "jobs_cost: {GPUS} GPUs, {} GPU processes in {JOBS} jobs, 1 Hz for {secs} s a row",
        JOBS * RANKS_PER_JOB
    );
    println!(
        "{:<52} {:>5} {:>10} {:>10} {:>10} {:>10} {:>4}",
        "row", "procs", "% of core", "first", "measuring", "carrying", "jobs"
    );
    row(
        "Slurm jobs (own cgroups), 8 workers per GPU process",
        true,
        8,
        secs,
    );
    row(
        "Slurm jobs (own cgroups), 2 workers per GPU process",
        true,
        2,
        secs,
    );
    row("process trees, 8 workers per GPU process", false, 8, secs);
    row("process trees, 2 workers per GPU process", false, 2, secs);
    let (without, _) = run(&gpus(&[], false), secs.min(10));
    println!(
        "{:<52} {:>5} {without:>10.4}",
        "without (no GPU process listed)", 0
    );
}
