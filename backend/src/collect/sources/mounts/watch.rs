//! Whether the mount table changed since it was last read, so the mount source re-reads and
//! re-parses `/proc/self/mountinfo` only when something was mounted, unmounted or remounted.
//!
//! The kernel flags a change to an open mountinfo file with `POLLPRI | POLLERR` (`mounts_poll` in
//! `fs/proc_namespace.c`; util-linux's libmount monitor works the same way), and a poll that
//! reports it clears it. A plain file (a test fixture) never reports that, so a watch is only
//! kept for files under `/proc`; without one every read counts as changed. [`REREAD_EVERY`] bounds
//! how long a missed notification could hide a change.

use rustix::event::{PollFd, PollFlags, poll};
use std::path::Path;
use std::time::{Duration, Instant};

/// The mount table is read again after this long even without a notification.
pub const REREAD_EVERY: Duration = Duration::from_secs(60);

/// Change notifications of one mountinfo file.
pub struct TableWatch {
    file: Option<std::fs::File>,
    read_at: Option<Instant>,
}

impl TableWatch {
    /// Watches `mountinfo` when it is a procfs file; otherwise every [`TableWatch::changed`] is true.
    pub fn new(mountinfo: &Path) -> Self {
        let file = mountinfo
            .starts_with("/proc")
            .then(|| std::fs::File::open(mountinfo).ok())
            .flatten();
        TableWatch {
            file,
            read_at: None,
        }
    }

    /// Whether the table must be read again: never read, notified, unwatched, or read too long ago.
    /// Call [`TableWatch::read`] after reading it.
    pub fn changed(&mut self) -> bool {
        let Some(file) = &self.file else {
            return true;
        };
        if self.read_at.is_none_or(|at| at.elapsed() >= REREAD_EVERY) {
            // Clear a pending notification: the read that follows sees the change anyway.
            let _ = notified(file);
            return true;
        }
        // A failed poll reads again rather than trusting a stale table.
        notified(file).unwrap_or(true)
    }

    /// Notes that the table was just read.
    pub fn read(&mut self) {
        self.read_at = Some(Instant::now());
    }
}

fn notified(file: &std::fs::File) -> rustix::io::Result<bool> {
    let mut fds = [PollFd::new(file, PollFlags::PRI)];
    poll(&mut fds, Some(&rustix::time::Timespec::default()))?;
    Ok(fds[0].revents().intersects(PollFlags::PRI | PollFlags::ERR))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_fixture_always_counts_as_changed() {
        let dir = std::env::temp_dir().join(format!("vramio-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("mountinfo");
        std::fs::write(&file, "").expect("write");
        let mut w = TableWatch::new(&file);
        assert!(w.changed());
        w.read();
        assert!(
            w.changed(),
            "a plain file has no notifications: always read"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_mount_is_noticed_and_a_quiet_table_is_not_read_again() {
        let mut w = TableWatch::new(Path::new("/proc/self/mountinfo"));
        assert!(w.changed(), "never read");
        w.read();
        assert!(!w.changed(), "nothing was mounted since");
        // Mounting needs root; CI runs as root and must run this part.
        let root = rustix::process::geteuid().is_root();
        if !root {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run this test as root"
            );
            eprintln!("not root: the mount half of this test needs root");
            return;
        }
        let dir = std::env::temp_dir().join(format!("vramio-watch-mnt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mount = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "vramio-test"])
            .arg(&dir)
            .status()
            .expect("run mount");
        assert!(mount.success(), "mount a tmpfs as root");
        let seen = w.changed();
        w.read();
        let umount = Command::new("umount").arg(&dir).status().expect("umount");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(seen, "the mount was noticed");
        assert!(umount.success());
        assert!(w.changed(), "the unmount was noticed");
        w.read();
        assert!(!w.changed());
    }
}
