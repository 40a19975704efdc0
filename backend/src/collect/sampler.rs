//! The sampler: one tick per interval, reading every source into a `Frame`.
//!
//! Runs on OS threads, never on the async runtime. Sources that can hang are waited for only until
//! the tick's deadline: a slow or hung source is reported in the frame's `errors` (GPUs keep their
//! identity with no readings, mounts their last values, named as such), while the fast /proc
//! sources still arrive on time. NVML is read either on a reader thread of its own
//! ([`Sampler::tick`], for `check`, `record` and tests) or, in `serve`, by the thread leading the
//! tick with a standby thread that takes over at the deadline ([`super::standby`]). A mount source
//! that bounds each risky call itself ([`MountSource::bounds_its_calls`], as the real one does) is
//! read on the tick's thread with the tick's deadline; one that does not, on a reader thread. Each
//! source's cost is timed and carried in the frame.

use super::deadline::{DeadlineReader, Polled};
use super::sources::jobs::JobSource;
use super::sources::{
    BlockSource, GpuReading, GpuSource, MountSource, Reading, SourceFailure, Sources, SystemSource,
};
use shared::{Frame, Mount, NvmlStatus, Source, SourceCost, SourceError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Sampling interval floor (docs/architecture.md#4-commands-and-flags): below this /proc and NVML costs dominate.
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

/// How the GPU source is read.
enum Gpus {
    /// Through a reader thread, waited for until the tick's deadline ([`Sampler::tick`]).
    Reader(DeadlineReader<GpuReading>),
    /// By the thread that leads the tick, with a standby thread to take the tick over if it
    /// hangs ([`super::standby`]); `None` while a thread that was taken over is still in it.
    Inline(Option<Box<dyn GpuSource>>),
}

/// A tick begun: the frame with the fast sources read, waiting for the GPUs and the mounts.
pub(super) struct Begun {
    frame: Frame,
    pub(super) deadline: Instant,
    gpu_asked: bool,
    mounts: Polled<MountsResult>,
}

/// Builds frames from the sources. `tick` is public so benchmarks and tests can drive it.
pub struct Sampler {
    config: SamplerConfig,
    gpu: Gpus,
    mounts: Mounts,
    block: Box<dyn BlockSource>,
    system: Box<dyn SystemSource>,
    jobs: Box<dyn JobSource>,
    last_gpu: Option<(GpuReading, Instant)>,
    last_mounts: Option<(Vec<Mount>, Instant)>,
    /// Ticks begun so far: the seq of the frames this sampler makes (the hub that publishes a
    /// frame gives it the host's seq).
    ticks: u64,
}

impl Sampler {
    /// A sampler whose GPU source is read on a thread of its own ([`Sampler::tick`]).
    pub fn new(sources: Sources, config: SamplerConfig) -> std::io::Result<Self> {
        let mut gpu = sources.gpu;
        let reader = DeadlineReader::spawn("vramio-gpu", move || gpu.sample())?;
        Self::with(
            sources.mounts,
            sources.block,
            sources.system,
            sources.jobs,
            config,
            Gpus::Reader(reader),
        )
    }

    /// A sampler whose GPU source is read by the thread that leads each tick ([`super::standby`]).
    pub(super) fn inline(sources: Sources, config: SamplerConfig) -> std::io::Result<Self> {
        let gpus = Gpus::Inline(Some(sources.gpu));
        Self::with(
            sources.mounts,
            sources.block,
            sources.system,
            sources.jobs,
            config,
            gpus,
        )
    }

    fn with(
        mut mounts: Box<dyn MountSource>,
        block: Box<dyn BlockSource>,
        system: Box<dyn SystemSource>,
        jobs: Box<dyn JobSource>,
        config: SamplerConfig,
        gpu: Gpus,
    ) -> std::io::Result<Self> {
        Ok(Sampler {
            config,
            gpu,
            mounts: if mounts.bounds_its_calls() {
                Mounts::Inline(mounts)
            } else {
                Mounts::Threaded(DeadlineReader::spawn("vramio-mounts", move || {
                    mounts.sample()
                })?)
            },
            block,
            system,
            jobs,
            last_gpu: None,
            last_mounts: None,
            ticks: 0,
        })
    }

    /// Reads every source once and returns the frame, numbered by this sampler's count of ticks.
    pub fn tick(&mut self) -> Frame {
        let begun = self.begin();
        let gpu = match &mut self.gpu {
            Gpus::Reader(reader) if begun.gpu_asked => reader.wait(begun.deadline),
            Gpus::Reader(_) | Gpus::Inline(_) => Polled::Dead,
        };
        self.finish(begun, gpu)
    }

    /// Starts a tick: asks the reader threads, and reads the fast sources (and an inline mount
    /// source) here.
    pub(super) fn begin(&mut self) -> Begun {
        let start = Instant::now();
        let deadline = start + self.config.interval.mul_f64(SLOW_SOURCE_BUDGET);
        let interval_ms = u64::try_from(self.config.interval.as_millis()).unwrap_or(u64::MAX);
        self.ticks += 1;
        let mut frame = Frame::empty(self.config.host.clone(), self.ticks, now_ms(), interval_ms);

        // Ask the slow sources first so they work while the fast ones are read here.
        let gpu_asked = match &mut self.gpu {
            Gpus::Reader(reader) => reader.request(),
            Gpus::Inline(_) => false,
        };
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
        Begun {
            frame,
            deadline,
            gpu_asked,
            mounts,
        }
    }

    /// Ends a tick with what the GPU source gave (`Busy` when it did not answer in time).
    pub(super) fn finish(&mut self, begun: Begun, gpu: Polled<GpuReading>) -> Frame {
        let Begun {
            mut frame, mounts, ..
        } = begun;
        self.collect_gpu(&mut frame, gpu);
        self.collect_mounts(&mut frame, mounts);
        // From the GPUs' process lists: on this thread, after NVML, before the frame leaves.
        let t = Instant::now();
        frame.jobs = self.jobs.sample(&frame.gpus);
        frame.cost.push(cost(Source::Jobs, t.elapsed()));
        frame
    }

    /// The inline GPU source, for the thread leading this tick to read; `None` while another
    /// thread is still in it.
    pub(super) fn take_gpu(&mut self) -> Option<Box<dyn GpuSource>> {
        match &mut self.gpu {
            Gpus::Inline(source) => source.take(),
            Gpus::Reader(_) => None,
        }
    }

    /// Gives the inline GPU source back.
    pub(super) fn put_gpu(&mut self, source: Box<dyn GpuSource>) {
        self.gpu = Gpus::Inline(Some(source));
    }

    fn collect_gpu(&mut self, frame: &mut Frame, polled: Polled<GpuReading>) {
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
                Source::Jobs => "the jobs' processes",
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

#[cfg(test)]
#[path = "sampler_tests.rs"]
mod tests;
