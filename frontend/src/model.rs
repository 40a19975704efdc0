//! Plain per-host state behind the store: the latest frame, a bounded history of chart samples, and
//! the rule that decides whether an incoming frame is new, a duplicate or from a restarted server.
//!
//! No signals here; `store.rs` wraps [`Hosts`] in one and is its only writer. Tested natively.

use shared::window::Ring;
use shared::{Frame, HostState, HostSummary};
use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;

/// How far back the charts reach (DESIGN section 1: "live", the last 15 minutes).
pub const CHART_WINDOW_MS: u64 = 15 * 60 * 1000;

/// Upper bound on samples kept per host, so a 100 ms interval cannot grow memory past 3600 samples
/// (it then covers 6 minutes instead of 15).
pub const MAX_HISTORY: usize = 3600;

/// Samples needed to cover [`CHART_WINDOW_MS`] at `interval_ms`, capped at [`MAX_HISTORY`].
pub fn history_capacity(interval_ms: u64) -> usize {
    let samples = CHART_WINDOW_MS.div_ceil(interval_ms.max(1));
    usize::try_from(samples).map_or(MAX_HISTORY, |n| n.clamp(1, MAX_HISTORY))
}

/// A shared frame that compares by identity: memos holding it notice a new frame without
/// comparing every field of the old one.
#[derive(Clone, Debug)]
pub struct FrameRef(pub Arc<Frame>);

impl PartialEq for FrameRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for FrameRef {
    type Target = Frame;
    fn deref(&self) -> &Frame {
        &self.0
    }
}

/// A host's latest summary (a hub's overview), compared by identity like [`FrameRef`]: the store
/// replaces it only when a new one differs.
#[derive(Clone, Debug)]
pub struct SummaryRef(pub Arc<HostSummary>);

impl PartialEq for SummaryRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for SummaryRef {
    type Target = HostSummary;
    fn deref(&self) -> &HostSummary {
        &self.0
    }
}

/// The few numbers of one frame the charts draw, so 15 minutes of history stay small.
pub use shared::history::{DiskSample, GpuSample, Sample};

/// What happened to a frame handed to [`HostData::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    New,
    /// Already held (a backfill overlapping what we have): ignored.
    Duplicate,
    /// A lower seq with a later time: the host's vramio restarted and counts from the start again.
    /// History was cleared and the frame kept.
    Restarted,
}

/// Liveness of a host as the last `host_status` said.
#[derive(Clone, Debug, PartialEq)]
pub struct HostStatus {
    pub state: HostState,
    pub last_seen_ms: Option<u64>,
    pub error: Option<String>,
}

/// Everything the page holds for one host.
#[derive(Clone, Debug)]
pub struct HostData {
    latest: Option<FrameRef>,
    history: Ring<Sample>,
    /// Browser clock (ms since the epoch) when `latest` arrived; ages use it, not the host's clock.
    received_at_ms: Option<f64>,
    status: Option<HostStatus>,
    /// After a `reset`: the new history being gathered, and how many of its frames are still to
    /// come. It replaces what is shown once they are all in, so the page never shows an empty or
    /// half-filled host in between.
    next: Option<(Box<HostData>, u64)>,
}

impl HostData {
    pub fn new(interval_ms: u64) -> Self {
        HostData {
            latest: None,
            history: Ring::new(history_capacity(interval_ms)),
            received_at_ms: None,
            status: None,
            next: None,
        }
    }

    /// The server replaced this host's history: the next `frames` frames (at least one) are the
    /// new one.
    pub fn reset(&mut self, frames: u64) {
        let interval = self.latest.as_ref().map_or(1000, |f| f.interval_ms);
        self.next = Some((Box::new(HostData::new(interval)), frames.max(1)));
    }

    /// Takes a chart sample of a new history (a `history` message after `reset`). Samples
    /// come only there; one that comes otherwise is ignored.
    pub fn push_sample(&mut self, sample: Sample) -> Accepted {
        let Some((next, left)) = &mut self.next else {
            return Accepted::Duplicate;
        };
        next.history.push(sample);
        *left = left.saturating_sub(1);
        if *left > 0 {
            return Accepted::Duplicate;
        }
        self.settle();
        Accepted::Restarted
    }

    /// Shows the new history gathered so far, however much of it came (a live frame came first).
    pub fn settle(&mut self) {
        if let Some((next, _)) = self.next.take() {
            self.swap_in(*next);
        }
    }

