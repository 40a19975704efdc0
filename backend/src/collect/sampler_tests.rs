//! Tests of how the sampler reads its mount source: inline when the source bounds its own calls,
//! through a reader thread otherwise, and within the tick's deadline either way.

use super::*;
use crate::collect::sources::block::ProcDiskstats;
use crate::collect::sources::mounts::{ProcMounts, VfsCounts};
use crate::collect::sources::system::ProcSystem;
use crate::collect::sources::{GpuSource, MountSource};

/// No GPUs, answered at once.
struct NoGpus;

impl GpuSource for NoGpus {
    fn sample(&mut self) -> GpuReading {
        GpuReading {
            nvml: NvmlStatus::Ok {
                driver_version: None,
            },
            gpus: Vec::new(),
            errors: Vec::new(),
        }
    }
}

/// How long the hanging sources hang: far past any tick.
const HANG: Duration = Duration::from_secs(3);

/// A mount source with no deadlines of its own that hangs far past any tick.
struct HangingMounts;

impl MountSource for HangingMounts {
    fn sample(&mut self) -> Result<Reading<Vec<Mount>>, SourceFailure> {
        std::thread::sleep(HANG);
        Ok(Reading::ok(Vec::new()))
    }
}

/// `statvfs` of a FUSE mount that hangs; every other mount answers.
fn hangs_on_fuse(path: &str) -> Result<VfsCounts, String> {
    if path == "/mnt/hung" {
        std::thread::sleep(HANG);
    }
    Ok(VfsCounts {
        blocks: 100,
        bfree: 50,
        bavail: 40,
        frsize: 4096,
        files: 10,
        ffree: 5,
    })
}

fn sampler(mounts: Box<dyn MountSource>, interval: Duration) -> Sampler {
    let sources = Sources {
        gpu: Box::new(NoGpus),
        mounts,
        block: Box::new(ProcDiskstats::new()),
        system: Box::new(ProcSystem::new()),
        jobs: Box::new(crate::collect::sources::jobs::ProcJobs::system()),
    };
    let config = SamplerConfig {
        host: "t".into(),
        interval,
    };
    Sampler::new(sources, config).expect("sampler")
}

#[test]
fn a_mount_source_that_bounds_its_calls_is_read_inline_within_the_tick() {
    let dir = std::env::temp_dir().join(format!("vramio-sampler-mounts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mountinfo = dir.join("mountinfo");
    let text = "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
                80 22 0:50 / /mnt/hung rw - fuse.hungfs hungfs rw\n\
                81 22 0:51 / /mnt/fine rw - fuse.finefs finefs rw\n";
    std::fs::write(&mountinfo, text).expect("write");
    let mounts = ProcMounts::with_calls(&mountinfo, dir.join("sys"), hangs_on_fuse, |_| true);
    // 100 ms: the tick waits 50 ms for slow calls, less than the mount source's own 200 ms.
    let interval = Duration::from_millis(100);
    let mut s = sampler(Box::new(mounts), interval);
    assert!(matches!(s.mounts, Mounts::Inline(_)));
    for tick in 0..2 {
        let t = Instant::now();
        let frame = s.tick();
        let took = t.elapsed();
        // Far less than the 3 s hang (a generous bound: a busy machine may take a while).
        assert!(
            took < HANG / 2,
            "tick {tick} took {took:?}: it waited for the hung call"
        );
        let points: Vec<&str> = frame
            .mounts
            .iter()
            .map(|m| m.mount_point.as_str())
            .collect();
        assert_eq!(points, ["/", "/mnt/fine"], "tick {tick}: the others report");
        let mount_errors: Vec<_> = frame.errors_for(Source::Mounts).collect();
        assert_eq!(mount_errors.len(), 1, "tick {tick}: {mount_errors:?}");
        assert_eq!(mount_errors[0].item.as_deref(), Some("/mnt/hung"));
        assert!(frame.cost.iter().any(|c| c.source == Source::Mounts));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_mount_source_without_deadlines_runs_on_a_reader_thread() {
    let interval = Duration::from_millis(100);
    let mut s = sampler(Box::new(HangingMounts), interval);
    assert!(matches!(s.mounts, Mounts::Threaded(_)));
    let t = Instant::now();
    let frame = s.tick();
    let took = t.elapsed();
    assert!(
        took < HANG / 2,
        "the tick took {took:?}: it waited for the hung source"
    );
    assert!(
        frame
            .errors_for(Source::Mounts)
            .any(|e| e.item.is_none() && e.message.contains("did not answer within this tick")),
        "{:?}",
        frame.errors
    );
    assert!(frame.system.is_some(), "the /proc sources still arrive");
}

#[test]
fn frames_are_numbered_by_tick_from_one() {
    let dir = std::env::temp_dir().join(format!("vramio-sampler-seq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mountinfo = dir.join("mountinfo");
    std::fs::write(&mountinfo, "").expect("write");
    let mounts = ProcMounts::with_calls(&mountinfo, dir.join("sys"), hangs_on_fuse, |_| true);
    let mut s = sampler(Box::new(mounts), Duration::from_millis(100));
    let seqs: Vec<u64> = (0..3).map(|_| s.tick().seq).collect();
    assert_eq!(seqs, [1, 2, 3], "no frame is left unnumbered (0)");
    let _ = std::fs::remove_dir_all(&dir);
}
