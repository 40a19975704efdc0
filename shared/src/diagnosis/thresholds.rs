//! `Thresholds`: every number the diagnosis compares against, in one table, with where it comes from.
//!
//! Users override any subset from a config file: every field is optional (`#[serde(default)]`) and
//! unknown fields are refused, so a typo does not silently keep the default.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

/// Thresholds of every rule. Percentages are 0..100, sizes bytes, rates bytes per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    // --- Window and hysteresis ---
    /// Share of the samples (that have data) in which a condition must hold: "N of M". Rule of
    /// thumb: a majority, so one spike in a window never decides.
    pub hold_fraction: f64,
    /// Fewest samples with data before a rule answers yes or no (fewer: unknown). Rule of thumb.
    pub min_samples: u32,
    /// Hysteresis band in percentage points: once a finding is held (it was in `prev`), it clears
    /// only when the value leaves `threshold -/+ band` (e.g. GPU memory 90% enters, 85% clears).
    /// Rule of thumb, as in alerting tools' recovery thresholds.
    pub hysteresis_pct_points: f64,
    /// Most points kept for a Theil-Sen fit (it is O(n^2)). 30 points give 435 slopes.
    pub trend_max_points: u32,
    /// Fewest points for a trend.
    pub trend_min_points: u32,
    /// Shortest time span, in seconds, for a trend.
    pub trend_min_span_s: f64,
    /// Mann-Kendall z-score a series must reach to count as rising (1.96: two-sided 95%, the
    /// test's textbook level). Below it the Theil-Sen slope is noise and nothing is projected.
    pub trend_min_z: f64,
    /// Projections further out than this (seconds) are not reported. Rule of thumb: a day.
    pub projection_horizon_s: f64,

    // --- GPU memory ---
    /// Used/total warning level. Rule of thumb shared by nvitop/DCGM dashboards: above 90% the
    /// caching allocator has little room left for fragmentation and peaks.
    pub gpu_mem_warn_pct: f64,
    /// Used/total critical level: the next peak (optimizer step, eval) is likely to OOM.
    pub gpu_mem_crit_pct: f64,
    /// Time-to-OOM under which growth is a warning even below `gpu_mem_warn_pct` (issue 3).
    pub gpu_oom_horizon_s: f64,
    /// Device used minus the sum over its processes above this is memory not held by the job
    /// (another container, a leaked context). Rule of thumb: 4 GiB, well above per-context overhead
    /// (a CUDA context is about 0.3-0.5 GiB, NVIDIA forums).
    pub gpu_unattributed_bytes: f64,
    /// A pid that no longer exists holding more than this is an orphan. Anything real exceeds it.
    pub orphan_min_bytes: f64,
    /// When the process list cannot be read, a GPU using more than this counts as held by a job.
    pub job_min_gpu_bytes: f64,

    // --- GPU starved ---
    /// Mean GPU utilization below this while a job holds memory: starved (issue 3: 50%).
    pub starved_util_mean_pct: f64,
    /// Saw-tooth: coefficient of variation of utilization at least this... (rule of thumb)
    pub sawtooth_cv: f64,
    /// ...with samples below `sawtooth_low_pct` in at least `sawtooth_low_fraction` of the window.
    pub sawtooth_low_pct: f64,
    pub sawtooth_low_fraction: f64,

    // --- Disk I/O slow (input-bound on disk) ---
    /// Median `r_await` above this many times its own lowest decile in the window: latency far
    /// above the device's baseline (rule of thumb; queueing theory: latency rises steeply near
    /// saturation).
    pub await_baseline_ratio: f64,
    /// ...and above this many ms (below it, even 3x baseline is an idle NVMe).
    pub await_min_ms: f64,
    /// ...with a median `aqu-sz` at least this: requests are queueing.
    pub queue_min: f64,
    /// PSI io `some avg10` at least this: tasks stalled on I/O 10% of the time (kernel PSI doc,
    /// Documentation/accounting/psi.rst; rule of thumb from oomd/systemd-oomd style policies).
    pub psi_io_some_pct: f64,
    /// Median read rate within this share of the device's observed peak, with a median queue of at
    /// least `queue_min`: running flat out (flat reads without a queue are a loader reading what
    /// it needs, not a saturated device).
    pub read_peak_fraction: f64,
    /// Mean read rate below this is trivial (no data loading to speak of). Rule of thumb.
    pub min_read_bytes_per_sec: f64,
    /// A starved job's own reads count as its input when they are at least this share of the busy
    /// device's; another job reading more than it, and at least this share, is contention.
    pub job_read_fraction: f64,
    /// `%util` at least this counts only on rotational devices: on SSDs/NVMe with parallel
    /// queues 100% util does not mean saturated (iostat(1) man page).
    pub rotational_util_pct: f64,
    /// iowait at least this corroborates (raises confidence); never decides alone (iowait is
    /// idle time, proc(5)).
    pub iowait_corroborate_pct: f64,

    // --- CPU-bound, checkpoint stall ---
    /// Host CPU busy at least this (held): preprocessing saturates the cores.
    pub cpu_busy_pct: f64,
    /// A sample with mean utilization (over starved GPUs) below this is a dip.
    pub stall_util_pct: f64,
    /// A write burst: total write rate above this...
    pub write_burst_min_bytes_per_sec: f64,
    /// ...and above this many times the window's median write rate.
    pub write_burst_ratio: f64,
    /// Share of dips that must coincide (same or adjacent sample) with a write burst.
    pub stall_aligned_fraction: f64,
    /// Fewest aligned dips.
    pub stall_min_dips: u32,

    // --- Disk space ---
    /// Mount used% (on `f_bavail`, as `df`) warning level (docs/diagnosis.md#what-each-node-looks-at).
    pub disk_warn_pct: f64,
    /// Mount used% critical level (docs/diagnosis.md#what-each-node-looks-at).
    pub disk_crit_pct: f64,
    /// Time-to-full under this (seconds) is a warning (docs/diagnosis.md#what-each-node-looks-at: an hour).
    pub disk_full_horizon_s: f64,
    /// Inodes used% warning level (docs/diagnosis.md#what-each-node-looks-at).
    pub inodes_warn_pct: f64,
    /// `/dev/shm` smaller than this while GPUs are present is a warning: Docker's default is 64 MiB
    /// and PyTorch DataLoader workers pass batches through it (PyTorch docs, "Docker shm").
    pub shm_min_bytes: f64,
    /// `/dev/shm` used% warning level.
    pub shm_full_pct: f64,

    // --- Host memory ---
    /// MemAvailable below this share of MemTotal: warning (rule of thumb; earlyoom's default 10%).
    pub mem_available_warn_pct: f64,
    /// MemAvailable below this share: critical (rule of thumb; the OOM killer is near).
    pub mem_available_crit_pct: f64,
    /// PSI memory `some avg10` at least this: tasks stall on reclaim (kernel PSI doc).
    pub psi_memory_some_pct: f64,
    /// Swap in use and growing faster than this: the host is swapping out.
    pub swap_growth_bytes_per_sec: f64,

    // --- Headroom ---
    /// GPU memory below this...
    pub headroom_mem_pct: f64,
    /// ...while utilization is above this: room to raise the batch size.
    pub headroom_util_pct: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            hold_fraction: 0.6,
            min_samples: 3,
            hysteresis_pct_points: 5.0,
            trend_max_points: 30,
            trend_min_points: 5,
            trend_min_span_s: 4.0,
            trend_min_z: 1.96,
            projection_horizon_s: 86_400.0,
            gpu_mem_warn_pct: 90.0,
            gpu_mem_crit_pct: 95.0,
            gpu_oom_horizon_s: 900.0,
            gpu_unattributed_bytes: 4.0 * GIB,
            orphan_min_bytes: MIB,
            job_min_gpu_bytes: GIB,
            starved_util_mean_pct: 50.0,
            sawtooth_cv: 0.4,
            sawtooth_low_pct: 20.0,
            sawtooth_low_fraction: 0.1,
            await_baseline_ratio: 3.0,
            await_min_ms: 5.0,
            queue_min: 1.0,
            psi_io_some_pct: 10.0,
            read_peak_fraction: 0.85,
            min_read_bytes_per_sec: 10.0 * MIB,
            job_read_fraction: 0.2,
            rotational_util_pct: 90.0,
            iowait_corroborate_pct: 10.0,
            cpu_busy_pct: 90.0,
            stall_util_pct: 20.0,
            write_burst_min_bytes_per_sec: 50.0 * MIB,
            write_burst_ratio: 3.0,
            stall_aligned_fraction: 0.5,
            stall_min_dips: 2,
            disk_warn_pct: 80.0,
            disk_crit_pct: 90.0,
            disk_full_horizon_s: 3600.0,
            inodes_warn_pct: 90.0,
            shm_min_bytes: GIB,
            shm_full_pct: 90.0,
            mem_available_warn_pct: 10.0,
            mem_available_crit_pct: 5.0,
            psi_memory_some_pct: 10.0,
            swap_growth_bytes_per_sec: MIB,
            headroom_mem_pct: 60.0,
            headroom_util_pct: 80.0,
        }
    }
}

