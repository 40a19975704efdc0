//! Tests of the standby: NVML read on the leading thread, the standby asleep while it answers, and
//! a hung call taken over at the deadline with the frames going on.

use super::*;
use crate::collect::sources::block::ProcDiskstats;
use crate::collect::sources::mounts::ProcMounts;
use crate::collect::sources::system::ProcSystem;
use crate::collect::sources::{GpuReading, GpuSource};
use crate::host_feed::HostFeedConfig;
use shared::diagnosis::Thresholds;
use shared::{Bytes, Frame, Gpu, GpuMemory, GpuState, NvmlStatus, Source};
use std::sync::Condvar;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Long enough that a loaded machine does not hold a fast call up past the deadline (half of it).
const INTERVAL: Duration = Duration::from_millis(200);

/// A GPU source whose `hang_at`-th call blocks until released; each reading's used memory is the
/// number of the call that made it.
#[derive(Default)]
struct Gate {
    calls: AtomicU32,
    hang_at: u32,
    released: Mutex<bool>,
    release: Condvar,
    inside: AtomicBool,
    /// Set when two threads were in the source at once.
    overlapped: AtomicBool,
}

impl Gate {
    fn hanging_at(call: u32) -> Arc<Gate> {
        Arc::new(Gate {
            hang_at: call,
            ..Gate::default()
        })
    }

    fn release(&self) {
        *self.released.lock().expect("lock") = true;
        self.release.notify_all();
    }
}

struct Gated(Arc<Gate>);

impl GpuSource for Gated {
    fn sample(&mut self) -> GpuReading {
        let gate = &self.0;
        if gate.inside.swap(true, Ordering::SeqCst) {
            gate.overlapped.store(true, Ordering::SeqCst);
        }
        let call = gate.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if call == gate.hang_at {
            let mut released = gate.released.lock().expect("lock");
            while !*released {
                released = gate.release.wait(released).expect("lock");
            }
        }
        gate.inside.store(false, Ordering::SeqCst);
        let mut gpu = Gpu::unread(
            0,
            Some("GPU-gate".into()),
            Some("Gate".into()),
            GpuState::Ok,
        );
        gpu.memory = Some(GpuMemory {
            total_bytes: Bytes(1000),
            used_bytes: Bytes(u64::from(call)),
            reserved_bytes: None,
            free_bytes: Bytes(1000 - u64::from(call)),
        });
        GpuReading {
            nvml: NvmlStatus::Ok {
                driver_version: Some("test".into()),
            },
            gpus: vec![gpu],
            errors: Vec::new(),
        }
    }
}

fn start(gate: &Arc<Gate>) -> (HostFeed, Running) {
    let sources = Sources {
        gpu: Box::new(Gated(gate.clone())),
        mounts: Box::new(ProcMounts::new()),
        block: Box::new(ProcDiskstats::new()),
        system: Box::new(ProcSystem::new()),
        jobs: Box::new(crate::collect::sources::jobs::ProcJobs::system()),
    };
    let hub = HostFeed::new("t", INTERVAL, HostFeedConfig::for_interval(INTERVAL));
    let config = SamplerConfig {
        host: "t".into(),
        interval: INTERVAL,
    };
    let diagnoser = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
    let running = spawn(sources, config, hub.clone(), diagnoser).expect("threads start");
    (hub, running)
}

fn frames(hub: &HostFeed) -> Vec<Frame> {
    hub.history_after(None)
        .iter()
        .map(|e| serde_json::from_str(e.frame_json()).expect("a frame"))
        .collect()
}

fn used(f: &Frame) -> Option<u64> {
    f.gpus.first()?.memory.as_ref().map(|m| m.used_bytes.0)
}

fn gpu_busy(f: &Frame) -> bool {
    f.errors_for(Source::Gpu)
        .any(|e| e.message.contains("did not answer"))
}

#[test]
fn nvml_is_read_on_the_leading_thread_and_the_standby_sleeps_while_it_answers() {
    let gate = Gate::hanging_at(u32::MAX);
    let (hub, running) = start(&gate);
    std::thread::sleep(INTERVAL * 10);
    let wakes = running.standby_wakes();
    running.stop_and_join();
    let frames = frames(&hub);
    assert!(frames.len() >= 5, "{} frames in 10 intervals", frames.len());
    // Every frame has its own reading, in call order: one call per tick.
    let readings: Vec<Option<u64>> = frames.iter().map(used).collect();
    let expected: Vec<Option<u64>> = (1..=frames.len() as u64).map(Some).collect();
    assert_eq!(readings, expected);
    assert!(
        frames
            .iter()
            .all(|f| !gpu_busy(f) && !f.block_devices.is_empty())
    );
    assert_eq!(wakes, 0, "the standby woke while NVML answered in time");
    assert!(!gate.overlapped.load(Ordering::SeqCst));
}

#[test]
fn a_hung_call_is_taken_over_at_the_deadline_and_its_reading_lands_late() {
    // The third call hangs until released.
    let gate = Gate::hanging_at(3);
    let (hub, running) = start(&gate);
    std::thread::sleep(INTERVAL * 12);
    let during = frames(&hub);
    gate.release();
    std::thread::sleep(INTERVAL * 6);
    running.stop_and_join();
    let after_stop = hub.history_len();
    std::thread::sleep(INTERVAL * 3);
    assert_eq!(
        hub.history_len(),
        after_stop,
        "no frame after stop_and_join"
    );
    let all = frames(&hub);

    // Frames went on at the interval while the call hung.
    let hung_at = during
        .iter()
        .position(gpu_busy)
        .expect("a frame marks NVML busy");
    assert_eq!(used(&during[hung_at - 1]), Some(2));
    let busy = &during[hung_at..];
    assert!(busy.len() >= 5, "{} frames while NVML hung", busy.len());
    for f in busy {
        assert!(gpu_busy(f), "{:?}", f.errors);
        assert_eq!(f.gpus.len(), 1, "the GPU keeps its card");
        assert_eq!(f.gpus[0].uuid.as_deref(), Some("GPU-gate"));
        assert_eq!(used(f), None, "an old reading is not re-stamped as new");
        assert!(!f.block_devices.is_empty() && f.system.is_some());
    }
    // Once released, the next frame carries the late reading, and fresh ones follow.
    let late = all
        .iter()
        .position(|f| used(f) == Some(3))
        .expect("the late reading lands");
    assert!(late > hung_at);
    let after: Vec<Option<u64>> = all[late..].iter().map(used).collect();
    let expected: Vec<Option<u64>> = (3..3 + after.len() as u64).map(Some).collect();
    assert_eq!(after, expected, "one call per tick again");
    assert!(after.len() >= 3, "{after:?}");
    assert!(
        !gate.overlapped.load(Ordering::SeqCst),
        "one thread in NVML at a time"
    );
}

#[test]
fn stop_does_not_wait_for_a_hung_call() {
    let gate = Gate::hanging_at(1);
    let (hub, running) = start(&gate);
    std::thread::sleep(INTERVAL * 3);
    let t = Instant::now();
    running.stop_and_join();
    // The call hangs until released: any bound shows stop did not wait for it.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let n = hub.history_len();
    assert!(n >= 1, "the standby published while the first call hung");
    // The hung thread returns after the stop and publishes nothing.
    gate.release();
    std::thread::sleep(INTERVAL * 3);
    assert_eq!(hub.history_len(), n);
}
