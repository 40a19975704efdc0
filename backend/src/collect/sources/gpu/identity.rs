//! Who holds GPU memory: for each pid NVML lists, whether this `/proc` can show it
//! ([`Presence`]), its `comm`, and its owner's login name through NSS (`getpwuid_r`, so LDAP and
//! SSSD accounts resolve like local ones).
//!
//! NVML reports pids of the initial PID namespace. vramio in a container with its own PID
//! namespace cannot resolve them in its `/proc`, and a local process with the same number is a
//! different process, so there it does not look them up: they are `not_visible`, never `exited`.
//! [`PidNamespace::of_self`] tells which case holds; [`presence`] is the decision, pure; tests
//! drive both cases through [`Identities::new`].
//!
//! Facts are cached per pid, keyed by the process start time (field 22 of `/proc/<pid>/stat`), so
//! a reused pid is read again; pids that left every list are evicted ([`Identities::retain`]).
//! Each cached pid's `stat` stays open (while fewer than [`KEPT_FILES`] pids are cached): a read
//! is then one `pread`, not an open, a `statx`, six growing reads and a close. An open
//! `/proc/<pid>/stat` answers only for the process it was opened on (`ESRCH` once that one has
//! exited, even if its pid is reused), and then the path is opened again.

use super::super::procfile::{generated_at_read, read_generated};
use nix::unistd::{Uid, User};
use shared::{Bytes, GpuProcess, Presence};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `PROC_PID_INIT_INO` (include/linux/proc_ns.h): the inode of `/proc/self/ns/pid` in the
/// initial PID namespace, whose pids NVML reports.
pub const PROC_PID_INIT_INO: u64 = 0xEFFF_FFFC;
/// How long an owner uid the name service did not know is shown as a number before asking again.
const UNKNOWN_USER_RETRY: Duration = Duration::from_secs(60);
/// `ESRCH`: a process that exited while its `/proc` entry was read.
const ESRCH: i32 = 3;
/// `/proc/<pid>/stat` files are kept open while fewer pids than this are cached (far below the
/// usual limit of 1,024 open files); beyond it a new pid's file is opened at each read.
pub const KEPT_FILES: usize = 256;

/// Whether this `/proc` shows the pids NVML reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidNamespace {
    /// The initial PID namespace: NVML's pids are this `/proc`'s pids.
    Host,
    /// A child namespace (a container without `--pid=host`), or one that cannot be told apart:
    /// NVML's pids cannot be looked up here.
    Child,
}

impl PidNamespace {
    /// The namespace vramio runs in, from the inode of `/proc/self/ns/pid`.
    pub fn of_self() -> Self {
        Self::from_inode(std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino()))
    }

    /// `Host` only for the initial namespace's inode; an unreadable one is not trusted.
    pub fn from_inode(inode: Option<u64>) -> Self {
        match inode {
            Some(PROC_PID_INIT_INO) => PidNamespace::Host,
            _ => PidNamespace::Child,
        }
    }
}

/// What looking a pid up in this `/proc` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup<T> {
    Found(T),
    /// No such process here.
    Gone,
    /// It exists but cannot be read (`hidepid`, permissions).
    Denied,
}

/// The presence of a pid NVML lists, and what the lookup found. In a child namespace `look_up`
/// is not called at all.
pub fn presence<T>(ns: PidNamespace, look_up: impl FnOnce() -> Lookup<T>) -> (Presence, Option<T>) {
    match ns {
        PidNamespace::Child => (Presence::NotVisible, None),
        PidNamespace::Host => match look_up() {
            Lookup::Found(found) => (Presence::Visible, Some(found)),
            Lookup::Gone => (Presence::Exited, None),
            Lookup::Denied => (Presence::NotVisible, None),
        },
    }
}

/// `comm` and start time (clock ticks after boot) from `/proc/<pid>/stat` text. `comm` sits in
/// parentheses and may itself contain spaces and parentheses, so the last `)` ends it.
pub fn parse_stat(text: &str) -> Option<(&str, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?;
    // Fields after comm start at 3 (state); starttime is field 22.
    let start = text.get(close + 1..)?.split_ascii_whitespace().nth(19)?;
    Some((comm, start.parse().ok()?))
}

/// What is cached of one live process.
#[derive(Debug)]
struct Known {
    start_ticks: u64,
    user: Option<String>,
    /// Its `/proc/<pid>/stat`, kept open on procfs.
    stat: Option<File>,
}

/// Login names by uid through NSS, with unknown uids retried now and then.
struct Users {
    names: HashMap<u32, (Option<String>, Instant)>,
    resolve: fn(u32) -> Option<String>,
}

impl Users {
    /// The login name of `uid`, or the number when the name service does not know it.
    fn name(&mut self, uid: u32) -> String {
        let fresh = |(name, at): &(Option<String>, Instant)| {
            name.is_some() || at.elapsed() < UNKNOWN_USER_RETRY
        };
        if !self.names.get(&uid).is_some_and(fresh) {
            self.names
                .insert(uid, ((self.resolve)(uid), Instant::now()));
        }
        self.names
            .get(&uid)
            .and_then(|(name, _)| name.clone())
            .unwrap_or_else(|| uid.to_string())
    }
}

