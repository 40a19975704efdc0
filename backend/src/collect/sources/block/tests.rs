//! Tests of the block source: diskstats parsing on fixtures, `iostat -x` rates, partitions, sysfs.

use super::*;

const T0: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/diskstats/gpu-node-t0.txt"
));
const T1: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/diskstats/gpu-node-t1.txt"
));
const K418: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/diskstats/kernel-4.19-18fields.txt"
));
const K414: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/diskstats/kernel-4.14-14fields.txt"
));

fn stats(text: &str) -> Vec<DiskStat> {
    parse_diskstats(text).expect("fixture parses")
}

fn counters(text: &str) -> HashMap<String, Counters> {
    stats(text)
        .iter()
        .map(|d| (d.name.clone(), Counters::from(d)))
        .collect()
}

fn device<'a>(devs: &'a [BlockDevice], name: &str) -> &'a BlockDevice {
    devs.iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} missing from {devs:?}"))
}

#[test]
fn parses_14_18_and_20_field_lines() {
    let old = stats(K414);
    assert_eq!(old.len(), 4);
    assert_eq!(old[0].name, "xvda");
    assert_eq!(old[0].sectors_written, 54321098);
    assert_eq!(old[0].weighted_time_in_progress, 1111110);
    assert_eq!(old[0].discards, None);
    assert_eq!(old[0].flushes, None);

    let mid = stats(K418);
    assert_eq!(mid[0].name, "sda");
    assert_eq!(mid[0].time_in_progress, 63688);
    assert_eq!(mid[0].discards, Some(1530));
    assert_eq!(mid[0].time_discarding, Some(2404));
    assert_eq!(mid[0].flushes, None);

    let new = stats(T0);
    let nvme = new.iter().find(|d| d.name == "nvme0n1").expect("nvme0n1");
    assert_eq!(nvme.sectors_read, 80000000);
    assert_eq!(nvme.flushes, Some(20000));
    assert_eq!(nvme.time_flushing, Some(30000));
}

#[test]
fn rejects_a_short_line() {
    assert!(parse_diskstats("8 0 sda 1 2 3\n").is_err());
    // Devices never reported are skipped before parsing.
    let skipped = parse_diskstats("7 0 loop0 1 2 3\n").expect("not parsed");
    assert!(skipped.is_empty());
    let t0 = stats(T0);
    assert!(!t0.is_empty() && t0.iter().all(|d| !is_ignored(&d.name)));
}

#[test]
fn names_fold_to_their_disk() {
    let all = [
        "sda",
        "sda1",
        "sdaa",
        "vda",
        "vda2",
        "xvda",
        "xvda1",
        "nvme0n1",
        "nvme0n1p1",
        "nvme0n10",
        "mmcblk0",
        "mmcblk0p1",
        "dm-1",
        "dm-10",
        "md0",
        "md126",
        "md126p1",
        "sr0",
    ];
    let parent = |n| parent_disk(n, all.iter().copied());
    assert_eq!(parent("sda1"), Some("sda"));
    assert_eq!(parent("vda2"), Some("vda"));
    assert_eq!(parent("xvda1"), Some("xvda"));
    assert_eq!(parent("nvme0n1p1"), Some("nvme0n1"));
    assert_eq!(parent("mmcblk0p1"), Some("mmcblk0"));
    assert_eq!(parent("md126p1"), Some("md126"));
    for whole in [
        "sda", "sdaa", "nvme0n1", "nvme0n10", "dm-1", "dm-10", "md0", "md126", "sr0",
    ] {
        assert_eq!(parent(whole), None, "{whole} is a whole device");
    }
}

#[test]
fn first_sample_has_totals_and_no_rates() {
    let devs = block_devices(&stats(T0), None, &HashMap::new(), None, |_| None);
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["nvme0n1", "sda", "sdb", "sdd", "md0", "dm-0"]);
    let nvme = device(&devs, "nvme0n1");
    assert_eq!(nvme.partitions, ["nvme0n1p1", "nvme0n1p2"]);
    assert_eq!(nvme.read_bytes_total, Some(Bytes(80000000 * 512)));
    assert_eq!(nvme.write_bytes_total, Some(Bytes(60000000 * 512)));
    assert_eq!(nvme.read_bytes_per_sec, None);
    assert_eq!(nvme.util_pct, None);
    assert_eq!(nvme.avg_queue_size, None);
    // The raw counters of the line, as /proc/diskstats has them (for `/metrics`).
    assert_eq!(
        nvme.counters,
        Some(BlockCounters {
            reads_completed_total: 1_000_000,
            writes_completed_total: 500_000,
            io_time_ms_total: 700_000,
            weighted_io_time_ms_total: 1_300_000,
        })
    );
    assert_eq!(device(&devs, "sda").partitions, ["sda1"]);
    assert!(device(&devs, "dm-0").partitions.is_empty());
}

