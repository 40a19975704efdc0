//! A loop-mounted ext4 for tests that need a real block device under a path: made with
//! `mkfs.ext4` and `mount -o loop` (root, loop devices and e2fsprogs, which `.ci/run` installs),
//! unmounted and removed when dropped. Include with
//! `#[path = "common/loop_mount.rs"] mod loop_mount;`.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use std::path::PathBuf;
use std::process::Command;

/// A mounted ext4 image; `dir` is its mount point.
pub struct LoopMount {
    pub dir: PathBuf,
    pub image: PathBuf,
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
        let _ = std::fs::remove_file(&self.image);
    }
}

/// Makes and mounts an ext4 of `bytes` named after `tag` and this process. Panics with what is
/// missing when it cannot (a test that needs it must not pass without it).
pub fn loop_mount(tag: &str, bytes: u64) -> LoopMount {
    let base = std::env::temp_dir().join(format!("vramio-{tag}-{}", std::process::id()));
    let image = base.with_extension("img");
    let dir = base.with_extension("mnt");
    std::fs::create_dir_all(&dir).expect("mount point");
    let f = std::fs::File::create(&image).expect("image");
    f.set_len(bytes).expect("size image");
    let m = LoopMount { dir, image };
    let ok = |c: &mut Command| c.status().map(|s| s.success()).unwrap_or(false);
    assert!(
        ok(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&m.image)),
        "mkfs.ext4 failed (needs e2fsprogs)"
    );
    assert!(
        ok(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&m.image)
            .arg(&m.dir)),
        "loop mount failed (needs root and loop devices)"
    );
    m
}
