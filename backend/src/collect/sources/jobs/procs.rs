//! One process as the jobs need it, read from `/proc/<pid>` through procfs: its parent, owner,
//! `comm`, start time, CPU ticks, resident pages, children, cgroup and I/O counters. Never
//! `/proc/<pid>/environ` (it holds other people's secrets), nor `cmdline` (it may hold secrets
//! too, and reading it takes the process's memory-map lock, which a process can hold).

use procfs::process::Process;
use procfs::{FromRead, ProcError};
use std::fs::File;
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

impl From<procfs::process::Stat> for Stat {
    fn from(s: procfs::process::Stat) -> Self {
        Stat {
            ppid: u32::try_from(s.ppid).unwrap_or(0),
            comm: s.comm,
            start_ticks: s.starttime,
            cpu_ticks: s.utime.saturating_add(s.stime),
            rss_pages: s.rss,
        }
    }
}

impl From<procfs::process::Io> for IoBytes {
    fn from(io: procfs::process::Io) -> Self {
        IoBytes {
            read: io.read_bytes,
            write: io.write_bytes,
        }
    }
}

/// `/proc/<pid>/stat` as read from a kept file.
pub fn parse_stat(text: &[u8]) -> Result<Stat, Unread> {
    procfs::process::Stat::from_read(text)
        .map(Stat::from)
        .map_err(|e| unread(&e))
}

/// `/proc/<pid>/io` as read from a kept file.
pub fn parse_io(text: &[u8]) -> Result<IoBytes, Unread> {
    procfs::process::Io::from_read(text)
        .map(IoBytes::from)
        .map_err(|e| unread(&e))
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
        self.0.stat().map(Stat::from).map_err(|e| unread(&e))
    }

    /// One of its files, opened through the open `/proc/<pid>` (so it is this process's).
    pub fn open_file(&self, name: &str) -> Result<File, Unread> {
        self.0.open_relative(name).map_err(|e| unread(&e))
    }

    /// The owner (of the `/proc/<pid>` directory: the effective uid).
    pub fn uid(&self) -> Result<u32, Unread> {
        self.0.uid().map_err(|e| unread(&e))
    }

    /// `/proc/<pid>/cgroup` as text, for [`super::cgroup::identify`], read through the open
    /// `/proc/<pid>` (so it is this process's, even if its pid is reused meanwhile).
    pub fn cgroup_text(&self) -> Result<String, Unread> {
        let mut file = self.0.open_relative("cgroup").map_err(|e| unread(&e))?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text).map_err(|_| Unread::Gone)?;
        Ok(text)
    }

    pub fn io(&self) -> Result<IoBytes, Unread> {
        self.0.io().map(IoBytes::from).map_err(|e| unread(&e))
    }

    /// The children of every thread (a worker may be forked from any of them); `None` when a
    /// thread's list could not be read (then some children may be missing).
    pub fn children(&self) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        for task in self.0.tasks().ok()? {
            // A thread that exited meanwhile has no children to miss.
            let Ok(task) = task else { continue };
            match task.children() {
                Ok(children) => out.extend(children),
                Err(ProcError::NotFound(_)) => {}
                Err(_) => return None,
            }
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }
}