/// Two readings one second apart; the expected values are `iostat -x` worked by hand from the
/// fixture deltas.
#[test]
fn one_second_between_fixtures_matches_iostat() {
    let prev = counters(T0);
    let devs = block_devices(&stats(T1), None, &prev, Some(Duration::from_secs(1)), |d| {
        Some(d.starts_with("sd"))
    });
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["nvme0n1", "sda", "sdb", "sde", "md0", "dm-0"]);

    // nvme0n1: +409600 sectors read, +102400 written, +2000 reads in +1000 ms, +500 writes in
    // +1500 ms, io_ticks +850 ms, weighted +2600 ms.
    let nvme = device(&devs, "nvme0n1");
    assert_eq!(nvme.rotational, Some(false));
    assert_eq!(nvme.read_bytes_per_sec, Some(BytesPerSec(209_715_200.0))); // 204800 rkB/s
    assert_eq!(nvme.write_bytes_per_sec, Some(BytesPerSec(52_428_800.0))); // 51200 wkB/s
    assert_eq!(nvme.read_iops, Some(2000.0));
    assert_eq!(nvme.write_iops, Some(500.0));
    assert_eq!(nvme.util_pct, Some(Percent(85.0)));
    assert_eq!(nvme.r_await_ms, Some(0.5));
    assert_eq!(nvme.w_await_ms, Some(3.0));
    assert_eq!(nvme.avg_queue_size, Some(2.6));
    // The disk's own line, not its partitions added on top.
    assert_eq!(nvme.read_bytes_total, Some(Bytes(80409600 * 512)));

    // sda: writes only (+100 writes, +2048 sectors, +800 ms); io_ticks +1200 ms in a 1000 ms
    // interval is capped at 100 %.
    let sda = device(&devs, "sda");
    assert_eq!(sda.rotational, Some(true));
    assert_eq!(sda.read_bytes_per_sec, Some(BytesPerSec(0.0)));
    assert_eq!(sda.write_bytes_per_sec, Some(BytesPerSec(1_048_576.0)));
    assert_eq!(sda.read_iops, Some(0.0));
    assert_eq!(sda.write_iops, Some(100.0));
    assert_eq!(sda.r_await_ms, None);
    assert_eq!(sda.w_await_ms, Some(8.0));
    assert_eq!(sda.util_pct, Some(Percent(100.0)));
    assert_eq!(sda.avg_queue_size, Some(1.6));

    // sdb: idle, still listed; no request completed so no await.
    let sdb = device(&devs, "sdb");
    assert_eq!(sdb.util_pct, Some(Percent(0.0)));
    assert_eq!(sdb.avg_queue_size, Some(0.0));
    assert_eq!(sdb.r_await_ms, None);
    assert_eq!(sdb.w_await_ms, None);

    // md0 keeps no time counters: throughput but zero util and await.
    let md = device(&devs, "md0");
    assert_eq!(md.write_bytes_per_sec, Some(BytesPerSec(1_048_576.0)));
    assert_eq!(md.write_iops, Some(100.0));
    assert_eq!(md.w_await_ms, Some(0.0));
    assert_eq!(md.util_pct, Some(Percent(0.0)));

    // dm-0 has its own line: same activity as the NVMe under it.
    let dm = device(&devs, "dm-0");
    assert_eq!(dm.read_bytes_per_sec, Some(BytesPerSec(209_715_200.0)));
    assert_eq!(dm.util_pct, Some(Percent(85.0)));
    assert_eq!(dm.avg_queue_size, Some(2.6));

    // sde appeared: totals, no rates. sdd vanished: simply absent.
    let sde = device(&devs, "sde");
    assert_eq!(sde.read_bytes_total, Some(Bytes(2048 * 512)));
    assert_eq!(sde.read_bytes_per_sec, None);
    assert!(!devs.iter().any(|d| d.name == "sdd"));
}

#[test]
fn sysfs_names_decide_what_is_whole() {
    let whole: HashSet<String> = ["nvme0n1", "sda", "sdb", "md0", "dm-0", "loop0", "zram0"]
        .map(String::from)
        .into();
    let devs = block_devices(&stats(T0), Some(&whole), &HashMap::new(), None, |_| None);
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    // sdd is not in /sys/block (it went away between the two reads): not listed.
    assert_eq!(names, ["nvme0n1", "sda", "sdb", "md0", "dm-0"]);
    assert_eq!(device(&devs, "sdb").partitions, ["sdb1"]);
}

