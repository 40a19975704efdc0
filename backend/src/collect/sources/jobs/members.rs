//! Who is in a job: a cgroup job's processes from its folders' lists, a process tree's from
//! the `children` below its GPU processes, each known by pid and start time (docs/jobs.md §1).

use super::cgroup_counters::{Files, Walk};
use super::procs::{Proc, Stat, Unread};
use super::{Found, Group, JobKey, MAX_MEMBERS, Member, ProcJobs};
use std::collections::{BTreeSet, HashMap, HashSet};

impl ProcJobs {
    /// A cgroup job's processes: those its cgroup's folders list, by pid and start time, and
    /// whether that is all of them; `None` when its folder cannot be read. A process that started
    /// after `listed` (clock ticks since boot) holds the pid of a listed one that exited since. Another job's GPU
    /// process (in a cgroup nested in this one) is not this job's. A process whose files are kept
    /// is known by them (its start time is theirs: a kept file fails once its process is gone);
    /// another is read, its `stat` left in `fresh`, and its files kept only when `per_process`
    /// (its counters are read every measurement).
    pub(super) fn cgroup_members(
        &mut self,
        files: &Files,
        key: &JobKey,
        (own, claimed): (&BTreeSet<u32>, &HashSet<u32>),
        per_process: bool,
        listed: Option<u64>,
        fresh: &mut HashMap<u32, Stat>,
    ) -> Option<Found> {
        let mut walk = self.walks.remove(key).unwrap_or_default();
        let mut listed_now = files.processes(MAX_MEMBERS, &mut self.open, &mut walk);
        // One of its GPU processes not listed: a folder came and another went since the walk
        // (back-to-back steps keep the count of folders), so walk again.
        if listed_now.as_ref().is_some_and(|(pids, whole)| {
            *whole && own.iter().any(|p| pids.binary_search(p).is_err())
        }) {
            walk = Walk::default();
            listed_now = files.processes(MAX_MEMBERS, &mut self.open, &mut walk);
        }
        self.walks.insert(key.clone(), walk);
        let (pids, mut whole) = listed_now?;
        let mut out = Vec::with_capacity(pids.len());
        for pid in pids {
            if claimed.contains(&pid) && !own.contains(&pid) {
                continue;
            }
            if let Some(start) = self.kept.start_of(pid) {
                out.push((pid, start));
                continue;
            }
            let read = if per_process {
                self.kept.stat(pid)
            } else {
                Proc::open(&self.proc_root, pid).and_then(|p| p.stat())
            };
            match read {
                // Born after the list was read: its pid was listed for a process that exited
                // since, so it is not known to be this job's (a list read later will tell).
                Ok(stat) if listed.is_some_and(|l| stat.start_ticks > l) => {}
                Ok(stat) => {
                    out.push((pid, stat.start_ticks));
                    fresh.insert(pid, stat);
                }
                // Exited since the list was read.
                Err(Unread::Gone) => {}
                // Hidden from this vramio (`hidepid`): there, but not read.
                Err(Unread::Denied) => whole = false,
            }
        }
        Some((out, whole))
    }

    /// Clock ticks since boot now, as `/proc/<pid>/stat` counts a start time: from the boot
    /// clock, or on a test's `/proc` tree from its `uptime` file (`None` without one).
    pub(super) fn boot_ticks(&self) -> Option<u64> {
        let tps = self.ticks_per_sec;
        if !self.real_proc {
            let text = std::fs::read_to_string(self.proc_root.join("uptime")).ok()?;
            let secs: f64 = text.split_ascii_whitespace().next()?.parse().ok()?;
            return Some((secs * tps as f64).round() as u64);
        }
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
        Some(
            u64::try_from(t.tv_sec).ok()? * tps
                + u64::try_from(t.tv_nsec).ok()? * tps / 1_000_000_000,
        )
    }

    /// The job's processes: its roots and everything below them that no other job claimed, and
    /// whether they are all there (every `children` read, and under [`MAX_MEMBERS`]).
    pub(super) fn members(
        &mut self,
        group: &Group,
        claimed: &mut HashSet<u32>,
        walked: Option<u64>,
    ) -> (Vec<Member>, bool) {
        let mut out = Vec::new();
        let mut whole = true;
        let mut queue: Vec<(u32, Option<u64>)> = group
            .roots
            .iter()
            .map(|&(pid, start)| (pid, Some(start)))
            .collect();
        // A job's own GPU processes are claimed already; take them, and walk from them.
        let mut own: HashSet<u32> = group.gpu_pids.iter().copied().collect();
        queue.extend(group.gpu_pids.iter().map(|&pid| (pid, None)));
        let mut visited = HashSet::new();
        // A process born after the measurement began holds a pid listed for one that exited
        // since.
        while let Some((pid, start)) = queue.pop() {
            if !visited.insert(pid) {
                continue;
            }
            let mine = own.remove(&pid) || (group.roots.iter().any(|r| r.0 == pid));
            if !mine && !claimed.insert(pid) {
                continue;
            }
            if out.len() >= MAX_MEMBERS {
                whole = false;
                break;
            }
            let Ok(proc) = Proc::open(&self.proc_root, pid) else {
                continue;
            };
            let Ok(stat) = proc.stat() else { continue };
            if walked.is_some_and(|w| stat.start_ticks > w) {
                continue;
            }
            if start.is_some_and(|s| s != stat.start_ticks) {
                // The top exited and its pid is another process now: not this job's.
                continue;
            }
            match proc.children() {
                Some(children) => queue.extend(children.into_iter().map(|c| (c, None))),
                None => whole = false,
            }
            self.kept.adopt(pid, &proc, stat.start_ticks);
            out.push((pid, stat));
        }
        (out, whole)
    }
}
