//! GPUs through NVML (nvml-wrapper): one [`Gpu`] per device each tick, with its processes.
//!
//! The sampler calls [`NvmlSource`] from its own thread (with a timeout) through [`GpuSource`].
//! NVML is initialised on the first call, and again after a failure with exponential backoff
//! ([`Backoff`]), never on every tick. A missing `libnvidia-ml` is [`NvmlStatus::NoDriver`], not an
//! error. Static facts (uuid, name, power limit) are cached per device, so a tick costs about six
//! NVML calls per GPU. A GPU that answers `NVML_ERROR_GPU_IS_LOST` keeps the uuid and name of its
//! last good tick with [`GpuState::Lost`] while the others keep reporting. Process names come from
//! `/proc/<pid>/comm`, users from the owner of `/proc/<pid>` mapped through `/etc/passwd`.

use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use shared::{
    Bytes, Gpu, GpuMemory, GpuProcess, GpuState, NvmlStatus, Percent, Source, SourceError,
};
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{GpuReading, GpuSource};

/// First wait before re-initialising NVML after a failure; doubles up to [`BACKOFF_MAX`].
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// Longest wait between two init attempts: a driver that comes back is seen within a minute.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How long a cached power limit is trusted: it changes only by `nvidia-smi -pl` or similar.
const POWER_LIMIT_TTL: Duration = Duration::from_secs(30);
/// At most this often `/etc/passwd` is re-read to resolve a uid it did not know.
const PASSWD_RELOAD: Duration = Duration::from_secs(60);
const PASSWD: &str = "/etc/passwd";

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

/// What is known of one device without asking each tick.
#[derive(Debug, Clone)]
struct Facts {
    /// The NVML session (init) these were read in; a new session reads them again.
    session: u64,
    uuid: String,
    name: String,
    power_limit_w: Option<f64>,
    power_limit_read: Instant,
}

/// GPUs through NVML.
pub struct NvmlSource {
    lib: Option<PathBuf>,
    nvml: Option<Nvml>,
    status: NvmlStatus,
    retry: Backoff,
    /// Counts successful inits, so cached facts from an earlier session are refreshed.
    session: u64,
    /// By NVML index; kept across sessions so a lost GPU still has its uuid and name.
    facts: Vec<Option<Facts>>,
    users: Users,
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
            facts: Vec::new(),
            users: Users::default(),
        }
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
        let mut errors = Vec::new();
        let mut gpus = Vec::with_capacity(count as usize);
        for index in 0..count {
            let slot = index as usize;
            if self.facts.len() <= slot {
                self.facts.resize(slot + 1, None);
            }
            let mut tick = Tick {
                index,
                now,
                session: self.session,
                facts: &mut self.facts[slot],
                users: &mut self.users,
                errors: &mut errors,
            };
            gpus.push(tick.read(nvml));
        }
        GpuReading {
            nvml: self.status.clone(),
            gpus,
            errors,
        }
    }
}

/// Why one GPU gave no readings this tick.
enum GpuFailure {
    Lost,
    Failed(String),
}

/// Reading one GPU in one tick.
struct Tick<'a> {
    index: u32,
    now: Instant,
    session: u64,
    facts: &'a mut Option<Facts>,
    users: &'a mut Users,
    errors: &'a mut Vec<SourceError>,
}