#[test]
fn source_rates_between_calls() {
    let dir = std::env::temp_dir().join(format!("vramio-block-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("diskstats");
    std::fs::write(&path, T0).expect("write fixture");
    let mut src = ProcDiskstats::with_paths(&path, dir.join("no-sysfs"));
    let first = src.sample().expect("first sample");
    assert!(first.iter().all(|d| d.read_bytes_per_sec.is_none()));
    std::fs::write(&path, T1).expect("write fixture");
    let second = src.sample().expect("second sample");
    let nvme = device(&second, "nvme0n1");
    assert!(nvme.read_bytes_per_sec.is_some_and(|r| r.0 > 0.0));
    assert_eq!(nvme.rotational, None);
    std::fs::remove_file(&path).expect("remove fixture");
    let gone = src.sample();
    assert!(matches!(gone, Err(SourceFailure::Io { .. })));
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
}

#[test]
fn sysfs_is_read_again_when_a_disk_appears() {
    let dir = std::env::temp_dir().join(format!("vramio-topo-{}", std::process::id()));
    let sys = dir.join("block");
    for (disk, rot) in [("sda", "1"), ("nvme0n1", "0")] {
        std::fs::create_dir_all(sys.join(disk).join("queue")).expect("sysfs dir");
        std::fs::write(sys.join(disk).join("queue/rotational"), rot).expect("rotational");
    }
    let path = dir.join("diskstats");
    let sda = "   8       0 sda 10 0 80 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n";
    std::fs::write(&path, sda).expect("diskstats");
    let mut src = ProcDiskstats::with_paths(&path, &sys);
    let first = src.sample().expect("first");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].rotational, Some(true));
    // A disk is hot-plugged: its line appears and sysfs is consulted for it.
    let both = format!("{sda} 259       0 nvme0n1 10 0 80 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n");
    std::fs::write(&path, both).expect("diskstats");
    let second = src.sample().expect("second");
    assert_eq!(device(&second, "nvme0n1").rotational, Some(false));
    assert_eq!(device(&second, "sda").rotational, Some(true));
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
}

#[test]
fn between_full_reads_each_disk_reads_its_own_stat_file() {
    let dir = std::env::temp_dir().join(format!("vramio-diskfile-{}", std::process::id()));
    let sys = dir.join("block");
    std::fs::create_dir_all(sys.join("sda/queue")).expect("sysfs dir");
    std::fs::write(sys.join("sda/queue/rotational"), "1").expect("rotational");
    let path = dir.join("diskstats");
    let line = |sectors: u64| {
        format!(
            "   8       0 sda 10 0 {sectors} 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n   \
             8       1 sda1 10 0 {sectors} 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n"
        )
    };
    std::fs::write(&path, line(80)).expect("diskstats");
    let stat = |sectors: u64| format!("10 0 {sectors} 5 10 0 80 5 0 10 10 0 0 0 0 0 0\n");
    std::fs::write(sys.join("sda/stat"), stat(2000)).expect("stat");
    let mut src = ProcDiskstats::with_paths(&path, &sys);
    let total = |devs: &[BlockDevice]| device(devs, "sda").read_bytes_total;

    // The first reading is the full one.
    let first = src.sample().expect("first");
    assert_eq!(total(&first), Some(Bytes(80 * 512)));
    assert_eq!(device(&first, "sda").partitions, ["sda1"]);
    // The next comes from the disk's own file (the full file would say 80 still).
    let second = src.sample().expect("second");
    assert_eq!(total(&second), Some(Bytes(2000 * 512)));
    assert!(
        device(&second, "sda")
            .read_bytes_per_sec
            .is_some_and(|r| r.0 > 0.0)
    );
    assert_eq!(
        device(&second, "sda").partitions,
        ["sda1"],
        "partitions stay listed"
    );
    assert_eq!(device(&second, "sda").rotational, Some(true));
    assert_eq!(src.stat_files_open(), 1);
    // Its file fails (on sysfs a disk that went away answers ENODEV; here it stops parsing):
    // the full reading answers at once.
    std::fs::write(&path, line(3000)).expect("diskstats");
    std::fs::write(sys.join("sda/stat"), "gone\n").expect("stat");
    let third = src.sample().expect("third");
    assert_eq!(total(&third), Some(Bytes(3000 * 512)));
    assert_eq!(src.stat_files_open(), 0);
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
}
