//! Jobs: the GPU processes of this host grouped by what launched them, with their processes'
//! counters (docs/jobs.md).
//!
//! Each GPU process NVML lists is identified once per (pid, start time), so a reused pid is never
//! the old job: by its cgroup ([`cgroup`]: Slurm, a pod, a container, a systemd unit) or else by
//! its process tree ([`tree`]); [`held`] keeps it known between measurements. A cgroup job's
//! processes are those its cgroup's folders list, and its CPU and memory (and I/O, where
//! `io.stat` is there) are its cgroup's ([`cgroup_counters`], [`cgroup_io`]); a process tree's
//! are its GPU processes and everything below them (below the tree's top): DataLoader workers,
//! ranks under `torchrun`. What the cgroup does not count is summed over the processes
//! ([`totals`]): CPU, resident memory and `/proc/<pid>/io` bytes, read through kept files
//! ([`kept`]). All of it is read every [`JOB_PERIOD`], or sooner when the GPU process lists
//! change, and the rates are taken over that time. A cgroup job's processes are listed at every
//! measurement; which processes are below a process tree's GPU processes is looked up again
//! only every [`MEMBERS_PERIOD`] (workers come and go with the job, not every few seconds), or
//! when the lists change. The GPU part of a job (memory per GPU, utilization when it is alone
//! there) is rebuilt every tick from the frame's GPUs ([`gpu_part`]), so it never lags the GPU
//! cards.

pub mod cgroup;
pub mod cgroup_counters;
pub mod cgroup_io;
mod cgroup_reads;
mod gpu_part;
pub mod held;
pub mod job_map;
pub mod kept;
mod members;
pub mod procs;
mod totals;
pub mod tree;

use cgroup_counters::{Files, Mounts, OpenFiles, Walk};
use cgroup_io::{DevNum, DeviceIo};
pub use gpu_part::job_gpu;
use gpu_part::with_gpus;
use held::Held;
use kept::Kept;
use procs::{IoBytes, Proc, Stat, Unread};
use shared::{Bytes, Gpu, Job, JobKind, Presence};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use totals::Totals;

/// How often the jobs' processes are found and their counters read, unless the GPU process lists
/// change sooner. A job's I/O rate over a few seconds serves the diagnosis as well as a
/// per-second one, at a third of the reads.
pub const JOB_PERIOD: Duration = Duration::from_secs(5);
/// How often a job's processes below its GPU processes are looked up again.
pub const MEMBERS_PERIOD: Duration = Duration::from_secs(30);
/// At most this many processes are followed per job (a fork bomb is not a job to list).
pub const MAX_MEMBERS: usize = 4096;
/// What a job whose I/O counters are all unreadable says instead of a figure.
pub const IO_NEEDS_ROOT: &str = "/proc/<pid>/io of another user's processes needs root: run vramio as root to see this job's I/O";

/// Groups GPU processes into jobs. The sampler calls it once per tick, on its own thread.
pub trait JobSource: Send + 'static {
    fn sample(&mut self, gpus: &[Gpu]) -> Vec<Job>;
}

/// A job as last measured, without its GPU part.
#[derive(Clone, Debug)]
struct Measured {
    job: Job,
    gpu_pids: BTreeSet<u32>,
}

/// What is kept of a GPU process between measurements.
#[derive(Clone, Debug)]
struct Facts {
    kind: JobKind,
    id: String,
    /// What tells this job from a same-named one: the cgroup folder that named it, or the tree
    /// top's start time.
    place: String,
    step: Option<String>,
    v2_dir: Option<String>,
    /// The process the job's processes are found below (the tree's top, or the process itself),
    /// by pid and start time: a top whose pid now names another process is not walked.
    root: (u32, u64),
    name: Option<String>,
    /// Its cgroup's own counter files, for a job a cgroup names.
    files: Option<Arc<Files>>,
}

/// A process's counters at its last measurement (those that were read).
#[derive(Clone, Copy, Debug)]
struct Counters {
    at: Instant,
    cpu_ticks: Option<u64>,
    io: Option<IoBytes>,
}

/// Which GPU processes a measurement saw: another list means measuring again.
type Signature = Vec<(u32, u32)>;

/// A job: its kind, its id and what tells it from a same-named one ([`Facts::place`]).
type JobKey = (JobKind, String, String);

