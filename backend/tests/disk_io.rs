//! Real disk I/O against `ProcDiskstats`: the write rate it reports, integrated over its samples,
//! must account for what the kernel counted on the disk under a file vramio's test writes.

#[path = "common/direct_io.rs"]
mod direct_io;

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

fn device<'a>(devs: &'a [BlockDevice], name: &str) -> &'a BlockDevice {
    devs.iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} missing from a sample"))
}

#[test]
fn integrated_write_rate_matches_the_kernel_counters() {
    let candidates = [
        std::env::temp_dir(),
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    ];
    let mut found = None;
    for dir in &candidates {
        match whole_disk_of(dir) {
            Ok(disk) => {
                found = Some((dir.clone(), disk));
                break;
            }
            Err(why) => eprintln!("disk_io: {why}"),
        }
    }
    let Some((dir, disk)) = found else {
        eprintln!("disk_io: SKIPPED, no block device backs {candidates:?}");
        return;
    };
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
        std::thread::spawn(move || {
            let mut src = ProcDiskstats::new();
            let mut samples: Vec<(Instant, Vec<BlockDevice>)> = Vec::new();
            loop {
                let last = stop.load(Ordering::SeqCst);
                let devs = src.sample().expect("/proc/diskstats readable");
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
    let counted = last.write_bytes_total.0 - first.write_bytes_total.0;

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
