//! Calls on a mount point that can hang (`statvfs`, the bind-mount `metadata` probe) run with a
//! deadline unless the filesystem is known to be local ([`super::kind::stats_inline`]): network
//! filesystems, FUSE daemons and unknown types can block a call forever.
//!
//! Each such mount point gets a thread of its own per kind of call ([`Bounded`]); the mount source
//! starts every call first, then waits for the answers until one deadline, so a hung mount costs
//! the tick one deadline however many hang, and the healthy ones answer meanwhile. A hung call
//! blocks only its own thread: that mount reports "did not answer" each tick (no new call is queued
//! behind the hung one) while every other mount keeps updating.

use super::space::VfsCounts;
use crate::collect::deadline::{DeadlineReader, Polled};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long one tick waits for the calls of one phase (the probes, then the `statvfs` calls).
pub const STAT_DEADLINE: Duration = Duration::from_millis(200);

/// `statvfs(path)` as the mount source uses it.
pub fn real_statvfs(path: &str) -> Result<VfsCounts, String> {
    rustix::fs::statvfs(path)
        .map(|s| VfsCounts::from(&s))
        .map_err(|e| format!("statvfs failed: {e}"))
}

/// Whether `path` is a directory; a path that cannot be stat'ed counts as one, so the mount is
/// kept and its `statvfs` reports why.
pub fn real_is_dir(path: &str) -> bool {
    std::fs::metadata(path).map_or(true, |m| m.is_dir())
}

/// The `statvfs` call a mount source makes (the real one, or a stand-in in tests).
pub type StatFn = fn(&str) -> Result<VfsCounts, String>;
/// The bind-mount probe a mount source makes (the real one, or a stand-in in tests).
pub type IsDirFn = fn(&str) -> bool;

/// One worker thread per mount point, kept across ticks, each running `call(path)` on request.
pub struct Bounded<T> {
    workers: HashMap<String, DeadlineReader<T>>,
    call: fn(&str) -> T,
    /// Names the call in thread names and errors (`statvfs`, `stat`).
    what: &'static str,
}

/// `statvfs` with a deadline.
pub type BoundedStatvfs = Bounded<Result<VfsCounts, String>>;

impl Default for BoundedStatvfs {
    fn default() -> Self {
        BoundedStatvfs::with(real_statvfs)
    }
}

impl BoundedStatvfs {
    /// Uses `stat` instead of the real `statvfs`.
    pub fn with(stat: StatFn) -> Self {
        Bounded::new("statvfs", stat)
    }

    /// `statvfs(path)`, or an error once `deadline` passes without an answer.
    pub fn statvfs(&mut self, path: &str, deadline: Instant) -> Result<VfsCounts, String> {
        self.start(path)?;
        self.finish(path, deadline)?
    }
}

impl<T: Send + 'static> Bounded<T> {
    pub fn new(what: &'static str, call: fn(&str) -> T) -> Self {
        Bounded {
            workers: HashMap::new(),
            call,
            what,
        }
    }

    /// Starts `call(path)` on the path's worker, unless the last one is still running.
    pub fn start(&mut self, path: &str) -> Result<(), String> {
        let what = self.what;
        if !self.workers.contains_key(path) {
            let call = self.call;
            let owned = path.to_owned();
            let w = DeadlineReader::spawn(&format!("vramio-{what}"), move || call(&owned))
                .map_err(|e| format!("cannot start a thread for {what}: {e}"))?;
            self.workers.insert(path.to_owned(), w);
        }
        let Some(w) = self.workers.get_mut(path) else {
            return Err(format!("no {what} thread"));
        };
        if w.request() {
            Ok(())
        } else {
            self.workers.remove(path);
            Err(format!("the {what} thread stopped"))
        }
    }

    /// The answer of the call [`Bounded::start`] started, or an error once `deadline` passes.
    pub fn finish(&mut self, path: &str, deadline: Instant) -> Result<T, String> {
        let what = self.what;
        let Some(w) = self.workers.get_mut(path) else {
            return Err(format!("no {what} thread"));
        };
        match w.wait(deadline) {
            Polled::Fresh(r, _) => Ok(r),
            Polled::Busy { for_ } => Err(format!(
                "{what} has not answered for {} ms: is the file server or FUSE daemon down?",
                for_.as_millis()
            )),
            Polled::Dead => {
                self.workers.remove(path);
                Err(format!("the {what} thread stopped"))
            }
        }
    }

    /// Drops the workers of mount points that are gone (a hung one ends when its call returns).
    pub fn retain(&mut self, present: impl Fn(&str) -> bool) {
        self.workers.retain(|p, _| present(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_like_statvfs() {
        let mut b = BoundedStatvfs::default();
        let deadline = Instant::now() + Duration::from_secs(5);
        let v = b.statvfs("/", deadline).expect("statvfs of /");
        assert!(v.blocks > 0 && v.frsize > 0);
        let e = b
            .statvfs(
                "/nonexistent/mount",
                Instant::now() + Duration::from_secs(5),
            )
            .expect_err("no such path");
        assert!(e.contains("statvfs failed"), "{e}");
        b.retain(|p| p == "/");
        assert_eq!(b.workers.len(), 1);
    }

    fn hangs_a_while(path: &str) -> Result<VfsCounts, String> {
        if path == "/hung" {
            std::thread::sleep(Duration::from_millis(800));
        }
        real_statvfs("/")
    }

    #[test]
    fn a_hung_server_blocks_only_its_own_mount() {
        let mut b = BoundedStatvfs::with(hangs_a_while);
        let t = Instant::now();
        let e = b
            .statvfs("/hung", Instant::now() + Duration::from_millis(100))
            .expect_err("times out");
        assert!(e.contains("has not answered"), "{e}");
        assert!(
            t.elapsed() < Duration::from_millis(600),
            "waited only until the deadline"
        );
        // Another network mount still answers at once.
        assert!(
            b.statvfs("/other", Instant::now() + Duration::from_millis(100))
                .is_ok()
        );
        // The hung call is not queued twice; once it returns, the next tick gets its answer.
        assert!(
            b.statvfs("/hung", Instant::now() + Duration::from_millis(50))
                .is_err()
        );
        std::thread::sleep(Duration::from_millis(900));
        assert!(
            b.statvfs("/hung", Instant::now() + Duration::from_millis(100))
                .is_ok()
        );
    }
}
