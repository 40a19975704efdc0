//! Reading a small `/proc` or `/sys` file whole, each tick, into a buffer kept between ticks.
//!
//! `std::fs::read_to_string` asks the file its size first (`statx`; procfs says 0) and then reads
//! in small, growing steps from 32 bytes, so one `/proc/meminfo` costs about ten system calls and a
//! fresh allocation per tick. [`ProcFile`] reads into spare room of the buffer it kept from the
//! last read, which holds the whole file. On procfs and sysfs it also keeps the file open: the
//! kernel generates the text afresh on every read from offset 0 (`fs/seq_file.c`,
//! `seq_read_iter`: "if request is to read from zero offset, reset iterator"), so a tick costs a
//! `pread` that returns the text and one that returns 0, with no path walk, open or close (those
//! were about half of the kernel's time for a small file here). Files elsewhere (test fixtures) are
//! opened for every read, so a file replaced or removed between reads is seen as such.

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Smallest read: every file vramio reads each tick fits (`/proc/stat` on a few hundred cores
/// grows it once).
const FIRST_CAPACITY: usize = 16 * 1024;

/// `f_type` of procfs and sysfs (`include/uapi/linux/magic.h`), whose files are generated at read.
const PROC_SUPER_MAGIC: u64 = 0x9fa0;
const SYSFS_MAGIC: u64 = 0x6265_6572;

/// One file's path, the buffer its reads reuse and, on procfs or sysfs, the open file.
#[derive(Debug)]
pub struct ProcFile {
    path: PathBuf,
    buf: Vec<u8>,
    kept: Option<File>,
}

impl ProcFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ProcFile {
            path: path.into(),
            buf: Vec::new(),
            kept: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is kept open between reads (it is on procfs or sysfs).
    pub fn is_kept_open(&self) -> bool {
        self.kept.is_some()
    }

    /// The file's whole text now. Invalid UTF-8 (which procfs never writes) is an
    /// `InvalidData` error.
    pub fn read(&mut self) -> std::io::Result<&str> {
        let kept = match self.kept.take() {
            // A kept file that fails (a sysfs device gone, say) is opened again, as a first read.
            Some(file) => read_whole(&file, &mut self.buf).ok().map(|len| (file, len)),
            None => None,
        };
        let len = match kept {
            Some((file, len)) => {
                self.kept = Some(file);
                len
            }
            None => {
                let file = File::open(&self.path)?;
                let len = read_whole(&file, &mut self.buf)?;
                if generated_at_read(&file) {
                    self.kept = Some(file);
                }
                len
            }
        };
        std::str::from_utf8(&self.buf[..len])
            .map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
    }
}

/// Reads `file` from offset 0 until a read returns 0, growing `buf` as needed; the text's length.
fn read_whole(file: &File, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    if buf.len() < FIRST_CAPACITY {
        buf.resize(FIRST_CAPACITY, 0);
    }
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len().saturating_mul(2), 0);
        }
        let offset = u64::try_from(len).unwrap_or(u64::MAX);
        match file.read_at(&mut buf[len..], offset) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether `file` is on procfs or sysfs (asked once, when it is opened).
fn generated_at_read(file: &File) -> bool {
    rustix::fs::fstatfs(file).is_ok_and(|s| {
        #[allow(
            clippy::unnecessary_cast,
            reason = "f_type is i64 on some targets and u32 on others"
        )]
        let kind = s.f_type as u64;
        kind == PROC_SUPER_MAGIC || kind == SYSFS_MAGIC
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_files_whole_and_again() {
        let mut f = ProcFile::new("/proc/self/status");
        let first = f.read().expect("readable").to_owned();
        assert!(
            first.starts_with("Name:") && first.contains("\nVmRSS:"),
            "{first}"
        );
        let again = f.read().expect("readable");
        assert!(again.starts_with("Name:"));
        assert!(f.is_kept_open(), "procfs files stay open");
    }

    #[test]
    fn a_kept_proc_file_is_generated_afresh_at_each_read() {
        let mut f = ProcFile::new("/proc/uptime");
        let first = f.read().expect("readable").to_owned();
        assert!(f.is_kept_open());
        // uptime counts in 10 ms steps: a read that returned the text of the last one would not move.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let second = f.read().expect("readable").to_owned();
        assert!(f.is_kept_open());
        let secs = |t: &str| -> f64 {
            t.split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .expect("uptime seconds")
        };
        assert!(secs(&second) > secs(&first), "{first} then {second}");
    }

    #[test]
    fn a_file_larger_than_the_buffer_is_read_whole() {
        let dir = std::env::temp_dir().join(format!("vramio-procfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("big");
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, &text).expect("write");
        let mut f = ProcFile::new(&path);
        assert_eq!(f.read().expect("readable"), text);
        assert!(!f.is_kept_open(), "a regular file is opened for every read");
        std::fs::write(&path, "short\n").expect("write");
        assert_eq!(
            f.read().expect("readable"),
            "short\n",
            "no leftovers of the longer read"
        );
        std::fs::remove_file(&path).expect("remove");
        assert!(
            f.read().is_err(),
            "a removed file is not read through an old handle"
        );
        let _ = std::fs::remove_dir_all(&dir);
        let mut gone = ProcFile::new(dir.join("missing"));
        assert!(gone.read().is_err());
    }
}
