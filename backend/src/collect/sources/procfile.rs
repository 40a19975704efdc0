//! Reading a small `/proc` file whole into a buffer that is kept between ticks.
//!
//! `std::fs::read_to_string` asks the file its size first (`statx`; procfs says 0) and then reads
//! in small, growing steps from 32 bytes, so one `/proc/meminfo` costs about ten system calls and a
//! fresh allocation per tick. [`ProcFile`] reads into spare room of the buffer it kept from the
//! last read, which holds the whole file: an open, one read with data, one that returns 0, a close.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Smallest read: every file vramio reads each tick fits (`/proc/stat` on a few hundred cores
/// grows it once).
const FIRST_CAPACITY: usize = 16 * 1024;

/// One file's path and the buffer its reads reuse.
#[derive(Debug)]
pub struct ProcFile {
    path: PathBuf,
    buf: Vec<u8>,
}

impl ProcFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ProcFile {
            path: path.into(),
            buf: Vec::new(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's whole text now. Invalid UTF-8 (which procfs never writes) is an
    /// `InvalidData` error.
    pub fn read(&mut self) -> std::io::Result<&str> {
        let mut file = std::fs::File::open(&self.path)?;
        if self.buf.len() < FIRST_CAPACITY {
            self.buf.resize(FIRST_CAPACITY, 0);
        }
        let mut len = 0;
        loop {
            if len == self.buf.len() {
                self.buf.resize(self.buf.len().saturating_mul(2), 0);
            }
            match file.read(&mut self.buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        std::str::from_utf8(&self.buf[..len])
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
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
        std::fs::write(&path, "short\n").expect("write");
        assert_eq!(
            f.read().expect("readable"),
            "short\n",
            "no leftovers of the longer read"
        );
        let _ = std::fs::remove_dir_all(&dir);
        let mut gone = ProcFile::new(dir.join("missing"));
        assert!(gone.read().is_err());
    }
}
