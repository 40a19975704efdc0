//! Real disk I/O against `ProcDiskstats`: the write rate it reports, integrated over its samples,
//! must account for what the kernel counted on the disk under a file vramio's test writes.
//!
//! The file goes on the disk under the temp folder. Where no block device backs it (overlay,
//! tmpfs: containers, CI runners), the test makes a loop-mounted ext4 when `CI` is set, and fails
//! if it cannot; only outside CI does it skip, saying so. `VRAMIO_DISK_IO_DIR` names the folder
//! to try instead (`/dev/shm` shows the loop path on any machine).

#[path = "common/direct_io.rs"]
mod direct_io;
#[path = "common/loop_mount.rs"]
mod loop_mount;

use direct_io::AlignedBuf;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use shared::BlockDevice;
use vramio::collect::sources::BlockSource;
use vramio::collect::sources::block::{ProcDiskstats, parent_disk, parse_diskstats};

const FILE_BYTES: usize = 256 << 20;
const CHUNK_BYTES: usize = 1 << 20;
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// Removes the file when the test ends, passed or not.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The whole disk (a `/proc/diskstats` name) holding `dir`, or why there is none.
fn whole_disk_of(dir: &Path) -> Result<String, String> {
    let st = rustix::fs::stat(dir).map_err(|e| format!("stat {}: {e}", dir.display()))?;
    let (major, minor) = (rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev));
    if major == 0 {
        return Err(format!(
            "{} is on an anonymous device {major}:{minor} (tmpfs, overlay, btrfs)",
            dir.display()
        ));
    }
    let text = std::fs::read_to_string("/proc/diskstats").map_err(|e| e.to_string())?;
    let stats = parse_diskstats(&text).map_err(|e| e.to_string())?;
    let name = stats
        .iter()
        .find(|d| d.major as u32 == major && d.minor as u32 == minor)
        .map(|d| d.name.clone())
        .ok_or_else(|| format!("{major}:{minor} is not in /proc/diskstats"))?;
    // A partition counts in its disk's line, which is what ProcDiskstats reports.
    let sys = Path::new("/sys/class/block").join(&name);
    if sys.join("partition").exists() {
        let disk = std::fs::canonicalize(&sys)
            .ok()
            .and_then(|p| Some(p.parent()?.file_name()?.to_str()?.to_owned()));
        if let Some(disk) = disk {
            return Ok(disk);
        }
    }
    let names: Vec<&str> = stats.iter().map(|d| d.name.as_str()).collect();
    Ok(parent_disk(&name, names.iter().copied())
        .unwrap_or(&name)
        .to_owned())
}

use loop_mount::in_ci;

/// Where the test writes and the disk it watches there: `ProcDiskstats` itself, or, on a loop
/// device (which vramio leaves out of its disks: snaps and images are not storage a job waits on),
/// `ProcDiskstats` over a copy of `/proc/diskstats` that shows the loop device under another
/// name. The counters, the parser and the rates are the real ones either way.
struct Target {
    dir: PathBuf,
    disk: String,
    /// `(loop name, name it is shown as, copy of /proc/diskstats)`.
    alias: Option<(String, String, PathBuf)>,
    _copy: Option<Removed>,
    _mount: Option<loop_mount::LoopMount>,
}

impl Target {
    fn source(&self) -> Box<dyn FnMut() -> Vec<BlockDevice> + Send> {
        match &self.alias {
            None => {
                let mut src = ProcDiskstats::new();
                Box::new(move || src.sample().expect("/proc/diskstats readable"))
            }
            Some((real, shown, copy)) => {
                let (real, shown, copy) = (real.clone(), shown.clone(), copy.clone());
                let mut src = ProcDiskstats::with_paths(&copy, "/nonexistent/sys/block");
                Box::new(move || {
                    let text = std::fs::read_to_string("/proc/diskstats").expect("diskstats");
                    let renamed: String = text
                        .lines()
                        .map(|l| {
                            let mut f: Vec<&str> = l.split_whitespace().collect();
                            if f.get(2) == Some(&real.as_str()) {
                                f[2] = &shown;
                            }
                            f.join(" ") + "\n"
                        })
                        .collect();
                    std::fs::write(&copy, renamed).expect("write the diskstats copy");
                    src.sample().expect("the diskstats copy parses")
                })
            }
        }
    }
}

