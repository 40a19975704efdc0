//! GPUs through NVML (nvml-wrapper): one [`Gpu`] per device each tick, with its processes.
//!
//! The sampler calls [`NvmlSource`] from its own thread (with a timeout) through [`GpuSource`].
//! NVML is initialised on the first call, and again after a failure with exponential backoff
//! ([`Backoff`]), never on every tick. A missing `libnvidia-ml` is [`NvmlStatus::NoDriver`], not an
//! error. The parts:
//! - [`device`]: one device's tick. Static facts (uuid, name, power limit) are cached per device,
//!   so a tick costs about five NVML calls per GPU; a GPU that answers `NVML_ERROR_GPU_IS_LOST`
//!   keeps the uuid and name of its last good tick with `GpuState::Lost` while the others report.
//! - [`memory`] and [`processes`]: the calls that come in generations (memory v2/v1, process lists
//!   `_v3`/`_v2`), each through a per-device, per-session [`versioned::Fallback`] so drivers
//!   before R510 still show memory and processes; the frame says which answered (`nvml_api`).
//!   Process lists are read every [`processes::PROCESS_LIST_PERIOD`] and carried in between.
//! - [`mig`]: a GPU in MIG mode's instances, each its own memory pool; the process lists say
//!   which instance each process runs on.
//! - [`identity`]: whether a listed pid is visible here, its `comm`, and its user through NSS,
//!   cached per pid and start time.

pub mod device;
pub mod identity;
pub mod memory;
pub mod mig;
pub mod processes;
pub mod versioned;

use device::{Slot, Tick};
use identity::{Identities, PidNamespace};
use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;
use shared::{NvmlStatus, Source, SourceError};
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{GpuReading, GpuSource};

/// First wait before re-initialising NVML after a failure; doubles up to [`BACKOFF_MAX`].
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// Longest wait between two init attempts: a driver that comes back is seen within a minute.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// When to try NVML init next: exponential backoff measured on the monotonic clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    next_try: Option<Instant>,
    delay: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next_try: None,
            delay: BACKOFF_FIRST,
        }
    }
}

impl Backoff {
    /// Whether an attempt is due at `now`.
    pub fn ready(&self, now: Instant) -> bool {
        self.next_try.is_none_or(|t| now >= t)
    }
    /// An attempt failed at `now`: wait the current delay, and double it for next time.
    pub fn failed(&mut self, now: Instant) {
        self.next_try = Some(now + self.delay);
        self.delay = (self.delay * 2).min(BACKOFF_MAX);
    }
    /// An attempt succeeded: the next failure starts again from [`BACKOFF_FIRST`].
    pub fn succeeded(&mut self) {
        *self = Backoff::default();
    }
    /// The wait the next failure will get.
    pub fn delay(&self) -> Duration {
        self.delay
    }
}

/// GPUs through NVML.
pub struct NvmlSource {
    lib: Option<PathBuf>,
    nvml: Option<Nvml>,
    status: NvmlStatus,
    retry: Backoff,
    /// Counts successful inits, so what a device remembers from an earlier session is refreshed.
    session: u64,
    /// By NVML index; kept across sessions so a lost GPU still has its uuid and name.
    slots: Vec<Slot>,
    identities: Identities,
}

impl NvmlSource {
    /// A source that loads `lib` (`--nvml-lib`) or the system's `libnvidia-ml.so.1` on first use.
    pub fn new(lib: Option<PathBuf>) -> Self {
        NvmlSource {
            lib,
            nvml: None,
            status: NvmlStatus::Error {
                message: "NVML not initialised yet".to_owned(),
            },
            retry: Backoff::default(),
            session: 0,
            slots: Vec::new(),
            identities: Identities::system(),
        }
    }

    /// The same source deciding process presence for the PID namespace `ns` instead of the one
    /// vramio runs in: the seam tests use (the fake NVML lists pids of this namespace).
    pub fn with_pid_namespace(mut self, ns: PidNamespace) -> Self {
        self.identities = Identities::new(ns, PathBuf::from("/proc"), identity::nss_user_name);
        self
    }

    /// Evicts cached process facts of pids that are in no device's list any more.
    fn evict_gone_pids(&mut self) {
        let listed: HashSet<u32> = self
            .slots
            .iter()
            .filter_map(|s| s.carried())
            .flat_map(|c| c.list.iter().map(|p| p.pid))
            .collect();
        self.identities.retain(|pid| listed.contains(&pid));
    }

