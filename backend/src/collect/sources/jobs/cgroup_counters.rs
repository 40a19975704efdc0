//! A cgroup job's own counters: its CPU time, its memory and its processes, read from the job's
//! cgroup folder instead of from each of its processes (docs/jobs.md#4-what-it-costs).
//!
//! A job with a cgroup of its own (Slurm, a pod, a container, a unit) is measured by a handful of
//! reads whatever its number of workers: the v2 `cpu.stat` (`usage_usec`, there whether or not
//! the `cpu` controller is on) or else the v1 `cpuacct.usage`; the v2 `memory.stat` or else the
//! v1 one (anonymous plus mapped file memory: what its processes have resident, a page shared by
//! forked workers counted once); and the `cgroup.procs` of its folder and those below, for which
//! processes are its own. Each file is found below the hierarchy that holds it: the job's folder
//! on the v2 line of `/proc/<pid>/cgroup`, or on the v1 line of that controller (the same layout
//! names the same job there, `super::cgroup::identify`).
//!
//! The parsers are pure; the `proc_files` fuzz target runs them.

use super::cgroup::{self, Identity};
use crate::collect::sources::procfile::{generated_at_read, read_generated_bytes};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// At most this many folders are walked for a job's processes (a delegated subtree is its
/// owner's to fill).
pub const MAX_FOLDERS: usize = 1024;

/// Where this host's cgroup hierarchies are mounted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mounts {
    pub v2: Option<PathBuf>,
    /// The v1 hierarchy with the `cpuacct` controller.
    pub cpuacct: Option<PathBuf>,
    /// The v1 hierarchy with the `memory` controller.
    pub memory: Option<PathBuf>,
}

