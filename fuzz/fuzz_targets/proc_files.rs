//! Fuzz target `proc_files`: the texts the jobs source reads from `/proc` and cgroupfs, which
//! other users' processes shape (a cgroup path is any name its creator chose): a
//! `/proc/<pid>/cgroup` through `cgroup::identify` and `cgroup::v2_path`, `/proc/self/mounts`
//! through `parse_cgroup2_mount`, a cgroup's `io.pressure` through `parse_psi`, and its `io.stat`
//! and v1 `blkio` files through `parse_io_stat` and `parse_blkio`, its `cpu.stat`,
//! `cpuacct.usage`, `memory.stat`, `cgroup.procs` and `cgroup.stat` and the v1 mounts through
//! `cgroup_counters`, and a process's kept `stat` and `io` through `procs::parse_stat` and
//! `parse_io` (a `comm` is any name its process chose). None may
//! panic, and what `identify` finds keeps each kind's shape: a Slurm id of digits (and `_`), a
//! container of 64 hex digits, a pod UID of 36, and a v2 folder that leads the process's v2 path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::JobKind;
use vramio::collect::sources::jobs::cgroup::{identify, v2_path};
use vramio::collect::sources::jobs::cgroup_counters::{
    Mounts, parse_cpu_stat, parse_cpuacct_usage, parse_descendants, parse_memory_stat_v1,
    parse_memory_stat_v2, parse_procs,
};
use vramio::collect::sources::jobs::cgroup_io::{parse_blkio, parse_io_stat};
use vramio::collect::sources::jobs::procs::{parse_io, parse_stat};
use vramio::collect::sources::jobs::parse_cgroup2_mount;
use vramio::collect::sources::system::parse_psi;

fuzz_target!(|data: &[u8]| {
    // Kept files are read as bytes: any bytes, never a panic.
    let _ = parse_stat(data);
    let _ = parse_io(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Mounts::parse(text);
    let _ = (parse_cpu_stat(text), parse_cpuacct_usage(text));
    let _ = (parse_memory_stat_v1(text), parse_memory_stat_v2(text));
    let _ = parse_descendants(text);
    assert!(parse_procs(text).iter().all(|pid| *pid > 0));
    let _ = parse_cgroup2_mount(text);
    let _ = parse_psi(text);
    // Every device read has both byte counts; a v1 file read alone has no request counts.
    let _ = parse_io_stat(text);
    let (bytes, ios) = text.split_once('\n').unwrap_or((text, ""));
    for d in parse_blkio(bytes, None).values() {
        assert!(d.read_ios.is_none() && d.write_ios.is_none(), "{d:?}");
    }
    let _ = parse_blkio(bytes, Some(ios));
    let path = v2_path(text);
    let Some(found) = identify(text) else {
        return;
    };
    assert!(!found.id.is_empty(), "{found:?}");
    match found.kind {
        JobKind::Slurm => assert!(
            found.id.bytes().all(|b| b.is_ascii_digit() || b == b'_'),
            "{found:?}"
        ),
        JobKind::Container => {
            assert!(found.id.len() == 64 && found.id.bytes().all(|b| b.is_ascii_hexdigit()))
        }
        JobKind::Pod => assert_eq!(found.id.len(), 36, "{found:?}"),
        JobKind::Unit => assert!(found.id.ends_with(".service"), "{found:?}"),
        JobKind::Process | JobKind::Hpc => {
            panic!("a cgroup never names a process-tree or mapped job")
        }
    }
    assert!(
        !found.dir.split('/').any(|p| p == "." || p == ".."),
        "{found:?}"
    );
    if let Some(dir) = &found.v2_dir {
        let path = path.expect("a v2 folder comes from the v2 line");
        let normal: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let dir_parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        assert!(normal.starts_with(&dir_parts), "{dir} does not lead {path}");
    }
});
