//! What grouping GPU processes into jobs costs the sampler (docs/performance.md#jobs): 8 GPUs, 20
//! GPU processes in 4 jobs, each GPU process with 8 DataLoader-like workers (184 real processes:
//! copies of `sh` and `sleep`), the jobs source called once a second as the sampler calls it, for
//! `VRAMIO_JOBS_SECS` seconds (default 30). Prints the CPU time of the calls per second of wall
//! time, in % of one core, with jobs and without (the same GPUs listing no process), and the
//! median time of a call that measured the processes (the slowest fifth: one call in five
//! measures) and of one that only carried the jobs.
//!
//! `cargo bench -p vramio --bench jobs_cost`

use shared::{Bytes, Gpu, GpuProcess, GpuState, Percent, Presence};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use vramio::collect::sources::jobs::{JobSource, ProcJobs};

const JOBS: usize = 4;
const RANKS_PER_JOB: usize = 5;
const WORKERS_PER_RANK: usize = 8;
const GPUS: u32 = 8;

/// The launchers, killed with their trees.
struct Trees(Vec<Child>, PathBuf);

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
    }
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Starts the jobs and returns the GPU processes (ranks) of each.
fn start(dir: &Path) -> (Trees, Vec<Vec<u32>>) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for name in ["trainer", "rank"] {
        std::fs::copy("/bin/sh", dir.join(name)).expect("copy sh");
    }
    let workers = "sleep 9999 & ".repeat(WORKERS_PER_RANK) + "wait";
    let ranks = format!(r#"for i in $(seq {RANKS_PER_JOB}); do "$0" -c "{workers}" & done; wait"#);
    let mut launchers = Vec::new();
    for _ in 0..JOBS {
        // setsid: a group of its own to kill; sh: a launcher above the job's top, `trainer`.
        let child = Command::new("setsid")
            .arg("sh")
            .arg("-c")
            .arg(format!(
                "'{}' -c '{ranks}' '{}'; true",
                dir.join("trainer").display(),
                dir.join("rank").display()
            ))
            .spawn()
            .expect("setsid");
        launchers.push(child);
    }
    let trees = Trees(launchers, dir.to_owned());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let jobs: Vec<Vec<u32>> = trees
            .0
            .iter()
            .filter_map(|c| children(c.id()).first().copied())
            .map(children)
            .collect();
        let ready = jobs.len() == JOBS
            && jobs.iter().all(|ranks| {
                ranks.len() == RANKS_PER_JOB
                    && ranks.iter().all(|r| children(*r).len() == WORKERS_PER_RANK)
            });
        if ready {
            return (trees, jobs);
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

/// Calls the source once a second for `secs`; returns the CPU per wall second and each call's
/// CPU time.
fn run(gpus: &[Gpu], secs: u64) -> (f64, Vec<Duration>) {
    let mut source = ProcJobs::system();
    let mut calls = Vec::new();
    let start = Instant::now();
    let mut cpu = Duration::ZERO;
    for tick in 0..secs {
        let before = thread_cpu();
        let jobs = source.sample(gpus);
        let took = thread_cpu() - before;
        std::hint::black_box(&jobs);
        cpu += took;
        calls.push(took);
        let next = start + Duration::from_secs(tick + 1);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    (
        cpu.as_secs_f64() / start.elapsed().as_secs_f64() * 100.0,
        calls,
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let secs: u64 = std::env::var("VRAMIO_JOBS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = std::env::temp_dir().join(format!("vramio-jobs-cost-{}", std::process::id()));
    let (_trees, jobs) = start(&dir);
    let processes = jobs.len() * RANKS_PER_JOB * (1 + WORKERS_PER_RANK) + jobs.len();
    println!(
        "jobs_cost: {GPUS} GPUs, {} GPU processes in {} jobs, {processes} processes in all, 1 Hz for {secs} s",
        jobs.iter().map(Vec::len).sum::<usize>(),
        jobs.len()
    );
    let (with_pct, calls) = run(&gpus(&jobs, true), secs);
    // A call every 5 s measures (the slowest ones); the others carry the jobs.
    let mut sorted = calls.clone();
    sorted.sort();
    let measuring = sorted.split_off(sorted.len() - (calls.len() / 5).max(1));
    let found = ProcJobs::system().sample(&gpus(&jobs, true));
    let (without_pct, _) = run(&gpus(&jobs, false), secs.min(10));
    println!("{:<44} {:>10}", "row", "% of a core");
    println!("{:<44} {:>10.4}", "with jobs (4 found)", with_pct);
    println!(
        "{:<44} {:>10.4}",
        "without (no GPU process listed)", without_pct
    );
    println!(
        "a measuring call: median {:?}; a carrying call: median {:?}; jobs found: {}",
        median(measuring),
        median(sorted),
        found.len()
    );
}