impl Thresholds {
    /// Refuses values no diagnosis can use, naming the key: a figure that is not a finite number
    /// (TOML reads `nan` and `inf`), one below 0, a percentage above 100, a fraction outside 0 to
    /// 1, and a warning level past its critical one.
    pub fn validate(&self) -> Result<(), String> {
        let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(self) else {
            return Err("the thresholds cannot be read back".into());
        };
        for (key, value) in &fields {
            // serde_json writes a NaN or an infinity as null.
            let Some(v) = value.as_f64() else {
                return Err(format!("{key} is not a finite number"));
            };
            if v < 0.0 {
                return Err(format!("{key} = {v} is below 0"));
            }
            if key.ends_with("_pct") && v > 100.0 {
                return Err(format!("{key} = {v} is above 100 (a percentage)"));
            }
            if key.ends_with("_fraction") && v > 1.0 {
                return Err(format!("{key} = {v} is above 1 (a fraction)"));
            }
        }
        let pairs = [
            (
                "gpu_mem_warn_pct",
                self.gpu_mem_warn_pct,
                "gpu_mem_crit_pct",
                self.gpu_mem_crit_pct,
            ),
            (
                "disk_warn_pct",
                self.disk_warn_pct,
                "disk_crit_pct",
                self.disk_crit_pct,
            ),
            // Available memory warns as it falls: its critical level is the lower one.
            (
                "mem_available_crit_pct",
                self.mem_available_crit_pct,
                "mem_available_warn_pct",
                self.mem_available_warn_pct,
            ),
            (
                "trend_min_points",
                f64::from(self.trend_min_points),
                "trend_max_points",
                f64::from(self.trend_max_points),
            ),
        ];
        for (low_key, low, high_key, high) in pairs {
            if low > high {
                return Err(format!(
                    "{low_key} = {low} is past {high_key} = {high}: the warning level must come \
                     before the critical one"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_nonsense_is_named() {
        assert_eq!(Thresholds::default().validate(), Ok(()));
        let with = |f: &dyn Fn(&mut Thresholds)| {
            let mut t = Thresholds::default();
            f(&mut t);
            t.validate()
        };
        let e = with(&|t| t.gpu_mem_warn_pct = f64::NAN).expect_err("NaN");
        assert!(e.contains("gpu_mem_warn_pct"), "{e}");
        let e = with(&|t| t.disk_full_horizon_s = f64::INFINITY).expect_err("inf");
        assert!(e.contains("disk_full_horizon_s"), "{e}");
        let e = with(&|t| t.gpu_mem_warn_pct = 97.0).expect_err("warn past crit");
        assert!(
            e.contains("gpu_mem_warn_pct") && e.contains("gpu_mem_crit_pct"),
            "{e}"
        );
        let e = with(&|t| t.disk_crit_pct = 150.0).expect_err("above 100");
        assert!(e.contains("disk_crit_pct"), "{e}");
        let e = with(&|t| t.hold_fraction = 2.0).expect_err("fraction");
        assert!(e.contains("hold_fraction"), "{e}");
        let e = with(&|t| t.await_min_ms = -1.0).expect_err("negative");
        assert!(e.contains("await_min_ms"), "{e}");
        let e = with(&|t| t.mem_available_crit_pct = 20.0).expect_err("crit above warn");
        assert!(e.contains("mem_available"), "{e}");
    }

    #[test]
    fn partial_json_overrides_only_what_it_names() {
        let t: Thresholds =
            serde_json::from_str(r#"{"gpu_mem_warn_pct": 80, "min_samples": 5}"#).expect("valid");
        assert_eq!(t.gpu_mem_warn_pct, 80.0);
        assert_eq!(t.min_samples, 5);
        let d = Thresholds::default();
        assert_eq!(t.gpu_mem_crit_pct, d.gpu_mem_crit_pct);
        assert_eq!(t.disk_warn_pct, d.disk_warn_pct);
    }

    #[test]
    fn empty_config_is_the_default_and_typos_are_refused() {
        let t: Thresholds = serde_json::from_str("{}").expect("valid");
        assert_eq!(t, Thresholds::default());
        assert!(serde_json::from_str::<Thresholds>(r#"{"gpu_mem_warn": 80}"#).is_err());
    }
}
