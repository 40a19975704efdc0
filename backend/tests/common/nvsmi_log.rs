//! An nvidia-smi log for the history tests: `--query-gpu=timestamp,utilization.gpu,memory.total,
//! memory.free,memory.used --format=csv -l 1`, ten minutes of one 24 GiB GPU at 90% utilization
//! whose memory is at 40% for five minutes, then at 97%. Include with
//! `#[path = "common/nvsmi_log.rs"] mod nvsmi_log;`.

use std::path::Path;
use std::time::Duration;

/// GPU memory used in the second half, in MiB (97% of 24,576).
pub const FULL_MIB: u64 = 23838;

/// Writes the log, its first line stamped `t0_s` (seconds since the epoch).
pub fn memory_fills_halfway(path: &Path, t0_s: u64) {
    let mut text = String::from(
        "timestamp, utilization.gpu [%], memory.total [MiB], memory.free [MiB], memory.used [MiB]\n",
    );
    for i in 0..600u64 {
        let t = humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + Duration::from_millis((t0_s + i) * 1000),
        )
        .to_string();
        // 2026-12-04T22:00:00.000Z -> 2026/12/04 22:00:00.000
        let stamp = t.trim_end_matches('Z').replace('-', "/").replace('T', " ");
        let used: u64 = if i < 300 { 9830 } else { FULL_MIB };
        text.push_str(&format!(
            "{stamp}, 90 %, 24576 MiB, {} MiB, {used} MiB\n",
            24576 - used
        ));
    }
    std::fs::write(path, text).expect("log");
}