impl Mounts {
    /// From the text of `/proc/self/mounts`: the first `cgroup2` mount, and the `cgroup` (v1)
    /// mounts whose options name `cpuacct` or `memory`.
    pub fn parse(text: &str) -> Self {
        let mut out = Mounts::default();
        for line in text.lines() {
            let mut f = line.split_ascii_whitespace();
            let (Some(_dev), Some(dir), Some(fstype), Some(options)) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                continue;
            };
            let dir = || PathBuf::from(dir.replace("\\040", " "));
            match fstype {
                "cgroup2" if out.v2.is_none() => out.v2 = Some(dir()),
                "cgroup" => {
                    for option in options.split(',') {
                        match option {
                            "cpuacct" if out.cpuacct.is_none() => out.cpuacct = Some(dir()),
                            "memory" if out.memory.is_none() => out.memory = Some(dir()),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// The CPU time file of a job's cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuFile {
    /// v2 `cpu.stat`, `usage_usec` in microseconds.
    V2(PathBuf),
    /// v1 `cpuacct.usage`, in nanoseconds.
    V1(PathBuf),
}

/// The `memory.stat` of a job's cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryFile {
    V2(PathBuf),
    V1(PathBuf),
}

/// Where a job's cgroup files are: each absent where no hierarchy holds the job's folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Files {
    /// The files to try for CPU time, in order (v2 first; its `cpu.stat` may lack
    /// `usage_usec` on an old kernel).
    pub cpu: Vec<CpuFile>,
    pub memory: Vec<MemoryFile>,
    /// The folder whose `cgroup.procs`, and those of the folders below it, list the job's
    /// processes.
    pub procs: Option<PathBuf>,
}

impl Files {
    /// The files of the job `identity` (found in `cgroup_text`, the process's
    /// `/proc/<pid>/cgroup`) in the hierarchies of `mounts`.
    pub fn find(mounts: &Mounts, cgroup_text: &str, identity: &Identity) -> Self {
        let mut out = Files::default();
        let v2 = mounts
            .v2
            .as_deref()
            .zip(identity.v2_dir.as_deref())
            .map(|(m, d)| below(m, d));
        let v1 = |controller: &str, mount: Option<&Path>| {
            let dir = v1_dir(cgroup_text, identity, controller)?;
            Some(below(mount?, &dir))
        };
        let cpuacct = v1("cpuacct", mounts.cpuacct.as_deref());
        let memory = v1("memory", mounts.memory.as_deref());
        if let Some(v2) = &v2 {
            out.cpu.push(CpuFile::V2(v2.join("cpu.stat")));
            out.memory.push(MemoryFile::V2(v2.join("memory.stat")));
        }
        if let Some(dir) = &cpuacct {
            out.cpu.push(CpuFile::V1(dir.join("cpuacct.usage")));
        }
        if let Some(dir) = &memory {
            out.memory.push(MemoryFile::V1(dir.join("memory.stat")));
        }
        out.procs = v2.or(memory).or(cpuacct);
        out
    }

    /// The job's CPU time so far, in microseconds, from the first file that gives it, and which
    /// one that was (two files' counters are not to be subtracted).
    pub fn cpu_usec(&self, open: &mut OpenFiles) -> Option<(u64, usize)> {
        self.cpu.iter().enumerate().find_map(|(i, f)| {
            let usec = match f {
                CpuFile::V2(p) => parse_cpu_stat(open.read(p)?),
                CpuFile::V1(p) => parse_cpuacct_usage(open.read(p)?),
            };
            Some((usec?, i))
        })
    }

    /// The job's resident memory in bytes, from the first file that gives it.
    pub fn memory_bytes(&self, open: &mut OpenFiles) -> Option<u64> {
        self.memory.iter().find_map(|f| match f {
            MemoryFile::V2(p) => parse_memory_stat_v2(open.read(p)?),
            MemoryFile::V1(p) => parse_memory_stat_v1(open.read(p)?),
        })
    }

    /// The job's processes: the pids in the `cgroup.procs` of its folder and every folder below,
    /// at most `cap`, and whether that is all of them (every folder listed, under both caps);
    /// `None` when the folder's own list cannot be read. The lists are read through `open` (kept open,
    /// one `pread` each); the folders below are those `walk` found, walked again when its v2
    /// `cgroup.stat` counts other descendants, after [`WALK_PERIOD`], and at every call where
    /// there is no such count (v1, a test's folder).
    pub fn processes(
        &self,
        cap: usize,
        open: &mut OpenFiles,
        walk: &mut Walk,
    ) -> Option<(Vec<u32>, bool)> {
        let top = self.procs.as_ref()?;
        let descendants = open
            .read(&top.join("cgroup.stat"))
            .and_then(parse_descendants);
        let current = descendants.is_some()
            && descendants == walk.descendants
            && walk.at.is_some_and(|at| at.elapsed() < WALK_PERIOD);
        if !current {
            *walk = Walk::new(top, descendants);
        }
        let mut pids = parse_procs(open.read(&top.join("cgroup.procs"))?);
        let mut whole = walk.whole;
        for dir in &walk.folders {
            if pids.len() > cap {
                whole = false;
                break;
            }
            let list = dir.join("cgroup.procs");
            match open.read(&list) {
                Some(text) => pids.extend(parse_procs(text)),
                // Removed meanwhile: a step that ended has no processes to miss.
                None if !list.exists() => {}
                // There but unreadable: its processes are missed.
                None => whole = false,
            }
        }
        pids.sort_unstable();
        pids.dedup();
        if pids.len() > cap {
            pids.truncate(cap);
            whole = false;
        }
        Some((pids, whole))
    }
}

/// How long the folders below a job's cgroup are taken as known where the kernel counts them
/// (they change when a Slurm step starts or ends; a count that changes walks them at once).
pub const WALK_PERIOD: Duration = Duration::from_secs(30);

/// The folders below a job's cgroup folder as last walked.
#[derive(Clone, Debug, Default)]
pub struct Walk {
    at: Option<Instant>,
    /// v2 `cgroup.stat`'s `nr_descendants` then.
    descendants: Option<u64>,
    folders: Vec<PathBuf>,
    /// Every folder listed, under [`MAX_FOLDERS`].
    whole: bool,
}

impl Walk {
    /// The folders below `top`, at most [`MAX_FOLDERS`] with `top` and those queued.
    fn new(top: &Path, descendants: Option<u64>) -> Self {
        let mut walk = Walk {
            at: Some(Instant::now()),
            descendants,
            folders: Vec::new(),
            whole: true,
        };
        let mut queue = Vec::new();
        subfolders(top, &mut queue, &mut walk.whole, MAX_FOLDERS - 1);
        while let Some(dir) = queue.pop() {
            // Folders queued count too: a subtree of many empty folders is not listed whole.
            let seen = 1 + walk.folders.len() + 1;
            if seen + queue.len() < MAX_FOLDERS {
                subfolders(&dir, &mut queue, &mut walk.whole, MAX_FOLDERS - seen);
            } else {
                walk.whole = false;
            }
            walk.folders.push(dir);
        }
        walk
    }
}

/// `nr_descendants` of a v2 `cgroup.stat`.
pub fn parse_descendants(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("nr_descendants "))
        .and_then(|v| v.trim().parse().ok())
}

/// The jobs' cgroup files, kept open between measurements where they are on cgroupfs (which
/// generates a file's text afresh at each read from offset 0, as procfs does: see
/// `procfile.rs`), so a reading is one `pread` into one shared buffer instead of a path walk,
/// an open, a `statx`, reads and a close. A file that could not be opened is tried again after
/// [`RETRY`]; a file not read during a whole measurement is closed at [`OpenFiles::sweep`].
pub struct OpenFiles {
    files: HashMap<PathBuf, Entry>,
    buf: Vec<u8>,
    kept_open: usize,
    cap: usize,
}

impl Default for OpenFiles {
    fn default() -> Self {
        OpenFiles::with_cap(super::kept::cap() / 2)
    }
}

/// One file: open (and whether it is kept open), or when it last failed to open (`None`: to be
/// opened at its next read); and whether it was read since the last sweep.
struct Entry {
    file: Result<(File, bool), Option<Instant>>,
    read: bool,
}

/// How long a cgroup file that could not be opened is taken as absent (a controller turned on
/// later shows then).
pub const RETRY: Duration = Duration::from_secs(30);

impl OpenFiles {
    /// At most `cap` files kept open (each job's five or so: `cpu.stat`, `memory.stat`,
    /// `io.stat` and its pressure files).
    pub fn with_cap(cap: usize) -> Self {
        OpenFiles {
            files: HashMap::new(),
            buf: Vec::new(),
            kept_open: 0,
            cap,
        }
    }

    /// The text of `path` now; `None` when it is not there or cannot be read.
    pub fn read(&mut self, path: &Path) -> Option<&str> {
        let entry = self.files.entry(path.to_owned()).or_insert(Entry {
            file: Err(None),
            read: false,
        });
        entry.read = true;
        if let Err(failed) = entry.file {
            if failed.is_some_and(|at| at.elapsed() < RETRY) {
                return None;
            }
            entry.file = File::open(path)
                .map(|f| {
                    let kept = generated_at_read(&f);
                    (f, kept)
                })
                .map_err(|_| Some(Instant::now()));
            if entry.file.as_ref().is_ok_and(|(_, kept)| *kept) {
                self.kept_open += 1;
            }
        }
        let (file, kept) = entry.file.as_ref().ok()?;
        let kept = *kept;
        // Past the cap, a file is opened for each read and closed after it.
        let over = self.kept_open > self.cap;
        let len = match read_generated_bytes(file, &mut self.buf) {
            Ok(bytes) => bytes.len(),
            Err(_) => {
                // A cgroup removed answers ENODEV from then on: opened again at the next read
                // (a unit restarted at the same path has new files there).
                if kept {
                    self.kept_open -= 1;
                }
                entry.file = Err(None);
                return None;
            }
        };
        if !kept || over {
            // Elsewhere (a test's folder) the file is opened for every read, so a file replaced
            // between reads is seen as such.
            if kept {
                self.kept_open -= 1;
            }
            entry.file = Err(None);
        }
        std::str::from_utf8(&self.buf[..len]).ok()
    }

    /// Closes the files not read since the last sweep.
    pub fn sweep(&mut self) {
        self.files.retain(|_, e| std::mem::take(&mut e.read));
        self.kept_open = self.files.values().filter(|e| e.file.is_ok()).count();
    }

    /// Closes every file (no job left to read).
    pub fn clear(&mut self) {
        self.files.clear();
        self.kept_open = 0;
    }

    /// Files kept open now.
    pub fn kept_open(&self) -> usize {
        self.kept_open
    }
}

/// Queues the folders directly below `dir`, up to `max` queued (so the folders read and queued
/// stay within [`MAX_FOLDERS`]); `whole` is cleared when it cannot be listed (a folder removed
/// meanwhile has none) or has more.
fn subfolders(dir: &Path, queue: &mut Vec<PathBuf>, whole: &mut bool, max: usize) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            *whole &= e.kind() == std::io::ErrorKind::NotFound;
            return;
        }
    };
    // cgroupfs has folders and files only; `file_type` comes with the entry.
    for entry in entries.filter_map(Result::ok) {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if queue.len() >= max {
            *whole = false;
            return;
        }
        queue.push(entry.path());
    }
}