/// A job's processes as last looked up (pid and start time), and whether the look-up was whole.
type Members = HashMap<JobKey, (Instant, Vec<(u32, u64)>, bool)>;

/// A job's previous measurement: when (and in clock ticks since boot, where known), and the
/// processes (pid and start time) whose `io` it read.
type IoMembers = (Instant, Option<u64>, Vec<(u32, u64)>);

/// A process of a job: its pid and `stat`.
type Member = (u32, Stat);

/// A job's processes by pid and start time, and whether they are all there.
type Found = (Vec<(u32, u64)>, bool);

/// Jobs from this host's `/proc` and cgroup hierarchies (v2, and v1 `memory`, `cpuacct`).
pub struct ProcJobs {
    proc_root: PathBuf,
    /// Where the cgroup hierarchies are mounted; looked up at the first measurement (on the
    /// sampler's thread, not where the source is made).
    mounts: Option<Mounts>,
    facts: HashMap<(u32, u64), Facts>,
    counters: HashMap<(u32, u64), Counters>,
    last: Option<(Instant, Signature, Vec<Measured>)>,
    /// The processes of each job, and when they were looked up.
    members: Option<Members>,
    /// Their `stat` and `io` files, kept open.
    kept: Kept,
    /// Whether `proc_root` is this host's `/proc` (not a test's tree).
    real_proc: bool,
    /// The GPU processes, held by pidfd: a pid still naming the process identified is known
    /// without reading its `stat` again.
    held: Held,
    /// Where sysfs is (device names).
    sys_root: PathBuf,
    /// Each cgroup job's `io.stat` at its last measurement.
    cgroup_io: HashMap<JobKey, (Instant, BTreeMap<DevNum, DeviceIo>)>,
    /// Each job's previous measurement: when (and in clock ticks since boot, where known), and
    /// the processes whose `io` it read.
    io_members: HashMap<JobKey, IoMembers>,
    /// The folders below each cgroup job's folder, as last walked.
    walks: HashMap<JobKey, Walk>,
    /// Each cgroup job's CPU time (microseconds) at its last measurement, and which file gave it.
    cgroup_cpu: HashMap<JobKey, (Instant, u64, usize)>,
    /// The jobs' cgroup files, kept open.
    open: OpenFiles,
    /// Block device names by number, once found.
    dev_names: HashMap<DevNum, String>,
    /// dcgm-exporter's job-mapping folder (`--job-map-dir`), read at each measurement.
    job_map: Option<PathBuf>,
    /// [`JOB_PERIOD`], shorter in tests.
    period: Duration,
    ticks_per_sec: u64,
    page_size: u64,
}

impl ProcJobs {
    /// This host's: `/proc`, and the cgroup hierarchies wherever they are mounted (found at the
    /// first measurement).
    pub fn system() -> Self {
        let mut jobs = Self::new(PathBuf::from("/proc"), None);
        jobs.mounts = None;
        jobs
    }

    /// The seam tests use: a `/proc` tree and a cgroup v2 mount point (no v1 hierarchy).
    pub fn new(proc_root: PathBuf, cgroup2: Option<PathBuf>) -> Self {
        ProcJobs {
            kept: Kept::new(proc_root.clone()),
            // A test's fake `/proc` has pids no process has: pidfds only on the real one.
            held: Held::new(proc_root == Path::new("/proc"), kept::cap() / 2),
            real_proc: proc_root == Path::new("/proc"),
            sys_root: PathBuf::from("/sys"),
            cgroup_io: HashMap::new(),
            cgroup_cpu: HashMap::new(),
            io_members: HashMap::new(),
            walks: HashMap::new(),
            open: OpenFiles::default(),
            dev_names: HashMap::new(),
            job_map: None,
            proc_root,
            mounts: Some(Mounts {
                v2: cgroup2,
                ..Mounts::default()
            }),
            facts: HashMap::new(),
            counters: HashMap::new(),
            last: None,
            members: None,
            period: JOB_PERIOD,
            ticks_per_sec: procfs::ticks_per_second().max(1),
            page_size: procfs::page_size(),
        }
    }

    /// Names the jobs of processes that no cgroup names from dcgm-exporter's job-mapping files
    /// in `dir` ([`job_map`]).
    pub fn with_job_map(mut self, dir: Option<PathBuf>) -> Self {
        self.job_map = dir;
        self
    }