impl Tick<'_> {
    fn error(&mut self, message: String) {
        self.errors.push(SourceError {
            source: Source::Gpu,
            item: Some(format!("gpu {}", self.index)),
            message,
        });
    }

    /// `Ok(None)` when the reading is not supported (not an error), `Err` for a lost GPU; any
    /// other failure is noted and read as `None`.
    fn take<T>(
        &mut self,
        what: &str,
        result: Result<T, NvmlError>,
        failed: &mut bool,
    ) -> Result<Option<T>, GpuFailure> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(NvmlError::GpuLost) => Err(GpuFailure::Lost),
            Err(NvmlError::NotSupported) => Ok(None),
            Err(e) => {
                *failed = true;
                self.error(format!("{what}: {e}"));
                Ok(None)
            }
        }
    }

    fn read(&mut self, nvml: &Nvml) -> Gpu {
        match self.try_read(nvml) {
            Ok(gpu) => gpu,
            Err(failure) => {
                let (state, message) = match failure {
                    GpuFailure::Lost => (
                        GpuState::Lost,
                        "GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST)".to_owned(),
                    ),
                    GpuFailure::Failed(m) => (GpuState::Error, m),
                };
                self.error(message);
                // Uuid and name from the last tick that read them; empty if never read.
                let (uuid, name) = self
                    .facts
                    .as_ref()
                    .map(|f| (f.uuid.clone(), f.name.clone()))
                    .unwrap_or_default();
                Gpu::unread(self.index, uuid, name, state)
            }
        }
    }

    fn try_read(&mut self, nvml: &Nvml) -> Result<Gpu, GpuFailure> {
        let device = nvml.device_by_index(self.index).map_err(|e| match e {
            NvmlError::GpuLost => GpuFailure::Lost,
            e => GpuFailure::Failed(format!("cannot open the device: {e}")),
        })?;
        let facts = self.facts(&device)?;
        let mut failed = false;
        let memory = self
            .take("memory", device.memory_info(), &mut failed)?
            .map(|m| GpuMemory {
                total_bytes: Bytes(m.total),
                used_bytes: Bytes(m.used),
                reserved_bytes: Bytes(m.reserved),
                free_bytes: Bytes(m.free),
            });
        let utilization = self.take("utilization", device.utilization_rates(), &mut failed)?;
        let temperature = self.take(
            "temperature",
            device.temperature(TemperatureSensor::Gpu),
            &mut failed,
        )?;
        let power_mw = self.take("power", device.power_usage(), &mut failed)?;
        let processes = self.take("processes", read_processes(&device), &mut failed)?;
        let processes = processes.map(|list| {
            list.into_iter()
                .map(|(pid, used_bytes)| self.users.process(pid, used_bytes))
                .collect()
        });
        Ok(Gpu {
            index: self.index,
            uuid: facts.uuid,
            name: facts.name,
            state: if failed {
                GpuState::Error
            } else {
                GpuState::Ok
            },
            memory,
            utilization_gpu_pct: utilization.as_ref().map(|u| Percent(f64::from(u.gpu))),
            utilization_memory_pct: utilization.as_ref().map(|u| Percent(f64::from(u.memory))),
            temperature_c: temperature.map(f64::from),
            power_w: power_mw.map(|mw| f64::from(mw) / 1000.0),
            power_limit_w: facts.power_limit_w,
            processes,
        })
    }

    /// The cached facts of this device, read again in a new session or when the limit is stale.
    fn facts(&mut self, device: &Device<'_>) -> Result<Facts, GpuFailure> {
        let cached = self
            .facts
            .as_ref()
            .filter(|f| f.session == self.session)
            .cloned();
        let is_new = cached.is_none();
        let mut facts = match cached {
            Some(f) => f,
            None => Facts {
                session: self.session,
                uuid: device.uuid().map_err(|e| fact_failure("uuid", e))?,
                name: device.name().map_err(|e| fact_failure("name", e))?,
                power_limit_w: None,
                power_limit_read: self.now,
            },
        };
        let stale = self.now.saturating_duration_since(facts.power_limit_read) >= POWER_LIMIT_TTL;
        if is_new || stale {
            // A failing limit is reported once per read; the GPU's state only reflects this tick.
            let mut ignored = false;
            facts.power_limit_w = self
                .take("power limit", device.enforced_power_limit(), &mut ignored)?
                .map(|mw| f64::from(mw) / 1000.0);
            facts.power_limit_read = self.now;
        }
        *self.facts = Some(facts.clone());
        Ok(facts)
    }
}

fn fact_failure(what: &str, e: NvmlError) -> GpuFailure {
    match e {
        NvmlError::GpuLost => GpuFailure::Lost,
        e => GpuFailure::Failed(format!("{what}: {e}")),
    }
}

