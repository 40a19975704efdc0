//! Tests of the page's view model.

use super::*;
use shared::units::{Bytes, BytesPerSec, Percent};
use shared::{BlockDevice, Gpu, GpuMemory, GpuState};

fn frame(host: &str, seq: u64, t_ms: u64) -> Frame {
    Frame::empty(host, seq, t_ms, 1000)
}

#[test]
fn capacity_covers_fifteen_minutes_capped() {
    assert_eq!(history_capacity(1000), 900);
    assert_eq!(history_capacity(2000), 450);
    assert_eq!(history_capacity(100), MAX_HISTORY);
    assert_eq!(history_capacity(0), MAX_HISTORY);
    assert_eq!(history_capacity(3_600_000), 1);
}

#[test]
fn dedups_by_seq_across_overlapping_backfills() {
    let mut h = Hosts::default();
    for seq in 1..=5 {
        assert_eq!(h.push("a", frame("a", seq, seq * 1000), 0.0), Accepted::New);
    }
    // A backfill after reconnect overlaps 4..=5 and adds 6..=7.
    let outcomes: Vec<_> = (4..=7)
        .map(|seq| h.push("a", frame("a", seq, seq * 1000), 0.0))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            Accepted::Duplicate,
            Accepted::Duplicate,
            Accepted::New,
            Accepted::New
        ]
    );
    let data = h.get("a").map(HostData::history);
    let seqs: Vec<u64> = data
        .into_iter()
        .flat_map(|r| r.iter().map(|s| s.seq))
        .collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(h.get("a").and_then(HostData::last_seq), Some(7));
}

#[test]
fn a_restarted_host_starts_over() {
    let mut h = Hosts::default();
    h.push("a", frame("a", 100, 100_000), 0.0);
    assert_eq!(
        h.push("a", frame("a", 1, 200_000), 0.0),
        Accepted::Restarted
    );
    let len = h.get("a").map(|d| d.history().len());
    assert_eq!(len, Some(1));
    assert_eq!(h.push("a", frame("a", 2, 201_000), 0.0), Accepted::New);
}

#[test]
fn a_reset_swaps_in_the_new_history_once_it_is_all_in() {
    let mut d = HostData::new(1000);
    for s in 1..=5 {
        d.push(frame("a", s, 100_000 + s * 1000), 0.0);
    }
    d.set_status(HostStatus {
        state: HostState::Up,
        last_seen_ms: None,
        error: None,
    });
    d.reset(3);
    // The new history: higher seqs, earlier times (a replay jumped back).
    assert_eq!(d.push(frame("a", 6, 10_000), 1.0), Accepted::Duplicate);
    assert_eq!(d.push(frame("a", 7, 11_000), 1.0), Accepted::Duplicate);
    assert_eq!(
        d.history().len(),
        5,
        "the old one shows until the new is in"
    );
    assert_eq!(d.last_seq(), Some(5));
    assert_eq!(d.push(frame("a", 8, 12_000), 1.0), Accepted::Restarted);
    let times: Vec<u64> = d.history().iter().map(|s| s.t_ms).collect();
    assert_eq!(times, vec![10_000, 11_000, 12_000]);
    assert_eq!(d.last_seq(), Some(8));
    assert!(d.status().is_some(), "the host's status stays");
    assert_eq!(d.push(frame("a", 9, 13_000), 1.0), Accepted::New);

    // A jump's history: samples, then the newest frame whole.
    d.reset(3);
    let sample = |seq, t_ms| Sample::of(&frame("a", seq, t_ms));
    assert_eq!(d.push_sample(sample(20, 50_000)), Accepted::Duplicate);
    assert_eq!(d.push_sample(sample(21, 51_000)), Accepted::Duplicate);
    assert_eq!(d.last_seq(), Some(9), "not shown yet");
    assert_eq!(d.push(frame("a", 22, 52_000), 1.0), Accepted::Restarted);
    let times: Vec<u64> = d.history().iter().map(|s| s.t_ms).collect();
    assert_eq!(times, vec![50_000, 51_000, 52_000]);
    assert_eq!(d.last_seq(), Some(22));
    assert_eq!(
        d.push_sample(sample(23, 53_000)),
        Accepted::Duplicate,
        "a sample outside a reset is ignored"
    );

    // Announced frames that do not all come: a live frame shows what did.
    d.reset(10);
    d.push(frame("a", 10, 1_000), 1.0);
    d.settle();
    assert_eq!(d.last_seq(), Some(10));
    assert_eq!(d.history().len(), 1);
    // None announced: the next frame starts the new history.
    d.reset(0);
    assert_eq!(d.push(frame("a", 11, 500), 1.0), Accepted::Restarted);
    assert_eq!(d.history().len(), 1);
}