/// `getpwuid_r` through nix: local files, LDAP, SSSD, whatever nsswitch.conf names.
pub fn nss_user_name(uid: u32) -> Option<String> {
    User::from_uid(Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// Resolves the pids NVML lists into [`GpuProcess`]es, caching what does not change.
pub struct Identities {
    ns: PidNamespace,
    proc_root: PathBuf,
    known: HashMap<u32, Known>,
    users: Users,
    /// The buffer every `stat` is read into.
    buf: Vec<u8>,
}

impl Identities {
    /// For this host: its own PID namespace, `/proc`, NSS.
    pub fn system() -> Self {
        Self::new(
            PidNamespace::of_self(),
            PathBuf::from("/proc"),
            nss_user_name,
        )
    }

    /// The seam tests use: a given namespace, a `/proc` tree and a user resolver.
    pub fn new(ns: PidNamespace, proc_root: PathBuf, resolve: fn(u32) -> Option<String>) -> Self {
        Identities {
            ns,
            proc_root,
            known: HashMap::new(),
            buf: Vec::new(),
            users: Users {
                names: HashMap::new(),
                resolve,
            },
        }
    }

    /// A GPU process with its presence, and with `comm` and user when visible.
    pub fn process(&mut self, pid: u32, used_bytes: Option<u64>) -> GpuProcess {
        let (presence, found) = presence(self.ns, || self.look_up(pid));
        let (name, user) = found.unzip();
        GpuProcess {
            pid,
            presence,
            name,
            user: user.flatten(),
            used_bytes: used_bytes.map(Bytes),
            mig: None,
        }
    }

    /// `comm` (from the stat read that checks the cache key) and the owner, cached per start.
    fn look_up(&mut self, pid: u32) -> Lookup<(String, Option<String>)> {
        // The file kept open for this pid answers for the process it was opened on, or fails.
        if let Some(k) = self.known.get_mut(&pid)
            && let Some(file) = k.stat.take()
            && let Ok(text) = read_generated(&file, &mut self.buf)
            && let Some((comm, start_ticks)) = parse_stat(text)
            && start_ticks == k.start_ticks
        {
            k.stat = Some(file);
            return Lookup::Found((comm.to_owned(), k.user.clone()));
        }
        let dir = self.proc_root.join(pid.to_string());
        let (comm, start_ticks, file) = match self.open_stat(&dir) {
            Ok(Some(found)) => found,
            Ok(None) => return Lookup::Denied,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(ESRCH) =>
            {
                return Lookup::Gone;
            }
            Err(_) => return Lookup::Denied,
        };
        let keep = file.filter(|_| self.known.len() < KEPT_FILES);
        if let Some(k) = self
            .known
            .get_mut(&pid)
            .filter(|k| k.start_ticks == start_ticks)
        {
            k.stat = keep;
            return Lookup::Found((comm, k.user.clone()));
        }
        // New, or the pid was reused by another process: read its owner.
        let user = std::fs::metadata(&dir)
            .ok()
            .map(|m| self.users.name(m.uid()));
        self.known.insert(
            pid,
            Known {
                start_ticks,
                user: user.clone(),
                stat: keep,
            },
        );
        Lookup::Found((comm, user))
    }

    /// Opens and reads `dir/stat`: `comm`, the start time, and the file when it is on procfs
    /// (worth keeping open); `None` for a text that does not parse.
    fn open_stat(
        &mut self,
        dir: &std::path::Path,
    ) -> std::io::Result<Option<(String, u64, Option<File>)>> {
        let file = File::open(dir.join("stat"))?;
        let generated = generated_at_read(&file);
        let text = if generated {
            read_generated(&file, &mut self.buf)?
        } else {
            // A test's fake /proc: a regular file, read to the end.
            self.buf.clear();
            std::io::Read::read_to_end(&mut &file, &mut self.buf)?;
            std::str::from_utf8(&self.buf)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?
        };
        Ok(parse_stat(text)
            .map(|(comm, start)| (comm.to_owned(), start, generated.then_some(file))))
    }

    /// Forgets the pids for which `keep` is false (those in no device's list any more).
    pub fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        self.known.retain(|pid, _| keep(*pid));
    }

    /// How many pids are cached.
    pub fn cached(&self) -> usize {
        self.known.len()
    }

    /// How many `stat` files are kept open.
    #[cfg(test)]
    fn kept_open(&self) -> usize {
        self.known.values().filter(|k| k.stat.is_some()).count()
    }

    /// The start time a pid is cached under.
    #[cfg(test)]
    fn cached_start(&self, pid: u32) -> Option<u64> {
        self.known.get(&pid).map(|k| k.start_ticks)
    }
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
