//! The GPU processes held by pidfd between measurements: one `poll` of their pidfds tells which
//! exited, so a measurement knows that a pid NVML lists still names the process it identified
//! without reading that process's `stat` again (docs/performance.md#jobs).
//!
//! A pidfd is its process's own: it turns readable when that process exits, and never refers to
//! another process that later gets its pid. A start time read between `pidfd_open` and a `poll`
//! that finds the pidfd not readable is therefore the held process's. Where pidfds cannot be
//! had (a kernel before 5.3, a seccomp filter refusing the call), or past the cap, the caller's
//! `stat` read decides every time, as before.

use super::procs::Unread;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, pidfd_open};
use std::collections::HashMap;

/// The held processes, by pid: the pidfd and the start time (clock ticks after boot) read once.
pub struct Held {
    fds: HashMap<u32, (OwnedFd, u64)>,
    /// Whether pidfds are used: only on the real `/proc` (a test's fake tree has pids no process
    /// has), and not after the kernel refused the call.
    enabled: bool,
    cap: usize,
}

impl Held {
    /// Holds at most `cap` processes, and none unless `enabled`.
    pub fn new(enabled: bool, cap: usize) -> Self {
        Held {
            fds: HashMap::new(),
            enabled,
            cap,
        }
    }

    /// Lets go of the processes that exited since the last call, with one `poll`, and of those
    /// `keep` does not name.
    pub fn sweep(&mut self, keep: impl Fn(u32) -> bool) {
        self.fds.retain(|pid, _| keep(*pid));
        if self.fds.is_empty() {
            return;
        }
        let pids: Vec<u32> = self.fds.keys().copied().collect();
        let mut polled: Vec<PollFd<'_>> = pids
            .iter()
            .map(|pid| PollFd::new(&self.fds[pid].0, PollFlags::IN))
            .collect();
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let exited: Vec<u32> = match poll(&mut polled, Some(&zero)) {
            Ok(0) => Vec::new(),
            Ok(_) => pids
                .iter()
                .zip(&polled)
                .filter(|(_, p)| !p.revents().is_empty())
                .map(|(pid, _)| *pid)
                .collect(),
            // Interrupted or out of memory: none is trusted this time.
            Err(_) => pids.clone(),
        };
        drop(polled);
        for pid in exited {
            self.fds.remove(&pid);
        }
    }

    /// The start time of the process `pid` names: the held one's when it is held (and did not
    /// exit at the last [`Held::sweep`]), else `read`'s, and the process is held from then on.
    pub fn start(
        &mut self,
        pid: u32,
        read: impl FnOnce() -> Result<u64, Unread>,
    ) -> Result<u64, Unread> {
        if let Some((_, start)) = self.fds.get(&pid) {
            return Ok(*start);
        }
        if !self.enabled || self.fds.len() >= self.cap {
            return read();
        }
        let Some(raw) = Pid::from_raw(i32::try_from(pid).unwrap_or(0)) else {
            return read();
        };
        let fd = match pidfd_open(raw, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(Errno::SRCH) => return Err(Unread::Gone),
            // No pidfds here (ENOSYS, a seccomp EPERM): the `stat` read decides, every time.
            Err(Errno::NOSYS | Errno::PERM) => {
                self.enabled = false;
                return read();
            }
            // Not a process (EINVAL: a thread's id), or out of descriptors: read this once.
            Err(_) => return read(),
        };
        let start = read()?;
        let mut polled = [PollFd::new(&fd, PollFlags::IN)];
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        match poll(&mut polled, Some(&zero)) {
            // Alive after the read: the start time read is the held process's.
            Ok(0) => {
                self.fds.insert(pid, (fd, start));
                Ok(start)
            }
            // It exited: what was read may be a newer process's, so none is trusted.
            Ok(_) => Err(Unread::Gone),
            // Not known either way: the read decides this time, as where nothing is held.
            Err(_) => Ok(start),
        }
    }

    /// How many processes are held (tests).
    pub fn held(&self) -> usize {
        self.fds.len()
    }
}
