//! The `stat` and `io` files of the jobs' processes, kept open between measurements: measuring a
//! process is then one `pread` of each ([`read_generated_bytes`]) instead of opening `/proc/<pid>`, two
//! files, and closing all three. A kept file is its process's own: once the process exits, a read
//! fails (the kernel answers ESRCH), even when its pid already names another process, so the
//! files are dropped and the pid is opened afresh.

use super::procs::{IoBytes, Proc, Stat, Unread, parse_io, parse_stat};
use crate::collect::sources::procfile::read_generated_bytes;
use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;

/// Processes whose files are kept open (two descriptors each), at most. Past it, a process is
/// read by opening its files each time.
pub const KEPT_PROCESSES: usize = 256;

/// The processes kept here: [`KEPT_PROCESSES`], or fewer where the descriptor limit is low, so
/// the kept files take at most a quarter of it (128 processes under the 1,024 a service gets by
/// default). The jobs' cgroup files and held pidfds take half this cap each, so the jobs hold
/// at most 3/8 of the limit (384 of 1,024), leaving the rest to sockets and the GPU and disk
/// files.
pub fn cap() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    usize::try_from(soft / 8)
        .unwrap_or(usize::MAX)
        .min(KEPT_PROCESSES)
}

/// A failed read of a kept file: the process is gone (ESRCH), or it may no longer be read (it
/// became another user's, or undumpable, after the file was opened).
fn unread(e: &std::io::Error) -> Unread {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        Unread::Denied
    } else {
        Unread::Gone
    }
}

struct Files {
    start_ticks: u64,
    stat: File,
    /// Another user's `io` cannot be opened without root: why, kept too.
    io: Result<File, Unread>,
}

/// The kept files, by pid.
pub struct Kept {
    root: PathBuf,
    files: HashMap<u32, Files>,
    buf: Vec<u8>,
    cap: usize,
}

impl Kept {
    pub fn new(root: PathBuf) -> Self {
        Kept {
            root,
            files: HashMap::new(),
            buf: Vec::with_capacity(512),
            cap: cap(),
        }
    }

    /// `pid`'s `stat`: through its kept file, else by opening it (and keeping its files while
    /// under [`KEPT_PROCESSES`]).
    pub fn stat(&mut self, pid: u32) -> Result<Stat, Unread> {
        if let Some(f) = self.files.get(&pid) {
            let read = read_generated_bytes(&f.stat, &mut self.buf)
                .map_err(|e| unread(&e))
                .and_then(parse_stat);
            match read {
                Ok(stat) if stat.start_ticks == f.start_ticks => return Ok(stat),
                // Gone: the pid may name another process now.
                _ => {
                    self.files.remove(&pid);
                }
            }
        }
        let proc = Proc::open(&self.root, pid)?;
        let stat = proc.stat()?;
        self.adopt(pid, &proc, stat.start_ticks);
        Ok(stat)
    }

    /// Keeps the files of `proc` (pid `pid`, started at `start_ticks`) while under the cap.
    pub fn adopt(&mut self, pid: u32, proc: &Proc, start_ticks: u64) {
        if self.files.contains_key(&pid) || self.files.len() >= self.cap {
            return;
        }
        let Ok(stat) = proc.open_file("stat") else {
            return;
        };
        let io = proc.open_file("io");
        self.files.insert(
            pid,
            Files {
                start_ticks,
                stat,
                io,
            },
        );
    }

    /// The I/O counters of the process `pid` names if it started at `start_ticks`: through its
    /// kept file, else by opening it (its `stat` checked first, through the same open
    /// `/proc/<pid>`, and its files kept while under the cap). Another process with that pid
    /// now, or none, is [`Unread::Gone`]; a kept process that is gone has its files dropped, so
    /// its pid is opened afresh next time.
    pub fn io(&mut self, pid: u32, start_ticks: u64) -> Result<IoBytes, Unread> {
        let read = match self.files.get(&pid) {
            Some(f) if f.start_ticks != start_ticks => return Err(Unread::Gone),
            Some(f) => match &f.io {
                Ok(file) => read_generated_bytes(file, &mut self.buf)
                    .map_err(|e| unread(&e))
                    .and_then(parse_io),
                Err(e) => Err(*e),
            },
            None => {
                let proc = Proc::open(&self.root, pid)?;
                if proc.stat()?.start_ticks != start_ticks {
                    return Err(Unread::Gone);
                }
                self.adopt(pid, &proc, start_ticks);
                return proc.io();
            }
        };
        if read == Err(Unread::Gone) {
            self.files.remove(&pid);
        }
        read
    }

    /// The start time of the process whose files are kept for `pid`, without reading them.
    pub fn start_of(&self, pid: u32) -> Option<u64> {
        self.files.get(&pid).map(|f| f.start_ticks)
    }

    /// Closes the files of every process `keep` does not name by (pid, start).
    pub fn retain(&mut self, keep: impl Fn(u32, u64) -> bool) {
        self.files.retain(|pid, f| keep(*pid, f.start_ticks));
    }

    /// Processes kept open now.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

// Reading a process that exits is tested in `tests/jobs.rs`: spawning a child here would race
// with the lib tests that take and drop a state directory's lock.
#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn files_are_kept_up_to_the_cap_and_dropped_when_not_retained() {
        let me = std::process::id();
        let mut kept = Kept::new(PathBuf::from("/proc"));
        let start = kept.stat(me).expect("this process").start_ticks;
        kept.retain(|pid, s| pid == me && s == start);
        assert_eq!(kept.len(), 1);
        kept.retain(|_, _| false);
        assert_eq!(kept.len(), 0);
        // Past the cap a process is still read, by opening it.
        let proc = Proc::open(Path::new("/proc"), me).expect("open");
        assert!(kept.cap > 0 && kept.cap <= KEPT_PROCESSES);
        for fake in 0..kept.cap as u32 {
            kept.adopt(u32::MAX - fake, &proc, start);
        }
        assert_eq!(kept.len(), kept.cap);
        assert_eq!(kept.stat(me).map(|s| s.start_ticks), Ok(start));
        assert_eq!(kept.len(), kept.cap, "not kept past the cap");
    }
}
