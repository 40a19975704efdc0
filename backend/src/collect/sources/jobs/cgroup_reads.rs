//! A cgroup job's own counters: its CPU time, its `io.stat` per device and its pressure files,
//! read through the kept cgroup files, with rates over the time since the last reading.

use super::cgroup_counters::Files;
use super::cgroup_io;
use super::{JobKey, ProcJobs};
use crate::collect::sources::system::parse_psi;
use shared::{BytesPerSec, IoCounter, JobDeviceIo, JobIo, JobPsi, Percent};
use std::time::Instant;

impl ProcJobs {
    /// A cgroup job's CPU, in % of one core since its last reading: `None` when its cgroup has
    /// no CPU time to read, `Some(None)` at its first reading, and when the counter went down
    /// (the cgroup was made again) or another file gave it.
    pub(super) fn cgroup_cpu(
        &mut self,
        key: &JobKey,
        files: &Files,
        now: Instant,
    ) -> Option<Option<Percent>> {
        let (usec, source) = files.cpu_usec(&mut self.open)?;
        let prev = self.cgroup_cpu.insert(key.clone(), (now, usec, source));
        Some(prev.and_then(|(then, before, was)| {
            let secs = now.saturating_duration_since(then).as_secs_f64();
            (secs > 0.0 && was == source && usec >= before)
                .then(|| Percent((usec - before) as f64 / 1e6 / secs * 100.0))
        }))
    }

    /// The job's I/O from its cgroup v2 `io.stat`, per device, with rates over the time since its
    /// last reading; `None` where the file is not there (no `io` controller in that subtree, a
    /// job without a v2 cgroup).
    pub(super) fn read_cgroup_io(
        &mut self,
        key: &JobKey,
        v2_dir: Option<&str>,
        now: Instant,
    ) -> Option<JobIo> {
        let path = self.v2_file(v2_dir?, "io.stat")?;
        let current = cgroup_io::parse_io_stat(self.open.read(&path)?);
        let prev = self.cgroup_io.insert(key.clone(), (now, current.clone()));
        let mut io = JobIo {
            counter: IoCounter::CgroupIoStat,
            read_bytes_per_sec: None,
            write_bytes_per_sec: None,
            unreadable: 0,
            read_iops: None,
            write_iops: None,
            devices: Vec::new(),
        };
        let Some((then, before)) = prev else {
            return Some(io);
        };
        let secs = now.saturating_duration_since(then).as_secs_f64();
        if secs <= 0.0 {
            return Some(io);
        }
        let rate = |a: u64, b: u64| a.saturating_sub(b) as f64 / secs;
        let ios = |a: Option<u64>, b: Option<u64>| Some(rate(a?, b.unwrap_or(0)));
        for (dev, now_io) in &current {
            // A device not listed before had no I/O in this cgroup then.
            let old = before.get(dev).copied().unwrap_or_default();
            // A name not found now (sysfs busy, a device being set up) is looked up again.
            let name = match self.dev_names.get(dev) {
                Some(n) => n.clone(),
                None => {
                    let found = cgroup_io::device_name(&self.sys_root, *dev);
                    if let Some(n) = &found {
                        self.dev_names.insert(*dev, n.clone());
                    }
                    found.unwrap_or_else(|| format!("{}:{}", dev.0, dev.1))
                }
            };
            io.devices.push(JobDeviceIo {
                name,
                read_bytes_per_sec: BytesPerSec(rate(now_io.read_bytes, old.read_bytes)),
                write_bytes_per_sec: BytesPerSec(rate(now_io.write_bytes, old.write_bytes)),
                read_iops: ios(now_io.read_ios, old.read_ios),
                write_iops: ios(now_io.write_ios, old.write_ios),
            });
        }
        // Device-mapper and md devices pass their I/O on to disks that count it again.
        let stacked = |n: &str| n.starts_with("dm-") || n.starts_with("md");
        let physical = io.devices.iter().any(|d| !stacked(&d.name));
        let counted: Vec<&JobDeviceIo> = io
            .devices
            .iter()
            .filter(|d| !(physical && stacked(&d.name)))
            .collect();
        io.read_bytes_per_sec = Some(BytesPerSec(
            counted.iter().map(|d| d.read_bytes_per_sec.0).sum(),
        ));
        io.write_bytes_per_sec = Some(BytesPerSec(
            counted.iter().map(|d| d.write_bytes_per_sec.0).sum(),
        ));
        io.read_iops = counted.iter().map(|d| d.read_iops).sum();
        io.write_iops = counted.iter().map(|d| d.write_iops).sum();
        Some(io)
    }

    /// `file` of the job's v2 cgroup folder `v2_dir`; `None` without a v2 hierarchy.
    fn v2_file(&self, v2_dir: &str, file: &str) -> Option<std::path::PathBuf> {
        let v2 = self.mounts.as_ref()?.v2.as_ref()?;
        Some(v2.join(v2_dir.trim_start_matches('/')).join(file))
    }

    /// One pressure file of the job's cgroup, where the kernel has it.
    pub(super) fn psi(&mut self, v2_dir: Option<&str>, file: &str) -> Option<JobPsi> {
        let path = self.v2_file(v2_dir?, file)?;
        let psi = parse_psi(self.open.read(&path)?)?;
        Some(JobPsi {
            some_avg10: psi.some_avg10,
            full_avg10: psi.full_avg10,
        })
    }
}
