//! Reading a small `/proc` or `/sys` file whole, each tick, into a buffer kept between ticks.
//!
//! `std::fs::read_to_string` asks the file its size first (`statx`; procfs says 0) and then reads
//! in small, growing steps from 32 bytes, so one `/proc/meminfo` costs about ten system calls and a
//! fresh allocation per tick. [`ProcFile`] reads into spare room of the buffer it kept from the
//! last read, which holds the whole file. On procfs and sysfs it also keeps the file open: the
//! kernel generates the text afresh on every read from offset 0 (`fs/seq_file.c`,
//! `seq_read_iter`: "if request is to read from zero offset, reset iterator"), so a tick costs a
//! single `pread`, with no path walk, open or close (those were about half of the kernel's time for
//! a small file here), and no second `pread` to see the end of a short text ([`WHOLE_BELOW`]).
//! Files elsewhere (test fixtures) are opened for every read, so a file replaced or removed between
//! reads is seen as such.

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Smallest read: every file vramio reads each tick fits (`/proc/stat` on a few hundred cores
/// grows it once).
const FIRST_CAPACITY: usize = 16 * 1024;

/// A read from offset 0 of a procfs or sysfs file of short records ([`ProcFile::short_records`])
/// that returns fewer bytes than this has the whole text. Both generate text through `seq_file`
/// (`fs/seq_file.c`, `seq_read_iter`), which fills its buffer (a page or more, and pages are at
/// least 4 KiB) with record after record and returns early only at the end of the records, when
/// the user's buffer is full (ours has room to spare), or when the next record would overflow its
/// own buffer, which leaves less free than the longest record: under 512 bytes in the files opened
/// so (a `/proc/diskstats` line is at most about 400; `/proc/stat`, `meminfo` and `pressure/*` are
/// one record). A sysfs attribute is shown whole, at most a page. A file with longer records
/// (`maps`, `mountinfo` with long paths) is read to the end. Each tick this saves the `pread` that
/// would return 0, one per file.
const WHOLE_BELOW: usize = 4096 - 512;

/// `f_type` of procfs and sysfs (`include/uapi/linux/magic.h`), whose files are generated at read.
const PROC_SUPER_MAGIC: u64 = 0x9fa0;
const SYSFS_MAGIC: u64 = 0x6265_6572;
/// cgroupfs v1 and v2: kernfs, whose files are `seq_file`s generated at read like sysfs's.
const CGROUP_SUPER_MAGIC: u64 = 0x0027_e0eb;
const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;

/// One file's path, the buffer its reads reuse and, on procfs or sysfs, the open file.
#[derive(Debug)]
pub struct ProcFile {
    path: PathBuf,
    buf: Vec<u8>,
    kept: Option<File>,
    /// Whether every record of the text is under 512 bytes (see [`WHOLE_BELOW`]).
    short_records: bool,
}

impl ProcFile {
    /// A file read to the end at every read.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ProcFile {
            path: path.into(),
            buf: Vec::new(),
            kept: None,
            short_records: false,
        }
    }

    /// A file whose records are each under 512 bytes: on procfs or sysfs, a first read shorter
    /// than [`WHOLE_BELOW`] is the whole text.
    pub fn short_records(path: impl Into<PathBuf>) -> Self {
        ProcFile {
            short_records: true,
            ..ProcFile::new(path)
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
            Some(file) => read_whole(
                |b, at| file.read_at(b, at),
                &mut self.buf,
                self.short_records,
            )
            .ok()
            .map(|len| (file, len)),
            None => None,
        };
        let len = match kept {
            Some((file, len)) => {
                self.kept = Some(file);
                len
            }
            None => {
                let file = File::open(&self.path)?;
                let generated = generated_at_read(&file);
                let one_read = generated && self.short_records;
                let len = read_whole(|b, at| file.read_at(b, at), &mut self.buf, one_read)?;
                if generated {
                    self.kept = Some(file);
                }
                len
            }
        };
        std::str::from_utf8(&self.buf[..len])
            .map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
    }
}

/// The whole text of `file`, already open on procfs or sysfs, whose records are each under 512
/// bytes or which is one record (`/proc/<pid>/stat`), read into `buf` (which may be shared by many
/// files): one `pread` for a short text (see [`WHOLE_BELOW`]). For callers that keep many such
/// files open and want one buffer for all of them.
pub fn read_generated<'b>(file: &File, buf: &'b mut Vec<u8>) -> std::io::Result<&'b str> {
    let bytes = read_generated_bytes(file, buf)?;
    std::str::from_utf8(bytes).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
}

/// [`read_generated`] as bytes, for a text that may hold any byte (a `comm` set by the process).
pub fn read_generated_bytes<'b>(file: &File, buf: &'b mut Vec<u8>) -> std::io::Result<&'b [u8]> {
    let len = read_whole(|b, at| file.read_at(b, at), buf, true)?;
    Ok(&buf[..len])
}