    /// Names block devices from `sys` instead of `/sys` (tests).
    pub fn with_sys(mut self, sys: PathBuf) -> Self {
        self.sys_root = sys;
        self
    }

    /// Measures again after `period` instead of [`JOB_PERIOD`] (tests).
    pub fn with_period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    /// Finds the jobs and reads their processes' counters.
    fn measure(&mut self, gpus: &[Gpu], lists_changed: bool) -> Vec<Measured> {
        let now = Instant::now();
        // A process started after this was not there when the measurement began.
        let boot = self.boot_ticks();
        if self.mounts.is_none() {
            let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
            self.mounts = Some(Mounts::parse(&text));
        }
        // Each job's processes as last looked up, while under [`MEMBERS_PERIOD`] old.
        let known = self.members.take().filter(|_| !lists_changed);
        if lists_changed {
            // A new GPU process may be in a folder no walk has seen (a new Slurm step).
            self.walks.clear();
        }
        let mut members_now: Members = HashMap::new();
        let mut users: BTreeMap<u32, Option<String>> = BTreeMap::new();
        for p in gpus.iter().flat_map(|g| g.processes.iter().flatten()) {
            if p.presence == Presence::Visible {
                users.entry(p.pid).or_insert_with(|| p.user.clone());
            }
        }
        let map = self.job_map.as_deref().map(job_map::read);
        let mut groups: BTreeMap<JobKey, Group> = BTreeMap::new();
        let mut seen_facts = HashSet::new();
        // Checked every measurement, so a pid NVML lists for a new process is never the old
        // job: by the held pidfds (one `poll`), else by reading its `stat`.
        self.held.sweep(|pid| users.contains_key(&pid));
        for (&pid, user) in &users {
            let kept = &mut self.kept;
            let start = match self
                .held
                .start(pid, || kept.stat(pid).map(|s| s.start_ticks))
            {
                Ok(start) => start,
                Err(_) => continue,
            };
            let key = (pid, start);
            seen_facts.insert(key);
            let mut facts = match self.facts.get(&key) {
                Some(f) => f.clone(),
                None => {
                    // Identified through its own open `/proc/<pid>` (the same process as `stat`).
                    let Ok(proc) = Proc::open(&self.proc_root, pid) else {
                        continue;
                    };
                    let Ok(stat) = proc.stat() else { continue };
                    if stat.start_ticks != start {
                        continue;
                    }
                    let f = self.identify(pid, &proc, &stat);
                    self.facts.insert(key, f.clone());
                    f
                }
            };
            // A process no cgroup names is the job its GPUs' mapping files name, if they agree.
            if facts.kind == JobKind::Process
                && let Some(id) = map.as_ref().and_then(|m| {
                    let on: Vec<u32> = gpus
                        .iter()
                        .filter(|g| g.processes.iter().flatten().any(|p| p.pid == pid))
                        .map(|g| g.index)
                        .collect();
                    job_map::job_of(m, &on)
                })
            {
                facts.kind = JobKind::Hpc;
                facts.id = id.to_owned();
                facts.place = "job map".to_owned();
            }
            let group = groups
                .entry((facts.kind, facts.id.clone(), facts.place.clone()))
                .or_insert_with(|| Group::new(&facts));
            group.gpu_pids.insert(pid);
            group.roots.insert(facts.root);
            group.steps.insert(facts.step.clone());
            match (&group.user, user) {
                (_, None) => {}
                (None, Some(u)) if group.gpu_pids.len() == 1 => group.user = Some(u.clone()),
                (Some(have), Some(u)) if have == u => {}
                // Several owners: no one of them is the job's.
                _ => group.user = None,
            }
        }
        self.facts.retain(|k, _| seen_facts.contains(k));

        // Every job's GPU processes are its own: no other job's walk takes them.
        let mut claimed: HashSet<u32> = groups
            .values()
            .flat_map(|g| g.gpu_pids.iter().copied())
            .collect();
        let mut seen_counters = HashSet::new();
        let mut seen_cgroups = HashSet::new();
        let mut measured = Vec::new();
        // Deepest cgroup first: a job whose cgroup is nested in another's takes its own
        // processes before the outer one's walk of the folders below it could (process trees,
        // with no folder, last).
        let mut groups: Vec<(JobKey, Group)> = groups.into_iter().collect();
        groups.sort_by_key(|(_, g)| {
            std::cmp::Reverse(
                g.files
                    .as_ref()
                    .and_then(|f| f.procs.as_ref())
                    .map_or(0, |p| p.components().count()),
            )
        });
        for (key, group) in groups {
            let files = group.files.clone();
            let cgroup_io = self.read_cgroup_io(&key, group.v2_dir.as_deref(), now);
            // A cgroup job's CPU and memory from its cgroup where the files are there.
            let cgroup_cpu = files.as_deref().and_then(|f| self.cgroup_cpu(&key, f, now));
            let cgroup_memory = files
                .as_deref()
                .and_then(|f| f.memory_bytes(&mut self.open));
            let need_stat = cgroup_cpu.is_none() || cgroup_memory.is_none();
            // Whether its processes' counters are read (the cgroup lacks one of them).
            let per_process = need_stat || cgroup_io.is_none();
            // A cgroup job's lists are read at every measurement: they are short, a kept process
            // is not read again, a new worker is counted from the measurement after its birth
            // (found later, its bytes until then would be missed), and one gone is noticed even
            // where nothing is read per process. A process tree's processes are kept for
            // [`MEMBERS_PERIOD`].
            let by_cgroup = files.as_deref().filter(|f| f.procs.is_some());
            let known_here = known
                .as_ref()
                .and_then(|m| m.get(&key))
                .filter(|(at, _, _)| at.elapsed() < MEMBERS_PERIOD)
                .filter(|_| by_cgroup.is_none())
                .cloned();
            // Its processes: a cgroup job's are those of its cgroup, a process tree's those
            // below its top (kept between look-ups). `fresh` holds the `stat`s a look-up just
            // read.
            let mut fresh: HashMap<u32, Stat> = HashMap::new();
            let (looked_up, pids, whole) = match known_here {
                Some(found) => found,
                None => {
                    let listed = by_cgroup.and_then(|f| {
                        self.cgroup_members(
                            f,
                            &key,
                            (&group.gpu_pids, &claimed),
                            per_process,
                            boot,
                            &mut fresh,
                        )
                    });
                    match listed {
                        Some((pids, whole)) => (now, pids, whole),
                        None => {
                            let (members, whole) = self.members(&group, &mut claimed, boot);
                            let pids = members.iter().map(|(p, s)| (*p, s.start_ticks)).collect();
                            fresh.extend(members);
                            (now, pids, whole)
                        }
                    }
                }
            };
            claimed.extend(pids.iter().map(|(pid, _)| *pid));
            seen_cgroups.insert(key.clone());
            let mut totals = Totals::default();
            let mut alive = Vec::with_capacity(pids.len());
            let before = self.io_members.remove(&key);
            let born = |start: u64| {
                before
                    .as_ref()
                    .and_then(|(_, b, _)| *b)
                    .is_some_and(|b| start > b)
            };
            let mut io_read = Vec::new();
            for &(pid, start) in &pids {
                let key = (pid, start);
                let prev = self.counters.get(&key).copied();
                let stat = if need_stat {
                    let read = match fresh.remove(&pid) {
                        Some(s) => Ok(s),
                        None => self.kept.stat(pid),
                    };
                    match read {
                        Ok(s) if s.start_ticks == start => Some(s),
                        _ => continue,
                    }
                } else {
                    None
                };
                let mut io = cgroup_io.is_none().then(|| self.kept.io(pid, start));
                if io == Some(Err(Unread::Gone)) {
                    // Gone, or a kernel without per-task I/O accounting (no `io` file at all):
                    // its `stat` tells.
                    match self.kept.stat(pid) {
                        Ok(s) if s.start_ticks == start => io = None,
                        _ => continue,
                    }
                }
                alive.push(key);
                seen_counters.insert(key);
                if let Some(stat) = &stat {
                    totals.add_stat(prev.as_ref(), stat, now, self.ticks_per_sec);
                }
                // The last good reading stands while a process's `io` cannot be read (it became
                // undumpable): its parent counts it all again once it exits.
                let last_io = match io {
                    Some(Ok(now_io)) => Some(now_io),
                    Some(Err(_)) => prev.and_then(|p| p.io),
                    None => None,
                };
                if let Some(io) = io {
                    totals.add_io(prev.as_ref(), io, born(start));
                }
                if last_io.is_some() {
                    io_read.push(key);
                }
                self.counters.insert(
                    key,
                    Counters {
                        at: now,
                        cpu_ticks: stat.as_ref().map(|s| s.cpu_ticks),
                        io: last_io,
                    },
                );
            }
            // Those whose `io` was read last time and are gone now: their parents count them.
            let io_secs = before.as_ref().map(|(at, _, was)| {
                let alive: HashSet<&(u32, u64)> = alive.iter().collect();
                for m in was.iter().filter(|m| !alive.contains(m)) {
                    // Only one that exited: a process still running that this job no longer
                    // lists (another job's now, past the cap) hands nothing to a parent.
                    let running = Proc::open(&self.proc_root, m.0)
                        .and_then(|p| p.stat())
                        .is_ok_and(|s| s.start_ticks == m.1);
                    if let Some(last) = self.counters.get(m).and_then(|c| c.io)
                        && !running
                    {
                        totals.gone(last);
                    }
                }
                now.saturating_duration_since(*at).as_secs_f64()
            });
            if cgroup_io.is_none() && !io_read.is_empty() {
                self.io_members.insert(key.clone(), (now, boot, io_read));
            }
            let gone = alive.len() < pids.len();
            // A process gone since the look-up: its job's processes are looked up again at the
            // next measurement (a DataLoader's workers are re-created each epoch).
            if !gone {
                members_now.insert(key.clone(), (looked_up, pids.clone(), whole));
            }
            let (kind, id, _) = key;
            let workers = alive
                .iter()
                .filter(|(pid, _)| !group.gpu_pids.contains(pid))
                .count();
            // The cgroup's own counters where the kernel keeps them, else its processes' sums.
            let (io, io_absent) = match cgroup_io {
                Some(io) => (Some(io), None),
                None => totals.io(io_secs),
            };
            let rss_bytes = match cgroup_memory {
                Some(bytes) => Some(Bytes(bytes)),
                None => (totals.stats > 0)
                    .then(|| Bytes(totals.rss_pages.saturating_mul(self.page_size))),
            };
            let psi_io = self.psi(group.v2_dir.as_deref(), "io.pressure");
            let psi_memory = self.psi(group.v2_dir.as_deref(), "memory.pressure");
            measured.push(Measured {
                job: Job {
                    kind,
                    id,
                    step: (group.steps.len() == 1)
                        .then(|| group.steps.first().cloned().flatten())
                        .flatten(),
                    name: group.name.clone(),
                    user: group.user.clone(),
                    gpus: Vec::new(),
                    gpu_pids: group.gpu_pids.iter().copied().collect(),
                    // Unknown when some process's children could not be read, or the cap hit.
                    workers: whole.then(|| u32::try_from(workers).unwrap_or(u32::MAX)),
                    rss_bytes,
                    cpu_pct: match cgroup_cpu {
                        Some(cpu) => cpu,
                        None => totals.cpu_pct(),
                    },
                    cpu_from_cgroup: matches!(cgroup_cpu, Some(Some(_))),
                    memory_from_cgroup: cgroup_memory.is_some(),
                    io,
                    io_absent,
                    psi_io,
                    psi_memory,
                },
                gpu_pids: group.gpu_pids,
            });
        }
        self.counters.retain(|k, _| seen_counters.contains(k));
        self.cgroup_io.retain(|k, _| seen_cgroups.contains(k));
        self.cgroup_cpu.retain(|k, _| seen_cgroups.contains(k));
        self.io_members.retain(|k, _| seen_cgroups.contains(k));
        self.walks.retain(|k, _| seen_cgroups.contains(k));
        self.kept.retain(|pid, start| {
            seen_counters.contains(&(pid, start)) || seen_facts.contains(&(pid, start))
        });
        self.members = Some(members_now);
        self.open.sweep();
        measured
    }

