//! One process as the jobs need it, read from `/proc/<pid>` through procfs: its parent, owner,
//! `comm`, start time, CPU ticks, resident pages, children, cgroup and I/O counters. Never
//! `/proc/<pid>/environ` (it holds other people's secrets), nor `cmdline` (it may hold secrets
//! too, and reading it takes the process's memory-map lock, which a process can hold).

use procfs::ProcError;
use procfs::process::Process;
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// `/proc/<pid>/stat` as read from a kept file: only the fields a job needs, without the
/// allocations of a whole `procfs` `Stat` (this runs for every process of every job each
/// measurement). `comm` is between the first `(` and the last `)` (it may hold either); the
/// fields after it are numbered as in proc(5), the state being field 3. A text that does not
/// parse is a process that is gone.
pub fn parse_stat(text: &[u8]) -> Result<Stat, Unread> {
    let open = text.iter().position(|&b| b == b'(').ok_or(Unread::Gone)?;
    let close = text.iter().rposition(|&b| b == b')').ok_or(Unread::Gone)?;
    let comm = text.get(open + 1..close).ok_or(Unread::Gone)?;
    let mut fields = text[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    // proc(5) field `n` is the `n - 3`th after `comm`.
    let mut nth = |skip: usize| -> Result<u64, Unread> {
        let f = fields.nth(skip).ok_or(Unread::Gone)?;
        std::str::from_utf8(f)
            .ok()
            .and_then(|f| f.trim_end().parse().ok())
            .ok_or(Unread::Gone)
    };
    let ppid = nth(1)?; // field 4
    let utime = nth(9)?; // field 14
    let stime = nth(0)?; // field 15
    let start_ticks = nth(6)?; // field 22
    let rss = nth(1)?; // field 24
    Ok(Stat {
        ppid: u32::try_from(ppid).unwrap_or(0),
        comm: String::from_utf8_lossy(comm).into_owned(),
        start_ticks,
        cpu_ticks: utime.saturating_add(stime),
        rss_pages: rss,
    })
}

/// `read_bytes` and `write_bytes` of `/proc/<pid>/io` as read from a kept file; both must be
/// there.
pub fn parse_io(text: &[u8]) -> Result<IoBytes, Unread> {
    let (mut read, mut write) = (None, None);
    for line in text.split(|&b| b == b'\n') {
        let value = |prefix: &[u8]| -> Option<u64> {
            let v = line.strip_prefix(prefix)?;
            std::str::from_utf8(v).ok()?.trim().parse().ok()
        };
        if let Some(v) = value(b"read_bytes:") {
            read = Some(v);
        } else if let Some(v) = value(b"write_bytes:") {
            write = Some(v);
        }
    }
    match (read, write) {
        (Some(read), Some(write)) => Ok(IoBytes { read, write }),
        _ => Err(Unread::Gone),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use procfs::FromRead;

    #[test]
    fn stat_and_io_parse_as_procfs_does() {
        let own = std::fs::read("/proc/self/stat").expect("own stat");
        let want = Stat::from(procfs::process::Stat::from_read(&own[..]).expect("procfs"));
        assert_eq!(parse_stat(&own), Ok(want));
        let io = std::fs::read("/proc/self/io").expect("own io");
        let want = IoBytes::from(procfs::process::Io::from_read(&io[..]).expect("procfs"));
        assert_eq!(parse_io(&io), Ok(want));
    }

    #[test]
    fn a_comm_with_parentheses_and_spaces_is_whole() {
        let line = b"42 (a) (b c)) S 7 42 42 0 -1 4194304 1 0 0 0 30 12 0 0 20 0 1 0 9999 1000 77 18446744073709551615\n";
        let stat = parse_stat(line).expect("parses");
        assert_eq!(stat.comm, "a) (b c)");
        assert_eq!(
            (stat.ppid, stat.cpu_ticks, stat.start_ticks, stat.rss_pages),
            (7, 42, 9999, 77)
        );
        assert_eq!(parse_stat(b"42 (x) S 7"), Err(Unread::Gone), "cut short");
        assert_eq!(parse_stat(b"no parentheses"), Err(Unread::Gone));
        assert_eq!(parse_io(b"rchar: 1\nread_bytes: 5\n"), Err(Unread::Gone));
        assert_eq!(
            parse_io(b"read_bytes: 5\nwrite_bytes: 6\ncancelled_write_bytes: 1\n"),
            Ok(IoBytes { read: 5, write: 6 })
        );
    }
}
