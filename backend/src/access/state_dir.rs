//! The state directory (`--state-dir`, default `$XDG_STATE_HOME/vramio` or
//! `~/.local/state/vramio`): mode 0700, owned by this user, with private files (0600) written
//! atomically (temp file, fsync, rename, fsync of the directory).
//!
//! A directory or file that other users can read is refused with the `chmod` that fixes it, never
//! repaired silently: a token others could read is a token others have.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Largest private file read (tokens, keys, the share store).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum StateDirError {
    #[error("no state directory: set --state-dir, VRAMIO_STATE_DIR, XDG_STATE_HOME or HOME")]
    NoHome,
    #[error("cannot create the state directory {}: {source}", path.display())]
    Create { path: PathBuf, source: io::Error },
    #[error("the state directory {} is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error(
        "{} is open to other users (mode {mode:04o}); it holds vramio's token: run `chmod {want:o} {}`",
        path.display(),
        path.display()
    )]
    TooOpen { path: PathBuf, mode: u32, want: u32 },
    #[error("{} belongs to uid {owner}, not to this user (uid {me})", path.display())]
    NotOwned { path: PathBuf, owner: u32, me: u32 },
    #[error("{} is larger than {MAX_FILE_BYTES} bytes", path.display())]
    TooLarge { path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot lock {}: {source}", path.display())]
    Lock { path: PathBuf, source: io::Error },
}

/// The lock file a server holds for as long as it serves from a state directory.
pub const LOCK_FILE: &str = "server.lock";

/// A state directory's server lock (an exclusive `flock` on [`LOCK_FILE`]), held until dropped
/// or the process ends, however it ends: one server per state directory, so `url`, `share`, the
/// share store and `server.json` always belong to that one server.
#[derive(Debug)]
pub struct ServerLock {
    _file: File,
}

/// An opened, checked state directory.
#[derive(Clone, Debug)]
pub struct StateDir {
    path: PathBuf,
}

/// `$XDG_STATE_HOME/vramio` (an absolute XDG_STATE_HOME only, as the spec says), else
/// `$HOME/.local/state/vramio`.
pub fn default_path() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|h| h.join(".local").join("state"))
    })?;
    Some(base.join("vramio"))
}

fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Refuses `meta` (of `path`) when it is not this user's or when group/other bits in `forbidden`
/// are set.
fn check_private(path: &Path, meta: &fs::Metadata, want: u32) -> Result<(), StateDirError> {
    let me = my_uid();
    if meta.uid() != me {
        return Err(StateDirError::NotOwned {
            path: path.to_owned(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(StateDirError::TooOpen {
            path: path.to_owned(),
            mode,
            want,
        });
    }
    Ok(())
}

impl StateDir {
    /// Opens `path` (or the default), creating it 0700 when missing; refuses one that other
    /// users can enter or that belongs to someone else.
    pub fn open(path: Option<&Path>) -> Result<StateDir, StateDirError> {
        let path = match path {
            Some(p) => p.to_owned(),
            None => default_path().ok_or(StateDirError::NoHome)?,
        };
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(|source| StateDirError::Create {
                        path: path.clone(),
                        source,
                    })?;
                }
                match fs::DirBuilder::new().mode(0o700).create(&path) {
                    // Made at the same moment by another vramio: checked below like any other.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    other => other.map_err(|source| StateDirError::Create {
                        path: path.clone(),
                        source,
                    })?,
                }
            }
            Err(source) => return Err(StateDirError::Read { path, source }),
            Ok(meta) if !meta.is_dir() => return Err(StateDirError::NotADirectory { path }),
            Ok(_) => {}
        }
        let meta = fs::metadata(&path).map_err(|source| StateDirError::Read {
            path: path.clone(),
            source,
        })?;
        check_private(&path, &meta, 0o700)?;
        Ok(StateDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` inside the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Reads the private file `name`; `None` when it does not exist.
    pub fn read(&self, name: &str) -> Result<Option<Vec<u8>>, StateDirError> {
        read_private(&self.file(name))
    }

    /// Replaces `name` with `bytes` atomically, mode 0600.
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<(), StateDirError> {
        self.through_temp(name, bytes, |tmp, target| fs::rename(tmp, target))
    }

    /// Creates `name` with `bytes` (0600) only if it does not exist yet, whole or not at all:
    /// written to a temp file first, then linked into place, which fails if another process made
    /// it meanwhile (`O_EXCL` semantics, also on NFS). `false` when it existed: read that one.
    pub fn create_exclusive(&self, name: &str, bytes: &[u8]) -> Result<bool, StateDirError> {
        let mut linked = false;
        self.through_temp(name, bytes, |tmp, target| {
            match fs::hard_link(tmp, target) {
                Ok(()) => {
                    linked = true;
                    fs::remove_file(tmp)
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => fs::remove_file(tmp),
                Err(e) => Err(e),
            }
        })?;
        Ok(linked)
    }

    /// Writes `bytes` to a new private temp file beside `name` and syncs it, lets `place` put it
    /// in place (rename or link), then syncs the directory. The temp file is removed on failure.
    fn through_temp(
        &self,
        name: &str,
        bytes: &[u8],
        place: impl FnOnce(&Path, &Path) -> io::Result<()>,
    ) -> Result<(), StateDirError> {
        let target = self.file(name);
        let fail = |source| StateDirError::Write {
            path: target.clone(),
            source,
        };
        let tmp = self.temp_name(name).map_err(fail)?;
        let written = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            place(&tmp, &target)?;
            File::open(&self.path)?.sync_all()
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written.map_err(fail)
    }

    /// Takes the directory's server lock without waiting; `None` when another process holds it.
    /// The lock file records this process' pid (for the refusal another server prints).
    pub fn lock_server(&self) -> Result<Option<ServerLock>, StateDirError> {
        let path = self.file(LOCK_FILE);
        let fail = |source| StateDirError::Lock {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(fail)?;
        let meta = file.metadata().map_err(fail)?;
        check_private(&path, &meta, 0o600)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Ok(None),
            Err(fs::TryLockError::Error(e)) => return Err(fail(e)),
        }
        let pid = std::process::id().to_string();
        (|| {
            file.set_len(0)?;
            file.write_all(pid.as_bytes())?;
            file.sync_all()
        })()
        .map_err(fail)?;
        self.remove_leftovers();
        Ok(Some(ServerLock { _file: file }))
    }

    /// Removes the temp files of writes that a killed process left between creating and renaming
    /// them (`.NAME.tmp-XXXX`). Only the lock's holder calls it: no other writer is at work.
    fn remove_leftovers(&self) {
        let Ok(entries) = fs::read_dir(&self.path) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') && name.contains(".tmp-") {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// The pid the lock file names (the server that holds or last held the lock).
    pub fn lock_holder(&self) -> Option<u32> {
        let bytes = self.read(LOCK_FILE).ok()??;
        std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
    }

    fn temp_name(&self, name: &str) -> io::Result<PathBuf> {
        let mut suffix = [0u8; 6];
        getrandom::fill(&mut suffix).map_err(io::Error::other)?;
        Ok(self.file(&format!(
            ".{name}.tmp-{}",
            suffix
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        )))
    }

    /// Removes `name` if it is there.
    pub fn remove(&self, name: &str) -> Result<(), StateDirError> {
        let path = self.file(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(StateDirError::Write { path, source: e })
            }
            _ => Ok(()),
        }
    }
}

/// Reads a file that must be this user's and closed to others (0600 or stricter); `None` when it
/// does not exist.
pub fn read_private(path: &Path) -> Result<Option<Vec<u8>>, StateDirError> {
    let fail = |source| StateDirError::Read {
        path: path.to_owned(),
        source,
    };
    let f = match File::open(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        other => other.map_err(fail)?,
    };
    let meta = f.metadata().map_err(fail)?;
    check_private(path, &meta, 0o600)?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(StateDirError::TooLarge {
            path: path.to_owned(),
        });
    }
    let mut out = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(fail)?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> PathBuf {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).expect("random");
        std::env::temp_dir().join(format!("vramio-state-{}", u64::from_le_bytes(b)))
    }

    #[test]
    fn creates_0700_and_writes_0600_atomically() {
        let root = temp();
        let dir = StateDir::open(Some(&root.join("state"))).expect("opens");
        let mode = fs::metadata(dir.path()).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        dir.write_atomic("token", b"abc").expect("writes");
        dir.write_atomic("token", b"def").expect("replaces");
        let meta = fs::metadata(dir.file("token")).expect("meta");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(dir.read("token").expect("reads"), Some(b"def".to_vec()));
        assert_eq!(dir.read("missing").expect("reads"), None);
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .expect("lists")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "no temp files left");
        let _ = fs::remove_dir_all(root);
    }

    #[test]
    fn exclusive_creation_keeps_the_first_file() {
        let root = temp();
        let dir = StateDir::open(Some(&root)).expect("opens");
        assert!(
            dir.create_exclusive("share-key", b"first")
                .expect("creates")
        );
        assert!(
            !dir.create_exclusive("share-key", b"second")
                .expect("exists")
        );
        assert_eq!(
            dir.read("share-key").expect("reads"),
            Some(b"first".to_vec())
        );
        let mode = fs::metadata(dir.file("share-key"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<String> = fs::read_dir(dir.path())
            .expect("lists")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["share-key"], "no temp file left");
        let _ = fs::remove_dir_all(root);
    }

    #[test]
    fn one_server_lock_per_directory() {
        let root = temp();
        let dir = StateDir::open(Some(&root)).expect("opens");
        let held = dir.lock_server().expect("locks").expect("free");
        assert!(
            dir.lock_server().expect("asks").is_none(),
            "a second lock on the same directory is refused"
        );
        assert_eq!(dir.lock_holder(), Some(std::process::id()));
        drop(held);
        // A write killed between its temp file and the rename leaves the temp file: the next
        // server to take the lock removes it.
        fs::write(dir.file(".shares.json.tmp-0a1b2c"), b"half").expect("leftover");
        let held = dir.lock_server().expect("locks").expect("free");
        assert!(!dir.file(".shares.json.tmp-0a1b2c").exists());
        drop(held);
        assert!(
            dir.lock_server().expect("asks").is_some(),
            "free once dropped"
        );
        let _ = fs::remove_dir_all(root);
    }

    #[test]
    fn open_directories_and_files_are_refused_with_the_fix() {
        let root = temp();
        fs::create_dir_all(&root).expect("mkdir");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).expect("chmod");
        let e = StateDir::open(Some(&root)).expect_err("0755 is refused");
        let text = e.to_string();
        assert!(
            text.contains("mode 0755") && text.contains("chmod 700"),
            "{text}"
        );
        fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).expect("chmod");
        let dir = StateDir::open(Some(&root)).expect("0700 opens");
        fs::write(dir.file("token"), b"x").expect("write");
        fs::set_permissions(dir.file("token"), fs::Permissions::from_mode(0o644)).expect("chmod");
        let e = dir.read("token").expect_err("0644 token is refused");
        assert!(e.to_string().contains("chmod 600"), "{e}");
        let _ = fs::remove_dir_all(root);
    }
}