/// `dir` (a cgroup path, `/`-led) below the hierarchy mounted at `mount`.
fn below(mount: &Path, dir: &str) -> PathBuf {
    mount.join(dir.trim_start_matches('/'))
}

/// The job's folder in the v1 hierarchy with `controller`, if that hierarchy's line of the
/// process's cgroup file names the same job.
pub fn v1_dir(cgroup_text: &str, identity: &Identity, controller: &str) -> Option<String> {
    cgroup_text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, _path) = (parts.next()?, parts.next()?, parts.next()?);
        if id == "0" || !controllers.split(',').any(|c| c == controller) {
            return None;
        }
        // The line alone, as a v1 line: the same layout must name the same job.
        let found = cgroup::identify(line)?;
        (found.kind == identity.kind && found.id == identity.id).then_some(found.dir)
    })
}

/// `usage_usec` of a v2 `cpu.stat`.
pub fn parse_cpu_stat(text: &str) -> Option<u64> {
    flat_key(text, "usage_usec")
}

/// A v1 `cpuacct.usage` (nanoseconds), in microseconds.
pub fn parse_cpuacct_usage(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().map(|ns| ns / 1000)
}

/// What a v2 `memory.stat` says the cgroup's processes have resident: `anon` plus
/// `file_mapped`. Absent unless both are there.
pub fn parse_memory_stat_v2(text: &str) -> Option<u64> {
    flat_key(text, "anon")?.checked_add(flat_key(text, "file_mapped")?)
}

/// The same from a v1 `memory.stat`: `total_rss` plus `total_mapped_file` (the folder and
/// those below it).
pub fn parse_memory_stat_v1(text: &str) -> Option<u64> {
    flat_key(text, "total_rss")?.checked_add(flat_key(text, "total_mapped_file")?)
}

/// The value of `key` in a flat-keyed file (`key value` per line).
fn flat_key(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The pids of a `cgroup.procs` (one per line); anything else is skipped.
pub fn parse_procs(text: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .filter(|pid| *pid > 0)
        .collect()
}

#[cfg(test)]
#[path = "cgroup_counters_tests.rs"]
mod tests;