/// Compute and graphics processes merged by pid, with used bytes (`None`: NVML does not know).
/// A pid in both lists keeps the larger figure: NVML reports a process's memory on the device in
/// each list, so adding them would count it twice.
fn read_processes(device: &Device<'_>) -> Result<Vec<(u32, Option<u64>)>, NvmlError> {
    let compute = device.running_compute_processes()?;
    let graphics = match device.running_graphics_processes() {
        Ok(list) => list,
        Err(NvmlError::NotSupported) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut merged: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    for p in compute.into_iter().chain(graphics) {
        let used = match p.used_gpu_memory {
            UsedGpuMemory::Used(b) => Some(b),
            UsedGpuMemory::Unavailable => None,
        };
        let entry = merged.entry(p.pid).or_insert(None);
        *entry = (*entry).max(used);
    }
    Ok(merged.into_iter().collect())
}

/// Names the owners of processes: uid of `/proc/<pid>` through a cached `/etc/passwd`.
#[derive(Debug, Default)]
struct Users {
    names: HashMap<u32, String>,
    loaded: Option<Instant>,
}

impl Users {
    /// A GPU process with its `comm` and user; both `None` when the pid is not here (an orphan).
    fn process(&mut self, pid: u32, used_bytes: Option<u64>) -> GpuProcess {
        let dir = PathBuf::from(format!("/proc/{pid}"));
        let name = std::fs::read_to_string(dir.join("comm"))
            .ok()
            .map(|s| s.trim_end_matches('\n').to_owned());
        let user = match (&name, std::fs::metadata(&dir)) {
            (Some(_), Ok(meta)) => Some(self.user_name(meta.uid())),
            _ => None,
        };
        GpuProcess {
            pid,
            name,
            user,
            used_bytes: used_bytes.map(Bytes),
        }
    }

    /// The login name of `uid`, or the number when `/etc/passwd` does not know it.
    fn user_name(&mut self, uid: u32) -> String {
        if !self.names.contains_key(&uid)
            && self.loaded.is_none_or(|at| at.elapsed() >= PASSWD_RELOAD)
        {
            self.names = std::fs::read_to_string(PASSWD)
                .map(|text| parse_passwd(&text))
                .unwrap_or_default();
            self.loaded = Some(Instant::now());
        }
        self.names
            .get(&uid)
            .cloned()
            .unwrap_or_else(|| uid.to_string())
    }
}

/// Uid to login name from `/etc/passwd` text (`name:password:uid:gid:gecos:home:shell`). Comments,
/// blank and malformed lines are skipped; the first name of a uid wins, as `getpwuid` does.
pub fn parse_passwd(text: &str) -> HashMap<u32, String> {
    let mut names = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split(':');
        let (Some(name), Some(_), Some(uid)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        if let Ok(uid) = uid.parse::<u32>() {
            names.entry(uid).or_insert_with(|| name.to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_passwd() {
        let text = "# comment\nroot:x:0:0:root:/root:/bin/bash\n\nalice:x:1000:1000::/home/alice:/bin/sh\n\
                    broken line\nbob:x:notanumber:1::/:/bin/sh\ntoor:x:0:0::/:/bin/sh\n:x:5:5::/:\n";
        let names = parse_passwd(text);
        assert_eq!(names.get(&0).map(String::as_str), Some("root"));
        assert_eq!(names.get(&1000).map(String::as_str), Some("alice"));
        assert_eq!(names.len(), 2);
    }

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

    #[test]
    fn the_own_process_resolves_and_a_missing_pid_is_an_orphan() {
        let mut users = Users::default();
        let me = users.process(std::process::id(), Some(5));
        assert!(me.name.is_some());
        assert!(me.user.is_some());
        assert_eq!(me.used_bytes, Some(Bytes(5)));
        let orphan = users.process(4_000_000, None);
        assert_eq!(
            (orphan.name, orphan.user, orphan.used_bytes),
            (None, None, None)
        );
    }
}
