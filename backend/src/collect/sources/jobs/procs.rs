//! One process as the jobs need it, read from `/proc/<pid>` through procfs: its parent, owner,
//! `comm`, start time, CPU ticks, resident pages, children, command line and I/O counters. Never
//! `/proc/<pid>/environ` (it holds other people's secrets).

use procfs::ProcError;
use procfs::process::Process;
use std::path::Path;

/// A process's identity and the counters read every time its job is measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    pub ppid: u32,
    pub comm: String,
    /// Clock ticks after boot: with the pid, the key that a reused pid never shares.
    pub start_ticks: u64,
    /// User plus system time, in clock ticks.
    pub cpu_ticks: u64,
    pub rss_pages: u64,
}

/// `read_bytes` and `write_bytes` of `/proc/<pid>/io`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoBytes {
    pub read: u64,
    pub write: u64,
}

/// Why a file of a live process could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unread {
    /// The process is gone.
    Gone,
    /// It is another user's and this vramio is not root (or `hidepid` hides it).
    Denied,
}

fn unread(e: &ProcError) -> Unread {
    match e {
        ProcError::PermissionDenied(_) => Unread::Denied,
        _ => Unread::Gone,
    }
}

/// An open `/proc/<pid>` directory.
pub struct Proc(Process);

impl Proc {
    /// Opens `root/<pid>`.
    pub fn open(root: &Path, pid: u32) -> Result<Self, Unread> {
        Process::new_with_root(root.join(pid.to_string()))
            .map(Proc)
            .map_err(|e| unread(&e))
    }

    pub fn stat(&self) -> Result<Stat, Unread> {
        let s = self.0.stat().map_err(|e| unread(&e))?;
        Ok(Stat {
            ppid: u32::try_from(s.ppid).unwrap_or(0),
            comm: s.comm,
            start_ticks: s.starttime,
            cpu_ticks: s.utime.saturating_add(s.stime),
            rss_pages: s.rss,
        })
    }

    /// The owner (of the `/proc/<pid>` directory: the effective uid).
    pub fn uid(&self) -> Result<u32, Unread> {
        self.0.uid().map_err(|e| unread(&e))
    }

    /// `/proc/<pid>/cgroup` as text, for [`super::cgroup::identify`].
    pub fn cgroup_text(&self, root: &Path, pid: u32) -> Result<String, Unread> {
        std::fs::read_to_string(root.join(pid.to_string()).join("cgroup")).map_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                Unread::Denied
            } else {
                Unread::Gone
            }
        })
    }

    pub fn cmdline(&self) -> Vec<String> {
        self.0.cmdline().unwrap_or_default()
    }

    pub fn io(&self) -> Result<IoBytes, Unread> {
        self.0
            .io()
            .map(|io| IoBytes {
                read: io.read_bytes,
                write: io.write_bytes,
            })
            .map_err(|e| unread(&e))
    }

    /// The children of every thread (a worker may be forked from any of them).
    pub fn children(&self) -> Vec<u32> {
        let mut out = Vec::new();
        if let Ok(tasks) = self.0.tasks() {
            for task in tasks.flatten() {
                if let Ok(children) = task.children() {
                    out.extend(children);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
