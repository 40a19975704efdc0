//! The sampler: one tick per interval, reading every source and publishing a `Frame` to the hub.
//!
//! Runs on its own OS thread, never on the async runtime. Sources that can hang (NVML, a mount
//! source whose calls have no deadline of their own) each run on a worker thread of their own and
//! are waited for only until the tick's deadline: a slow or hung source is reported in the frame's
//! `errors` (GPUs keep their identity with no readings, mounts their last values, named as such),
//! while the fast /proc sources still arrive on time. A mount source that bounds each risky call
//! itself ([`MountSource::bounds_its_calls`], as the real one does) is read on this thread with
//! the tick's deadline: no hand-off, and a hung mount is its own per-item error. Each source's
//! cost is timed and carried in the frame.

use super::deadline::{DeadlineReader, Polled};
use super::sources::{
    BlockSource, GpuReading, MountSource, Reading, SourceFailure, Sources, SystemSource,
};
use super::ticker::{Stop, Ticker};
use crate::hub::Hub;
use crate::hub::diagnoser::Diagnoser;
use shared::{Frame, Mount, NvmlStatus, Source, SourceCost, SourceError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Sampling interval floor (DESIGN section 3): below this /proc and NVML costs dominate.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Share of the interval a tick waits for slow sources before publishing without them.
const SLOW_SOURCE_BUDGET: f64 = 0.5;

/// Sampler settings.
#[derive(Clone, Debug)]
pub struct SamplerConfig {
    pub host: String,
    pub interval: Duration,
}

/// How the mount source is read.
enum Mounts {
    /// On the sampler's thread: the source bounds its own calls.
    Inline(Box<dyn MountSource>),
    /// Through a reader thread, waited for until the tick's deadline.
    Threaded(DeadlineReader<MountsResult>),
}

type MountsResult = Result<Reading<Vec<Mount>>, SourceFailure>;

/// Builds frames from the sources. `tick` is public so benchmarks and tests can drive it.
pub struct Sampler {
    config: SamplerConfig,
    gpu: DeadlineReader<GpuReading>,
    mounts: Mounts,
    block: Box<dyn BlockSource>,
    system: Box<dyn SystemSource>,
    last_gpu: Option<(GpuReading, Instant)>,
    last_mounts: Option<(Vec<Mount>, Instant)>,
}

impl Sampler {
    pub fn new(sources: Sources, config: SamplerConfig) -> std::io::Result<Self> {
        let Sources {
            mut gpu,
            mut mounts,
            block,
            system,
        } = sources;
        Ok(Sampler {
            config,
            gpu: DeadlineReader::spawn("vramio-gpu", move || gpu.sample())?,
            mounts: if mounts.bounds_its_calls() {
                Mounts::Inline(mounts)
            } else {
                Mounts::Threaded(DeadlineReader::spawn("vramio-mounts", move || {
                    mounts.sample()
                })?)
            },
            block,
            system,
            last_gpu: None,
            last_mounts: None,
        })
    }

    /// Reads every source once and returns the frame (seq 0: the hub assigns it).
    pub fn tick(&mut self) -> Frame {
        let start = Instant::now();
        let deadline = start + self.config.interval.mul_f64(SLOW_SOURCE_BUDGET);
        let interval_ms = u64::try_from(self.config.interval.as_millis()).unwrap_or(u64::MAX);
        let mut frame = Frame::empty(self.config.host.clone(), 0, now_ms(), interval_ms);

        // Ask the slow sources first so they work while the fast ones are read here.
        let gpu_asked = self.gpu.request();
        let mounts_asked = match &mut self.mounts {
            Mounts::Threaded(reader) => reader.request(),
            Mounts::Inline(_) => false,
        };

        let t = Instant::now();
        match self.block.sample() {
            Ok(devices) => frame.block_devices = devices,
            Err(e) => frame.errors.push(e.into_error(Source::BlockDevices)),
        }
        frame.cost.push(cost(Source::BlockDevices, t.elapsed()));

        let t = Instant::now();
        match self.system.sample() {
            Ok(stats) => frame.system = Some(stats),
            Err(e) => frame.errors.push(e.into_error(Source::System)),
        }
        frame.cost.push(cost(Source::System, t.elapsed()));

        // An inline mount source is read while the GPU reader works.
        let mounts = self.poll_mounts(mounts_asked, deadline);
        self.collect_gpu(&mut frame, gpu_asked, deadline);
        self.collect_mounts(&mut frame, mounts);
        frame
    }

    fn collect_gpu(&mut self, frame: &mut Frame, asked: bool, deadline: Instant) {
        let polled = if asked {
            self.gpu.wait(deadline)
        } else {
            Polled::Dead
        };
        match polled {
            Polled::Fresh(reading, took) => {
                frame.cost.push(cost(Source::Gpu, took));
                apply_gpu(frame, &reading);
                self.last_gpu = Some((reading, Instant::now()));
            }
            Polled::Busy { for_ } => {
                if let Some((reading, _)) = &self.last_gpu {
                    // Keep the GPUs' identities so the page keeps its cards, but never re-stamp
                    // old readings as this tick's: they are absent until NVML answers again.
                    frame.nvml = reading.nvml.clone();
                    frame.gpus = reading.gpus.iter().map(unanswered).collect();
                    frame.errors.push(slow_error(Source::Gpu, for_, None));
                } else {
                    frame.nvml = NvmlStatus::Error {
                        message: format!("NVML has not answered for {} ms", for_.as_millis()),
                    };
                    frame.errors.push(slow_error(Source::Gpu, for_, None));
                }
            }
            Polled::Dead => {
                frame.nvml = NvmlStatus::Error {
                    message: "the GPU reader thread stopped".into(),
                };
                frame.errors.push(SourceError {
                    source: Source::Gpu,
                    item: None,
                    message: "the GPU reader thread stopped".into(),
                });
            }
        }
    }

    fn poll_mounts(&mut self, asked: bool, deadline: Instant) -> Polled<MountsResult> {
        match &mut self.mounts {
            Mounts::Inline(source) => {
                let t = Instant::now();
                let result = source.sample_until(deadline);
                Polled::Fresh(result, t.elapsed())
            }
            Mounts::Threaded(reader) if asked => reader.wait(deadline),
            Mounts::Threaded(_) => Polled::Dead,
        }
    }

    fn collect_mounts(&mut self, frame: &mut Frame, polled: Polled<MountsResult>) {
        match polled {
            Polled::Fresh(result, took) => {
                frame.cost.push(cost(Source::Mounts, took));
                match result {
                    Ok(reading) => {
                        frame.mounts = reading.value.clone();
                        frame.errors.extend(reading.errors);
                        self.last_mounts = Some((reading.value, Instant::now()));
                    }
                    Err(e) => frame.errors.push(e.into_error(Source::Mounts)),
                }
            }
            Polled::Busy { for_ } => {
                let age = self.last_mounts.as_ref().map(|(m, at)| {
                    frame.mounts = m.clone();
                    at.elapsed()
                });
                frame.errors.push(slow_error(Source::Mounts, for_, age));
            }
            Polled::Dead => frame.errors.push(SourceError {
                source: Source::Mounts,
                item: None,
                message: "the mount reader thread stopped".into(),
            }),
        }
    }
}

/// A GPU as known from an earlier tick, with no readings: NVML has not answered this one.
fn unanswered(g: &shared::Gpu) -> shared::Gpu {
    shared::Gpu::unread(
        g.index,
        g.uuid.clone(),
        g.name.clone(),
        shared::GpuState::Error,
    )
}

fn apply_gpu(frame: &mut Frame, reading: &GpuReading) {
    frame.nvml = reading.nvml.clone();
    frame.gpus = reading.gpus.clone();
    frame.errors.extend(reading.errors.iter().cloned());
}

fn slow_error(source: Source, for_: Duration, age: Option<Duration>) -> SourceError {
    let shown = match age {
        Some(age) => format!("; showing values from {:.1} s ago", age.as_secs_f64()),
        None => String::new(),
    };
    SourceError {
        source,
        item: None,
        message: format!(
            "{} did not answer within this tick (busy for {} ms){shown}",
            match source {
                Source::Gpu => "NVML",
                Source::Mounts => "statvfs",
                Source::BlockDevices => "/proc/diskstats",
                Source::System => "/proc",
            },
            for_.as_millis()
        ),
    }
}

fn cost(source: Source, took: Duration) -> SourceCost {
    SourceCost {
        source,
        micros: u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The running sampling thread.
pub struct Running {
    stop: Arc<Stop>,
    thread: std::thread::JoinHandle<()>,
}

impl Running {
    /// A handle that stops the thread (e.g. from a signal handler task).
    pub fn stopper(&self) -> Arc<Stop> {
        self.stop.clone()
    }

    /// Stops the thread and waits for its current tick to end.
    pub fn stop_and_join(self) {
        self.stop.stop();
        let _ = self.thread.join();
    }
}

/// Starts the sampling thread: one tick per interval on the shared [`Ticker`] (missed ticks are
/// skipped, not bunched), each frame published to `hub` and diagnosed by `diagnoser`, until
/// stopped.
pub fn spawn(mut sampler: Sampler, hub: Hub, mut diagnoser: Diagnoser) -> std::io::Result<Running> {
    let stop = Stop::new();
    let mut ticker = Ticker::new(sampler.config.interval, stop.clone());
    let thread = std::thread::Builder::new()
        .name("vramio-sampler".into())
        .spawn(move || {
            while ticker.tick(None).is_some() {
                diagnoser.publish_to(&hub, sampler.tick());
            }
        })?;
    Ok(Running { stop, thread })
}

#[cfg(test)]
#[path = "sampler_tests.rs"]
mod tests;
