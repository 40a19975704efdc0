//! One device's tick: its cached facts, the readings, the versioned calls through their
//! fallbacks, and the process list when it is due; a lost or failing device keeps the identity of
//! its last good tick.

use super::identity::Identities;
use super::processes::{self, Carried};
use super::{memory, mig, versioned::Fallback};
use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use shared::{Gpu, GpuApis, GpuProcess, GpuState, Percent, Source, SourceError};
use std::time::{Duration, Instant};

/// How long a cached power limit is trusted: it changes only by `nvidia-smi -pl` or similar.
const POWER_LIMIT_TTL: Duration = Duration::from_secs(30);

/// What is known of one device without asking each tick.
#[derive(Debug, Clone)]
struct Facts {
    uuid: String,
    name: String,
    power_limit_w: Option<f64>,
    /// Whether the GPU is in MIG mode; read with the power limit.
    mig: bool,
    power_limit_read: Instant,
}

/// What one NVML index remembers between ticks.
#[derive(Debug, Default)]
pub struct Slot {
    /// The NVML session (init) `facts`, the fallbacks and `carried` belong to.
    session: u64,
    /// Kept across sessions so a lost GPU still has its uuid and name (refreshed once per session).
    facts: Option<Facts>,
    /// Whether `facts` were read in this session.
    facts_fresh: bool,
    memory_api: Fallback,
    process_api: Fallback,
    carried: Option<Carried>,
    /// The MIG instances as last laid out (read with the process lists); empty outside MIG mode.
    mig_layout: Vec<mig::Laid>,
    /// Whether an instance of the layout was gone at the last read (re-partitioned): laid out
    /// again at the next tick.
    mig_relayout: bool,
    mig_memory_api: Fallback,
}

impl Slot {
    /// The process list shown now, if any.
    pub fn carried(&self) -> Option<&Carried> {
        self.carried.as_ref()
    }

    /// Drops the carried list (the device is no longer counted), so its pids can be evicted.
    pub fn forget_processes(&mut self) {
        self.carried = None;
    }
}

/// Why one GPU gave no readings this tick.
enum GpuFailure {
    Lost,
    Failed(String),
}

