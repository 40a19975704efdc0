//! `statvfs` with a deadline for network filesystems, whose servers can hang a call forever.
//!
//! Each network mount point gets a thread of its own that runs its `statvfs` calls; the mount
//! source waits for an answer until a deadline. A hung server blocks only its own thread: that
//! mount reports "did not answer" each tick (no new call is queued behind the hung one) while
//! every other mount keeps updating. Local filesystems do not need this and are stat'ed inline.

use super::space::VfsCounts;
use crate::collect::deadline::{DeadlineReader, Polled};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long one tick waits for a network filesystem's `statvfs`.
pub const NETWORK_STATVFS_DEADLINE: Duration = Duration::from_millis(200);

/// `statvfs(path)` as the mount source uses it.
pub fn real_statvfs(path: &str) -> Result<VfsCounts, String> {
    rustix::fs::statvfs(path)
        .map(|s| VfsCounts::from(&s))
        .map_err(|e| format!("statvfs failed: {e}"))
}

/// The call a worker makes (the real `statvfs`, or a stand-in in tests).
pub type StatFn = fn(&str) -> Result<VfsCounts, String>;

/// One worker thread per network mount point, kept across ticks.
pub struct BoundedStatvfs {
    workers: HashMap<String, DeadlineReader<Result<VfsCounts, String>>>,
    stat: StatFn,
}

impl Default for BoundedStatvfs {
    fn default() -> Self {
        BoundedStatvfs::with(real_statvfs)
    }
}

impl BoundedStatvfs {
    /// Uses `stat` instead of the real `statvfs`.
    pub fn with(stat: StatFn) -> Self {
        BoundedStatvfs {
            workers: HashMap::new(),
            stat,
        }
    }

    /// `statvfs(path)`, or an error once `deadline` passes without an answer.
    pub fn statvfs(&mut self, path: &str, deadline: Instant) -> Result<VfsCounts, String> {
        if !self.workers.contains_key(path) {
            let stat = self.stat;
            let owned = path.to_owned();
            let w = DeadlineReader::spawn("vramio-statvfs", move || stat(&owned))
                .map_err(|e| format!("cannot start a thread: {e}"))?;
            self.workers.insert(path.to_owned(), w);
        }
        let Some(w) = self.workers.get_mut(path) else {
            return Err("no worker".into());
        };
        if !w.request() {
            self.workers.remove(path);
            return Err("the statvfs thread stopped".into());
        }
        match w.wait(deadline) {
            Polled::Fresh(r, _) => r,
            Polled::Busy { for_ } => Err(format!(
                "statvfs has not answered for {} ms: is the file server down?",
                for_.as_millis()
            )),
            Polled::Dead => {
                self.workers.remove(path);
                Err("the statvfs thread stopped".into())
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