/// Reads a file from offset 0 with `read_at` (a `pread`) until a read returns 0, growing `buf` as
/// needed; the text's length. With `short_records` (on procfs or sysfs) a first read shorter than
/// [`WHOLE_BELOW`] also ends it.
fn read_whole(
    read_at: impl Fn(&mut [u8], u64) -> std::io::Result<usize>,
    buf: &mut Vec<u8>,
    short_records: bool,
) -> std::io::Result<usize> {
    if buf.len() < FIRST_CAPACITY {
        buf.resize(FIRST_CAPACITY, 0);
    }
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len().saturating_mul(2), 0);
        }
        let offset = u64::try_from(len).unwrap_or(u64::MAX);
        match read_at(&mut buf[len..], offset) {
            Ok(0) => return Ok(len),
            Ok(n) if short_records && len == 0 && n < WHOLE_BELOW => return Ok(n),
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether `file` is on procfs or sysfs (asked once, when it is opened).
pub fn generated_at_read(file: &File) -> bool {
    rustix::fs::fstatfs(file).is_ok_and(|s| {
        #[allow(
            clippy::unnecessary_cast,
            reason = "f_type is i64 on some targets and u32 on others"
        )]
        let kind = s.f_type as u64;
        [
            PROC_SUPER_MAGIC,
            SYSFS_MAGIC,
            CGROUP_SUPER_MAGIC,
            CGROUP2_SUPER_MAGIC,
        ]
        .contains(&kind)
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

    /// Reads counted by [`chunked`].
    type Calls = std::rc::Rc<std::cell::Cell<u32>>;

    /// A file served `chunk` bytes per read, counting the reads.
    fn chunked(
        text: &[u8],
        chunk: usize,
    ) -> (impl Fn(&mut [u8], u64) -> std::io::Result<usize>, Calls) {
        let calls = Calls::default();
        let counted = calls.clone();
        let text = text.to_vec();
        let read = move |buf: &mut [u8], at: u64| {
            counted.set(counted.get() + 1);
            let at = usize::try_from(at).unwrap_or(usize::MAX).min(text.len());
            let n = buf.len().min(chunk).min(text.len() - at);
            buf[..n].copy_from_slice(&text[at..at + n]);
            Ok(n)
        };
        (read, calls)
    }

    #[test]
    fn a_short_generated_text_takes_one_read_and_anything_else_reads_to_the_end() {
        let small = b"cpu  1 2 3 4\n".repeat(40);
        let (read, calls) = chunked(&small, 4096);
        let mut buf = Vec::new();
        assert_eq!(
            read_whole(&read, &mut buf, true).expect("reads"),
            small.len()
        );
        assert_eq!(&buf[..small.len()], &small[..]);
        assert_eq!(
            calls.get(),
            1,
            "procfs text under a page: no read for the end"
        );

        let (read, calls) = chunked(&small, 4096);
        assert_eq!(
            read_whole(&read, &mut buf, false).expect("reads"),
            small.len()
        );
        assert_eq!(
            calls.get(),
            2,
            "a regular file is read until a read returns 0"
        );

        // seq_file hands a long text out a page at a time: every page is read, then the end.
        let long: Vec<u8> = (0..600)
            .flat_map(|i| format!("   8 {i} sda{i} 1 2 3\n").into_bytes())
            .collect();
        let (read, calls) = chunked(&long, 4096);
        assert_eq!(
            read_whole(&read, &mut buf, true).expect("reads"),
            long.len()
        );
        assert_eq!(&buf[..long.len()], &long[..]);
        assert_eq!(
            calls.get(),
            u32::try_from(long.len().div_ceil(4096)).expect("few pages") + 1
        );
        // A page cut short by a record that would not fit still reads on.
        let (read, _) = chunked(&long, 4096 - 300);
        assert_eq!(
            read_whole(&read, &mut buf, true).expect("reads"),
            long.len()
        );
    }

    #[test]
    fn a_generated_text_longer_than_a_page_is_read_whole() {
        // `/proc/self/maps` of a test binary runs to many pages; two reads of it agree whenever
        // nothing mapped in between, which a retry rules out.
        let mut f = ProcFile::new("/proc/self/maps");
        let agreed = (0..5).any(|_| {
            let ours = f.read().expect("readable").to_owned();
            let reference = std::fs::read_to_string("/proc/self/maps").expect("readable");
            ours == reference
        });
        assert!(
            agreed,
            "ProcFile and read_to_string disagree on /proc/self/maps"
        );
        let text = f.read().expect("readable");
        assert!(text.len() > WHOLE_BELOW, "maps is {} bytes", text.len());
    }

    #[test]
    fn a_short_proc_text_read_in_one_read_is_the_whole_text() {
        let mut f = ProcFile::short_records("/proc/version");
        let reference = std::fs::read_to_string("/proc/version").expect("readable");
        assert_eq!(f.read().expect("readable"), reference);
        assert!(f.is_kept_open());
        assert_eq!(
            f.read().expect("readable"),
            reference,
            "and again, kept open"
        );
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