fn target() -> Option<Target> {
    let candidates = match std::env::var_os("VRAMIO_DISK_IO_DIR") {
        Some(dir) => vec![PathBuf::from(dir)],
        None => vec![
            std::env::temp_dir(),
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        ],
    };
    for dir in &candidates {
        match whole_disk_of(dir) {
            Ok(disk) => {
                return Some(Target {
                    dir: dir.clone(),
                    disk,
                    alias: None,
                    _copy: None,
                    _mount: None,
                });
            }
            Err(why) => eprintln!("disk_io: {why}"),
        }
    }
    if !in_ci() {
        eprintln!(
            "disk_io: SKIPPED, no block device backs {candidates:?} (with CI set, a loop device is used)"
        );
        return None;
    }
    // The file plus ext4's own metadata.
    let mount = loop_mount::loop_mount("disk-io", FILE_BYTES as u64 + (128 << 20));
    let real = whole_disk_of(&mount.dir).expect("the loop mount is on a block device");
    let shown = format!("vramiotest{}", real.trim_start_matches("loop"));
    let copy = mount.image.with_extension("diskstats");
    Some(Target {
        dir: mount.dir.clone(),
        disk: shown.clone(),
        alias: Some((real, shown, copy.clone())),
        _copy: Some(Removed(copy)),
        _mount: Some(mount),
    })
}

fn device<'a>(devs: &'a [BlockDevice], name: &str) -> &'a BlockDevice {
    devs.iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} missing from a sample"))
}

#[test]
fn integrated_write_rate_matches_the_kernel_counters() {
    let Some(target) = target() else {
        return;
    };
    let (dir, disk) = (target.dir.clone(), target.disk.clone());
    let path = dir.join(format!("vramio-disk-io-{}.bin", std::process::id()));
    let _cleanup = Removed(path.clone());
    eprintln!(
        "disk_io: writing {} MiB to {} on {disk}",
        FILE_BYTES >> 20,
        path.display()
    );

    // The sampler thread: a sample every 20 ms until told to stop, then one last sample.
    let stop = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = mpsc::channel();
    let sampler = {
        let stop = Arc::clone(&stop);
        let mut sample = target.source();
        std::thread::spawn(move || {
            let mut samples: Vec<(Instant, Vec<BlockDevice>)> = Vec::new();
            loop {
                let last = stop.load(Ordering::SeqCst);
                let devs = sample();
                samples.push((Instant::now(), devs));
                if samples.len() == 1 {
                    let _ = started_tx.send(());
                }
                if last {
                    return samples;
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
        })
    };
    started_rx.recv().expect("sampler started");

    let mut buf = AlignedBuf::new(CHUNK_BYTES);
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let direct = direct_io::o_direct();
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(direct)
        .open(&path)
        .expect("open with O_DIRECT");
    for _ in 0..FILE_BYTES / CHUNK_BYTES {
        file.write_all(buf.as_mut_slice()).expect("O_DIRECT write");
    }
    file.sync_all().expect("fsync");
    drop(file);
    std::thread::sleep(SAMPLE_EVERY);
    stop.store(true, Ordering::SeqCst);
    let samples = sampler.join().expect("sampler thread");

    assert!(samples.len() >= 3, "only {} samples", samples.len());
    let first = device(&samples[0].1, &disk);
    assert_eq!(
        first.write_bytes_per_sec, None,
        "the first sample has no rate"
    );
    let last = device(&samples[samples.len() - 1].1, &disk);
    let counted =
        last.write_bytes_total.map_or(0, |b| b.0) - first.write_bytes_total.map_or(0, |b| b.0);

    let mut integrated = 0.0;
    for pair in samples.windows(2) {
        let (t0, _) = &pair[0];
        let (t1, devs) = &pair[1];
        let rate = device(devs, &disk)
            .write_bytes_per_sec
            .expect("a rate after the first sample");
        integrated += rate.0 * t1.duration_since(*t0).as_secs_f64();
    }
    eprintln!(
        "disk_io: {} samples, kernel counted {counted} B, rates integrate to {integrated:.0} B",
        samples.len()
    );
    assert!(
        counted >= FILE_BYTES as u64,
        "the kernel counted {counted} B written on {disk}, less than the {FILE_BYTES} B written"
    );
    let error = (integrated - counted as f64).abs() / counted as f64;
    assert!(
        error <= 0.05,
        "integrated rate {integrated:.0} B is {:.2} % off the counters' {counted} B",
        error * 100.0
    );
}
