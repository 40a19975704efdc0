//! A cgroup's own block I/O counters: cgroup v2 `io.stat` and cgroup v1 `blkio`'s
//! `io_service_bytes` and `io_serviced` (the kernel's Documentation/admin-guide/cgroup-v2.rst and
//! cgroup-v1/blkio-controller.rst), per device by `major:minor`, and the name of a device from
//! `/sys/dev/block/<major>:<minor>`. A cgroup's counters keep the bytes of processes that have
//! exited and count every device the job touched, which `/proc/<pid>/io` sums cannot.
//!
//! The texts are the kernel's (cgroupfs takes no files or links from a cgroup's owner, who
//! controls only the numbers, by the I/O it does), and parsing is total all the same: a malformed
//! line or a number that does not fit is skipped, and nothing panics (fuzz target `proc_files`).

use std::collections::BTreeMap;
use std::path::Path;

/// One device's cumulative counters in a cgroup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Read and write requests; absent from a v1 `io_service_bytes` read alone.
    pub read_ios: Option<u64>,
    pub write_ios: Option<u64>,
}

/// A device number.
pub type DevNum = (u32, u32);

fn dev_num(s: &str) -> Option<DevNum> {
    let (major, minor) = s.split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// cgroup v2 `io.stat`: `259:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0` per device.
/// Keys it does not know (newer kernels add some) are ignored; a device line without `rbytes`
/// and `wbytes` is skipped.
pub fn parse_io_stat(text: &str) -> BTreeMap<DevNum, DeviceIo> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(dev) = fields.next().and_then(dev_num) else {
            continue;
        };
        let (mut rbytes, mut wbytes, mut rios, mut wios) = (None, None, None, None);
        for f in fields {
            let Some((key, value)) = f.split_once('=') else {
                continue;
            };
            let Ok(v) = value.parse::<u64>() else {
                continue;
            };
            match key {
                "rbytes" => rbytes = Some(v),
                "wbytes" => wbytes = Some(v),
                "rios" => rios = Some(v),
                "wios" => wios = Some(v),
                _ => {}
            }
        }
        if let (Some(read_bytes), Some(write_bytes)) = (rbytes, wbytes) {
            out.insert(
                dev,
                DeviceIo {
                    read_bytes,
                    write_bytes,
                    read_ios: rios,
                    write_ios: wios,
                },
            );
        }
    }
    out
}

/// cgroup v1 `blkio.throttle.io_service_bytes` (`bytes`) and, when read, `io_serviced` (`ios`):
/// `8:0 Read 4096` lines per device and operation, then `Total N`.
pub fn parse_blkio(bytes: &str, ios: Option<&str>) -> BTreeMap<DevNum, DeviceIo> {
    let mut out: BTreeMap<DevNum, DeviceIo> = BTreeMap::new();
    for (text, counting_ios) in [(Some(bytes), false), (ios, true)] {
        for line in text.unwrap_or("").lines() {
            let mut f = line.split_ascii_whitespace();
            let (Some(dev), Some(op), Some(v), None) = (f.next(), f.next(), f.next(), f.next())
            else {
                continue;
            };
            let (Some(dev), Ok(v)) = (dev_num(dev), v.parse::<u64>()) else {
                continue;
            };
            let d = out.entry(dev).or_default();
            match (op, counting_ios) {
                ("Read", false) => d.read_bytes = v,
                ("Write", false) => d.write_bytes = v,
                ("Read", true) => d.read_ios = Some(v),
                ("Write", true) => d.write_ios = Some(v),
                _ => {}
            }
        }
    }
    out
}

/// The kernel's name of the block device `dev` (`nvme0n1`, `sda`, `dm-0`), from the link
/// `sys/dev/block/<major>:<minor>`; `None` when there is none (a device gone).
pub fn device_name(sys: &Path, dev: DevNum) -> Option<String> {
    let link = std::fs::read_link(sys.join(format!("dev/block/{}:{}", dev.0, dev.1))).ok()?;
    let name = link.file_name()?.to_str()?.to_owned();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As `Documentation/admin-guide/cgroup-v2.rst` shows it, with a newer key and junk added.
    const IO_STAT: &str = "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n\
                           8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648 dios=3021 cost.usage=7\n\
                           259:0 rbytes=12 wios=1\n\
                           junk line\n\
                           x:1 rbytes=1 wbytes=1\n\
                           253:0 rbytes=18446744073709551616 wbytes=5\n";

    #[test]
    fn io_stat_gives_each_devices_counters() {
        let d = parse_io_stat(IO_STAT);
        assert_eq!(
            d.get(&(8, 16)),
            Some(&DeviceIo {
                read_bytes: 1_459_200,
                write_bytes: 314_773_504,
                read_ios: Some(192),
                write_ios: Some(353),
            })
        );
        assert_eq!(d.get(&(8, 0)).map(|d| d.read_ios), Some(Some(8950)));
        // Without both byte counts (or with one past u64) a line says nothing reliable.
        assert!(!d.contains_key(&(259, 0)));
        assert!(!d.contains_key(&(253, 0)));
        assert_eq!(d.len(), 2);
        assert!(parse_io_stat("").is_empty(), "no I/O yet: no line");
    }

    /// As `Documentation/admin-guide/cgroup-v1/blkio-controller.rst` describes the files.
    const SERVICE_BYTES: &str = "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 12288\n8:0 Async 0\n\
                                 8:0 Discard 0\n8:0 Total 12288\n8:16 Read 0\n8:16 Write 0\nTotal 12288\n";
    const SERVICED: &str = "8:0 Read 1\n8:0 Write 2\n8:0 Total 3\nTotal 3\n";

    #[test]
    fn blkio_gives_bytes_and_requests_per_device() {
        let d = parse_blkio(SERVICE_BYTES, Some(SERVICED));
        assert_eq!(
            d.get(&(8, 0)),
            Some(&DeviceIo {
                read_bytes: 4096,
                write_bytes: 8192,
                read_ios: Some(1),
                write_ios: Some(2),
            })
        );
        assert_eq!(d.get(&(8, 16)).map(|d| d.read_ios), Some(None));
        let only_bytes = parse_blkio(SERVICE_BYTES, None);
        assert_eq!(only_bytes.get(&(8, 0)).and_then(|d| d.read_ios), None);
        assert!(parse_blkio("Total 0\n", None).is_empty());
    }

    #[test]
    fn devices_are_named_from_sys() {
        let sys = std::env::temp_dir().join(format!("vramio-sysdev-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&sys);
        std::fs::create_dir_all(sys.join("dev/block")).expect("mkdir");
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1",
            sys.join("dev/block/259:0"),
        )
        .expect("link");
        assert_eq!(device_name(&sys, (259, 0)).as_deref(), Some("nvme0n1"));
        assert_eq!(device_name(&sys, (8, 0)), None);
        let _ = std::fs::remove_dir_all(&sys);
    }
}