    /// The job of a GPU process: its cgroup's, or its process tree's. Its name is `comm` (never
    /// the command line, which may hold secrets and whose read can block on the process's
    /// memory map).
    fn identify(&self, pid: u32, proc: &Proc, stat: &Stat) -> Facts {
        let text = proc.cgroup_text().ok();
        let found = text.as_deref().and_then(cgroup::identify);
        if let (Some(found), Some(text)) = (found, &text) {
            let mounts = self.mounts.clone().unwrap_or_default();
            let files = Files::find(&mounts, text, &found);
            return Facts {
                files: Some(Arc::new(files)),
                kind: found.kind,
                id: found.id,
                place: found.dir,
                step: found.step,
                v2_dir: found.v2_dir,
                root: (pid, stat.start_ticks),
                name: tree::display_name(&stat.comm),
            };
        }
        let node = |p: &Proc, s: &Stat| {
            Some(tree::Node {
                ppid: s.ppid,
                uid: p.uid().ok()?,
                comm: s.comm.clone(),
            })
        };
        let root = &self.proc_root;
        let mut top = (pid, stat.start_ticks, stat.comm.clone());
        if let Some(first) = node(proc, stat) {
            let mut seen = HashMap::new();
            let top_pid = tree::top(pid, &first, |p| {
                let q = Proc::open(root, p).ok()?;
                let s = q.stat().ok()?;
                let n = node(&q, &s);
                seen.insert(p, (s.start_ticks, s.comm));
                n
            });
            if let Some((start, comm)) = seen.remove(&top_pid) {
                top = (top_pid, start, comm);
            }
        }
        Facts {
            kind: JobKind::Process,
            id: top.0.to_string(),
            place: format!("started at tick {}", top.1),
            step: None,
            v2_dir: None,
            root: (top.0, top.1),
            name: tree::display_name(&top.2),
            files: None,
        }
    }
}