#[test]
fn history_is_bounded() {
    let mut h = Hosts::default();
    for seq in 1..=1000 {
        h.push("a", frame("a", seq, seq * 1000), 0.0);
    }
    let ring = h.get("a").map(HostData::history);
    assert_eq!(ring.map(Ring::len), Some(900));
    assert_eq!(ring.and_then(Ring::first).map(|s| s.seq), Some(101));
}

#[test]
fn resume_seq_is_the_smallest_held() {
    let mut h = Hosts::default();
    h.ensure("idle", 1000);
    assert_eq!(h.resume_seq(), None);
    h.push("a", frame("a", 40, 1), 0.0);
    h.push("b", frame("b", 7, 1), 0.0);
    assert_eq!(h.resume_seq(), Some(7));
    assert_eq!(h.names(), vec!["a", "b", "idle"]);
    let held: Vec<_> = h.held_seqs().into_iter().collect();
    assert_eq!(held, vec![("a".to_owned(), 40), ("b".to_owned(), 7)]);
}

#[test]
fn hosts_are_keyed_by_the_servers_name_not_the_reported_hostname() {
    let mut h = Hosts::default();
    // Two peers of a hub that report the same hostname (cloned images).
    h.push("ssh://gpu1", frame("node", 10, 10_000), 0.0);
    h.push("gpu2:7575", frame("node", 3, 10_000), 0.0);
    assert_eq!(h.names(), vec!["gpu2:7575", "ssh://gpu1"]);
    assert_eq!(h.get("ssh://gpu1").and_then(HostData::last_seq), Some(10));
    assert_eq!(h.get("gpu2:7575").and_then(HostData::last_seq), Some(3));
    assert!(h.get("node").is_none());
}

#[test]
fn samples_keep_absent_values_absent() {
    let mut f = frame("a", 1, 1);
    f.gpus.push(Gpu {
        memory: Some(GpuMemory {
            total_bytes: Bytes(1000),
            used_bytes: Bytes(250),
            reserved_bytes: Some(Bytes(0)),
            free_bytes: Bytes(750),
        }),
        utilization_gpu_pct: Some(Percent(97.0)),
        ..Gpu::unread(0, Some("GPU-0".into()), Some("H100".into()), GpuState::Ok)
    });
    f.block_devices.push(BlockDevice {
        name: "vda".into(),
        rotational: None,
        partitions: vec![],
        read_bytes_total: Some(Bytes(0)),
        write_bytes_total: Some(Bytes(0)),
        read_bytes_per_sec: Some(BytesPerSec(2.0 * 1024.0 * 1024.0)),
        write_bytes_per_sec: None,
        read_iops: None,
        write_iops: None,
        util_pct: None,
        r_await_ms: None,
        w_await_ms: None,
        avg_queue_size: None,
        counters: None,
    });
    let s = Sample::of(&f);
    assert_eq!(s.gpus[0].mem_pct, Some(25.0));
    assert_eq!(s.gpus[0].util_pct, Some(97.0));
    assert_eq!(s.disks[0].read_mib_s, Some(2.0));
    assert_eq!(s.disks[0].write_mib_s, None);
    assert_eq!(s.disks[0].util_pct, None);
}
