//! A loop-mounted ext4 for tests that need a real block device under a path: made with
//! `mkfs.ext4` and `mount -o loop` (root, loop devices and e2fsprogs, which `.ci/run` installs),
//! unmounted and removed when dropped. Include with
//! `#[path = "common/loop_mount.rs"] mod loop_mount;`.
//!
//! Where mounting is impossible (not root, no loop device), a test that needs it skips, saying
//! so, outside CI, and fails in CI (`CI` set), which must run it: [`loop_mount_or_skip`],
//! [`may_mount_or_skip`].
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

#[path = "ci.rs"]
mod ci;
#[allow(
    unused_imports,
    reason = "for the test files that include this one and ask"
)]
pub use ci::in_ci;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A mounted ext4 image; `dir` is its mount point.
pub struct LoopMount {
    pub dir: PathBuf,
    pub image: PathBuf,
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        unmount(&self.dir);
        let _ = std::fs::remove_dir(&self.dir);
        let _ = std::fs::remove_file(&self.image);
    }
}

/// Unmounts `dir`; lazily when something still holds it (a server that a failed test left
/// running), so the path is free either way. Quiet when nothing is mounted there.
pub fn unmount(dir: &Path) {
    let quiet = |args: &[&str]| {
        Command::new("umount")
            .args(args)
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !quiet(&[]) {
        quiet(&["-l"]);
    }
}

/// Makes and mounts an ext4 of `bytes` named after `tag` and this process. Panics with what is
/// missing when it cannot (a test that needs it must not pass without it).
pub fn loop_mount(tag: &str, bytes: u64) -> LoopMount {
    try_loop_mount(tag, bytes).unwrap_or_else(|why| panic!("{why}"))
}

/// [`loop_mount`], or why it cannot be made.
pub fn try_loop_mount(tag: &str, bytes: u64) -> Result<LoopMount, String> {
    let base = std::env::temp_dir().join(format!("vramio-{tag}-{}", std::process::id()));
    let image = base.with_extension("img");
    let dir = base.with_extension("mnt");
    std::fs::create_dir_all(&dir).map_err(|e| format!("mount point {}: {e}", dir.display()))?;
    let f = std::fs::File::create(&image).map_err(|e| format!("image: {e}"))?;
    f.set_len(bytes).map_err(|e| format!("size image: {e}"))?;
    let m = LoopMount { dir, image };
    let ok = |c: &mut Command| c.status().map(|s| s.success()).unwrap_or(false);
    if !ok(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&m.image)) {
        return Err("mkfs.ext4 failed (needs e2fsprogs)".into());
    }
    if !ok(Command::new("mount")
        .args(["-o", "loop"])
        .arg(&m.image)
        .arg(&m.dir))
    {
        return Err("loop mount failed (needs root and loop devices)".into());
    }
    Ok(m)
}

/// Skips `test` (prints why, returns `None`) outside CI; in CI, where it must run, fails.
fn skip<T>(test: &str, why: &str) -> Option<T> {
    ci::skip(test, why);
    None
}

/// Whether this process may mount (it is root); see [`skip`] for when it is not.
pub fn may_mount_or_skip(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    skip::<()>(test, "not root, so nothing can be mounted");
    false
}

/// [`loop_mount`] where it can be made; see [`skip`] for where it cannot.
pub fn loop_mount_or_skip(test: &str, tag: &str, bytes: u64) -> Option<LoopMount> {
    if !may_mount_or_skip(test) {
        return None;
    }
    match try_loop_mount(tag, bytes) {
        Ok(m) => Some(m),
        Err(why) => skip(test, &why),
    }
}

/// Fills the filesystem under `dir` until a write fails with ENOSPC (root's reserved blocks
/// too: the tests run as root), then gives back `leave` bytes. Returns the filler file; removing
/// it frees the space again.
pub fn fill(dir: &Path, leave: u64) -> PathBuf {
    let path = dir.join("filler.bin");
    let mut f = std::fs::File::create(&path).expect("filler file");
    let chunk = vec![0x5au8; 64 * 1024];
    // Halving chunks down to one byte, so no block is left half used.
    let mut size = chunk.len();
    while size > 0 {
        match f.write(&chunk[..size]) {
            Ok(0) => size /= 2,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => size /= 2,
            Err(e) => panic!("fill {}: {e}", path.display()),
        }
    }
    let len = f.metadata().expect("filler size").len();
    f.set_len(len.saturating_sub(leave))
        .expect("give back space");
    f.sync_all().expect("sync the filler");
    path
}