    /// [`HostData::settle`] where a new history was gathering; whether one was.
    pub fn settle_pending(&mut self) -> bool {
        let pending = self.next.as_ref().is_some_and(|(n, _)| n.latest.is_some());
        self.settle();
        pending
    }

    fn swap_in(&mut self, next: HostData) {
        let status = self.status.take();
        *self = next;
        self.status = status;
    }

    pub fn latest(&self) -> Option<&FrameRef> {
        self.latest.as_ref()
    }
    pub fn last_seq(&self) -> Option<u64> {
        self.latest.as_ref().map(|f| f.seq)
    }
    pub fn history(&self) -> &Ring<Sample> {
        &self.history
    }
    pub fn received_at_ms(&self) -> Option<f64> {
        self.received_at_ms
    }
    pub fn status(&self) -> Option<&HostStatus> {
        self.status.as_ref()
    }
    pub fn set_status(&mut self, status: HostStatus) {
        self.status = Some(status);
    }

    /// Takes `frame` unless its seq was already seen. `now_ms` is the browser's clock.
    pub fn push(&mut self, frame: Frame, now_ms: f64) -> Accepted {
        if let Some((next, left)) = &mut self.next {
            next.push(frame, now_ms);
            *left = left.saturating_sub(1);
            if *left > 0 {
                return Accepted::Duplicate;
            }
            self.settle();
            return Accepted::Restarted;
        }
        let mut outcome = Accepted::New;
        if let Some(last) = &self.latest
            && frame.seq <= last.seq
        {
            // Overlapping backfill frames are older than what we hold; a restarted server sends
            // low seqs with newer times.
            if frame.t_ms <= last.t_ms {
                return Accepted::Duplicate;
            }
            self.history.clear();
            outcome = Accepted::Restarted;
        }
        let capacity = history_capacity(frame.interval_ms);
        if capacity != self.history.capacity() {
            let mut resized = Ring::new(capacity);
            for s in self.history.iter() {
                resized.push(s.clone());
            }
            self.history = resized;
        }
        self.history.push(Sample::of(&frame));
        self.latest = Some(FrameRef(Arc::new(frame)));
        self.received_at_ms = Some(now_ms);
        outcome
    }
}

/// All hosts the page knows, by name.
#[derive(Clone, Debug, Default)]
pub struct Hosts {
    hosts: BTreeMap<String, HostData>,
}

impl Hosts {
    /// Makes `host` known (from `hello`) before its first frame arrives.
    pub fn ensure(&mut self, host: &str, interval_ms: u64) -> &mut HostData {
        self.hosts
            .entry(host.to_owned())
            .or_insert_with(|| HostData::new(interval_ms))
    }

    /// Takes `frame` for `host`, the name the server knows the host by (never `frame.host`, the
    /// hostname the machine reports: two hosts may report the same one).
    pub fn push(&mut self, host: &str, frame: Frame, now_ms: f64) -> Accepted {
        let interval_ms = frame.interval_ms;
        self.ensure(host, interval_ms).push(frame, now_ms)
    }

    pub fn get(&self, host: &str) -> Option<&HostData> {
        self.hosts.get(host)
    }
    pub fn get_mut(&mut self, host: &str) -> Option<&mut HostData> {
        self.hosts.get_mut(host)
    }

    pub fn names(&self) -> Vec<String> {
        self.hosts.keys().cloned().collect()
    }

    /// The seq to resume from after a reconnect: the smallest last seq over hosts that have frames,
    /// so no host misses one (the overlap for the others is dropped as duplicates).
    pub fn resume_seq(&self) -> Option<u64> {
        self.hosts.values().filter_map(HostData::last_seq).min()
    }

    /// Per host that has frames, the newest seq held (a hub's `subscribe.since`).
    pub fn held_seqs(&self) -> BTreeMap<String, u64> {
        self.hosts
            .iter()
            .filter_map(|(name, d)| d.last_seq().map(|s| (name.clone(), s)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
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
            index: 0,
            uuid: Some("GPU-0".into()),
            name: Some("H100".into()),
            state: GpuState::Ok,
            memory: Some(GpuMemory {
                total_bytes: Bytes(1000),
                used_bytes: Bytes(250),
                reserved_bytes: Some(Bytes(0)),
                free_bytes: Bytes(750),
            }),
            utilization_gpu_pct: Some(Percent(97.0)),
            utilization_memory_pct: None,
            temperature_c: None,
            power_w: None,
            power_limit_w: None,
            processes: None,
            processes_t_ms: None,
            nvml_api: None,
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
}