impl JobSource for ProcJobs {
    fn sample(&mut self, gpus: &[Gpu]) -> Vec<Job> {
        let signature: Signature = gpus
            .iter()
            .flat_map(|g| {
                g.processes
                    .iter()
                    .flatten()
                    .filter(|p| p.presence == Presence::Visible)
                    .map(move |p| (g.index, p.pid))
            })
            .collect();
        if signature.is_empty() {
            self.last = None;
            self.facts.clear();
            self.counters.clear();
            self.kept.retain(|_, _| false);
            self.held.sweep(|_| false);
            self.members = None;
            self.cgroup_io.clear();
            self.cgroup_cpu.clear();
            self.io_members.clear();
            self.walks.clear();
            self.open.clear();
            return Vec::new();
        }
        let same_lists = self.last.as_ref().is_some_and(|(_, s, _)| *s == signature);
        let fresh = same_lists
            && self
                .last
                .as_ref()
                .is_some_and(|(at, _, _)| at.elapsed() < self.period);
        if !fresh {
            let measured = self.measure(gpus, !same_lists);
            self.last = Some((Instant::now(), signature, measured));
        }
        let measured = self.last.as_ref().map_or(&[][..], |(_, _, m)| m);
        with_gpus(measured, gpus)
    }
}

/// What one job's GPU processes say about it before its processes are read.
struct Group {
    gpu_pids: BTreeSet<u32>,
    roots: BTreeSet<(u32, u64)>,
    steps: BTreeSet<Option<String>>,
    user: Option<String>,
    name: Option<String>,
    v2_dir: Option<String>,
    files: Option<Arc<Files>>,
}

impl Group {
    fn new(facts: &Facts) -> Self {
        Group {
            files: facts.files.clone(),
            gpu_pids: BTreeSet::new(),
            roots: BTreeSet::new(),
            steps: BTreeSet::new(),
            user: None,
            name: facts.name.clone(),
            v2_dir: facts.v2_dir.clone(),
        }
    }
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a
/// hybrid host), from a `mounts` file.
pub fn cgroup2_mount(mounts: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(mounts).ok()?;
    parse_cgroup2_mount(&text)
}

/// The mount point of the first `cgroup2` line of `/proc/self/mounts` text.
pub fn parse_cgroup2_mount(text: &str) -> Option<PathBuf> {
    text.lines().find_map(|line| {
        let mut f = line.split_ascii_whitespace();
        let (_dev, dir, fstype) = (f.next()?, f.next()?, f.next()?);
        (fstype == "cgroup2").then(|| PathBuf::from(dir.replace("\\040", " ")))
    })
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