    fn try_init(&mut self, now: Instant) {
        let result = match &self.lib {
            Some(path) => Nvml::builder().lib_path(path.as_os_str()).init(),
            None => Nvml::init(),
        };
        match result {
            Ok(nvml) => {
                self.status = NvmlStatus::Ok {
                    driver_version: nvml.sys_driver_version().ok(),
                };
                self.nvml = Some(nvml);
                self.session += 1;
                self.retry.succeeded();
            }
            Err(e) => {
                self.status = init_failure_status(&e);
                self.retry.failed(now);
            }
        }
    }

    /// A reading without GPUs: NVML is not usable this tick.
    fn without_gpus(&self) -> GpuReading {
        let errors = match &self.status {
            NvmlStatus::Error { message } => vec![SourceError {
                source: Source::Gpu,
                item: None,
                message: message.clone(),
            }],
            _ => Vec::new(),
        };
        GpuReading {
            nvml: self.status.clone(),
            gpus: Vec::new(),
            errors,
        }
    }
}

/// The status for an init failure: no library (or no kernel driver) is "no driver", the rest errors.
fn init_failure_status(e: &NvmlError) -> NvmlStatus {
    match e {
        NvmlError::LibloadingError(inner) => NvmlStatus::NoDriver {
            message: format!("no NVIDIA driver found ({inner})"),
        },
        NvmlError::DriverNotLoaded => NvmlStatus::NoDriver {
            message: "no NVIDIA driver found (libnvidia-ml is installed but the kernel driver is \
                      not loaded)"
                .to_owned(),
        },
        other => NvmlStatus::Error {
            message: format!("NVML failed to initialise: {other}"),
        },
    }
}

impl GpuSource for NvmlSource {
    fn sample(&mut self) -> GpuReading {
        let now = Instant::now();
        if self.nvml.is_none() && self.retry.ready(now) {
            self.try_init(now);
        }
        let Some(nvml) = &self.nvml else {
            return self.without_gpus();
        };
        let count = match nvml.device_count() {
            Ok(n) => n,
            Err(e) => {
                // The driver itself failed: drop this session (nvmlShutdown) and init again later.
                self.nvml = None;
                self.status = NvmlStatus::Error {
                    message: format!("NVML failed to count GPUs: {e}"),
                };
                self.retry.failed(now);
                return self.without_gpus();
            }
        };
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let mut errors = Vec::new();
        let mut gpus = Vec::with_capacity(count as usize);
        let mut read_processes = false;
        for index in 0..count {
            let slot = index as usize;
            if self.slots.len() <= slot {
                self.slots.resize_with(slot + 1, Slot::default);
            }
            let mut tick = Tick {
                index,
                now,
                now_ms,
                session: self.session,
                slot: &mut self.slots[slot],
                identities: &mut self.identities,
                errors: &mut errors,
                read_processes: false,
            };
            gpus.push(tick.read(nvml));
            read_processes |= tick.read_processes;
        }
        for gone in self.slots.iter_mut().skip(count as usize) {
            gone.forget_processes();
        }
        if read_processes {
            self.evict_gone_pids();
        }
        GpuReading {
            nvml: self.status.clone(),
            gpus,
            errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_minute_and_resets() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        assert!(b.ready(t0));
        b.failed(t0);
        assert!(!b.ready(t0));
        assert!(!b.ready(t0 + Duration::from_millis(999)));
        assert!(b.ready(t0 + Duration::from_secs(1)));
        let mut delays = Vec::new();
        for _ in 0..8 {
            delays.push(b.delay().as_secs());
            b.failed(t0);
        }
        assert_eq!(delays, [2, 4, 8, 16, 32, 60, 60, 60]);
        b.succeeded();
        assert!(b.ready(t0));
        assert_eq!(b.delay(), BACKOFF_FIRST);
    }

    #[test]
    fn missing_library_is_no_driver_and_is_not_retried_every_tick() {
        let mut source = NvmlSource::new(Some(PathBuf::from("/nonexistent/libnvidia-ml.so.1")));
        let reading = source.sample();
        match &reading.nvml {
            NvmlStatus::NoDriver { message } => {
                assert!(message.starts_with("no NVIDIA driver found ("), "{message}")
            }
            other => panic!("expected NoDriver, got {other:?}"),
        }
        assert!(reading.gpus.is_empty());
        assert!(reading.errors.is_empty());
        assert!(!source.retry.ready(Instant::now()));
        assert_eq!(source.retry.delay(), BACKOFF_FIRST * 2);
    }
}