/// Reading one GPU in one tick.
pub struct Tick<'a> {
    pub index: u32,
    pub now: Instant,
    pub now_ms: u64,
    pub session: u64,
    pub slot: &'a mut Slot,
    pub identities: &'a mut Identities,
    pub errors: &'a mut Vec<SourceError>,
    /// Set when this tick read the process lists (so the caller evicts stale pids).
    pub read_processes: bool,
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

    /// This device's reading; on failure its identity with no readings.
    pub fn read(&mut self, nvml: &Nvml) -> Gpu {
        if self.slot.session != self.session {
            // A new NVML session: the driver may differ, so try the newer calls again.
            self.slot.session = self.session;
            self.slot.memory_api = Fallback::default();
            self.slot.process_api = Fallback::default();
            self.slot.mig_memory_api = Fallback::default();
            self.slot.mig_layout.clear();
            self.slot.carried = None;
            self.slot.facts_fresh = false;
        }
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
                self.slot.carried = None;
                // Uuid and name from the last tick that read them; absent if never read.
                let (uuid, name) = self
                    .slot
                    .facts
                    .as_ref()
                    .map(|f| (Some(f.uuid.clone()), Some(f.name.clone())))
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
        self.refresh_facts(&device)?;
        let mut failed = false;
        let memory = memory::read(nvml, &device, &mut self.slot.memory_api);
        let memory = self.take("memory", memory, &mut failed)?;
        let utilization = self.take("utilization", device.utilization_rates(), &mut failed)?;
        let temperature = self.take(
            "temperature",
            device.temperature(TemperatureSensor::Gpu),
            &mut failed,
        )?;
        let power_mw = self.take("power", device.power_usage(), &mut failed)?;
        let in_mig = self.slot.facts.as_ref().is_some_and(|f| f.mig);
        let due = processes::due(self.slot.carried.as_ref(), self.now);
        if due || self.slot.mig_relayout {
            self.slot.mig_relayout = false;
            self.slot.mig_layout = if in_mig {
                let laid = mig::layout(nvml, &device);
                let (laid, refused) = self
                    .take("MIG instances", laid, &mut failed)?
                    .unwrap_or_default();
                refused.into_iter().for_each(|m| self.error(m));
                laid
            } else {
                Vec::new()
            };
        }
        if due {
            self.read_processes = true;
            let lists = processes::read(&device, &mut self.slot.process_api);
            let lists = self.take("processes", lists, &mut failed)?;
            self.slot.carried = lists.map(|(list, api)| Carried {
                list: list
                    .into_iter()
                    .map(|h| GpuProcess {
                        // Outside MIG mode a driver's instance ids mean nothing.
                        mig: h.mig.filter(|_| in_mig),
                        ..self.identities.process(h.pid, h.used)
                    })
                    .collect(),
                api,
                read_at: self.now,
                t_ms: self.now_ms,
            });
        }
        let instances = if self.slot.mig_layout.is_empty() {
            Vec::new()
        } else {
            let read = mig::read(
                nvml,
                &device,
                &self.slot.mig_layout,
                &mut self.slot.mig_memory_api,
            );
            let (instances, refused) = self
                .take("MIG instances", read, &mut failed)?
                .unwrap_or_default();
            self.slot.mig_relayout = instances.len() < self.slot.mig_layout.len();
            refused.into_iter().for_each(|m| self.error(m));
            instances
        };
        let facts = self.slot.facts.as_ref().ok_or_else(|| {
            GpuFailure::Failed("device facts missing after they were read".to_owned())
        })?;
        let carried = self.slot.carried.as_ref();
        Ok(Gpu {
            index: self.index,
            uuid: Some(facts.uuid.clone()),
            name: Some(facts.name.clone()),
            state: if failed {
                GpuState::Error
            } else {
                GpuState::Ok
            },
            memory: memory.map(|(m, _)| m),
            utilization_gpu_pct: utilization.as_ref().map(|u| Percent(f64::from(u.gpu))),
            utilization_memory_pct: utilization.as_ref().map(|u| Percent(f64::from(u.memory))),
            temperature_c: temperature.map(f64::from),
            power_w: power_mw.map(|mw| f64::from(mw) / 1000.0),
            power_limit_w: facts.power_limit_w,
            processes: carried.map(|c| c.list.clone()),
            processes_t_ms: carried.map(|c| c.t_ms),
            nvml_api: Some(GpuApis {
                memory: memory.map(|(_, api)| api),
                processes: carried.map(|c| c.api),
            }),
            mig: instances,
        })
    }

    /// Reads uuid and name once per session (kept if that fails, for a lost GPU's identity),
    /// and the power limit then and whenever it is stale.
    fn refresh_facts(&mut self, device: &Device<'_>) -> Result<(), GpuFailure> {
        let new = !self.slot.facts_fresh || self.slot.facts.is_none();
        if new {
            let uuid = device.uuid().map_err(|e| fact_failure("uuid", e))?;
            let name = device.name().map_err(|e| fact_failure("name", e))?;
            self.slot.facts = Some(Facts {
                uuid,
                name,
                power_limit_w: None,
                mig: false,
                power_limit_read: self.now,
            });
            self.slot.facts_fresh = true;
        }
        let stale = self.slot.facts.as_ref().is_some_and(|f| {
            self.now.saturating_duration_since(f.power_limit_read) >= POWER_LIMIT_TTL
        });
        if new || stale {
            // A failing limit is reported once per read; the GPU's state only reflects this tick.
            let mut ignored = false;
            let limit = self
                .take("power limit", device.enforced_power_limit(), &mut ignored)?
                .map(|mw| f64::from(mw) / 1000.0);
            // MIG mode changes only with a GPU reset; a failing read keeps what was known.
            let known = self.slot.facts.as_ref().is_some_and(|f| f.mig);
            let in_mig = self
                .take("MIG mode", mig::enabled(device), &mut ignored)?
                .unwrap_or(known);
            if let Some(f) = &mut self.slot.facts {
                f.power_limit_w = limit;
                f.mig = in_mig;
                f.power_limit_read = self.now;
            }
        }
        Ok(())
    }
}

fn fact_failure(what: &str, e: NvmlError) -> GpuFailure {
    match e {
        NvmlError::GpuLost => GpuFailure::Lost,
        e => GpuFailure::Failed(format!("{what}: {e}")),
    }
}
