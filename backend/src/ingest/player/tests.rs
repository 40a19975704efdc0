//! The player: speeds, pacing, pause, the end, and jumps to a moment.

use super::*;
use crate::host_feed::HostFeed;
use crate::host_feed::diagnoser::Diagnoser;

#[test]
fn speeds_parse_and_pace() {
    assert_eq!(Speed::parse("10x"), Ok(Speed::Times(10.0)));
    assert_eq!(Speed::parse("60"), Ok(Speed::Times(60.0)));
    assert_eq!(Speed::parse("MAX"), Ok(Speed::Max));
    for bad in [
        "0", "-1", "fast", "inf", "NaN", "1e9", "1e-20", "0.001x", "1e-300",
    ] {
        assert!(Speed::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(Speed::parse("0.01x"), Ok(Speed::Times(0.01)));
    // A speed that did not come through `parse` still paces (it panicked the player thread).
    assert_eq!(Speed::Times(1e-20).wait(1000), Duration::from_secs(1));
    assert_eq!(
        Speed::Times(f64::MIN_POSITIVE).wait(u64::MAX),
        Duration::from_secs(1)
    );
    assert_eq!(Speed::Times(10.0).wait(1000), Duration::from_millis(100));
    assert_eq!(Speed::Max.wait(1000), Duration::ZERO);
    assert_eq!(Speed::Times(1.0).wait(3_600_000), Duration::from_secs(1));
}

#[test]
fn frames_reach_the_hub_in_order_with_a_diagnosis() {
    let hub = HostFeed::new(
        "h",
        Duration::from_secs(1),
        crate::host_feed::HostFeedConfig::for_interval(Duration::from_secs(1)),
    );
    let frames: Vec<Frame> = (0..5)
        .map(|i| Frame::empty("h", 0, 1_700_000_000_000 + i * 1000, 1000))
        .collect();
    let diagnoser = Diagnoser::new(Default::default(), Duration::from_secs(60));
    let replay = Replay::new(frames, Speed::Times(100.0));
    let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
    let deadline = Instant::now() + Duration::from_secs(5);
    while hub.history_len() < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    p.stop_and_join();
    let t: Vec<u64> = hub.history_after(None).iter().map(|e| e.t_ms).collect();
    assert_eq!(t.len(), 5);
    assert!(t.windows(2).all(|w| w[1] - w[0] == 1000));
    assert!(hub.latest_diagnosis().is_some());
    let info = replay.info();
    assert_eq!(info.position_ms, Some(1_700_000_004_000));
    assert_eq!(
        (info.start_ms, info.end_ms, info.frames),
        (1_700_000_000_000, 1_700_000_004_000, 5)
    );
    assert_eq!(info.speed, Some(100.0));
    assert!(!info.playing, "at its end the replay pauses");
}

#[test]
fn a_paused_replay_waits_and_a_faster_one_catches_up() {
    let hub = HostFeed::new(
        "h",
        Duration::from_secs(1),
        crate::host_feed::HostFeedConfig::for_interval(Duration::from_secs(1)),
    );
    let frames: Vec<Frame> = (0..50)
        .map(|i| Frame::empty("h", 0, 1_700_000_000_000 + i * 1000, 1000))
        .collect();
    let replay = Replay::new(frames, Speed::Times(1.0));
    replay.steer(Some(false), None);
    let diagnoser = Diagnoser::new(Default::default(), Duration::from_secs(60));
    let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
    std::thread::sleep(Duration::from_millis(600));
    // The first frame is out; paused, no second one follows.
    assert_eq!(hub.history_len(), 1);
    assert!(!replay.info().playing);
    replay.steer(Some(true), Some(Speed::Max));
    let deadline = Instant::now() + Duration::from_secs(5);
    while hub.history_len() < 50 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(hub.history_len(), 50);
    assert_eq!(replay.info().speed, None);
    p.stop_and_join();
}

fn hub() -> HostFeed {
    HostFeed::new(
        "h",
        Duration::from_secs(1),
        crate::host_feed::HostFeedConfig::for_interval(Duration::from_secs(1)),
    )
}

/// `n` frames one second apart from `T0`.
const T0: u64 = 1_700_000_000_000;
fn frames(n: u64) -> Vec<Frame> {
    (0..n)
        .map(|i| Frame::empty("h", 0, T0 + i * 1000, 1000))
        .collect()
}

fn wait_until(what: &str, ok: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_jump_makes_that_moment_the_hubs_newest_with_fifteen_minutes_before_it() {
    let hub = hub();
    let replay = Replay::new(frames(3600), Speed::Times(1.0));
    replay.steer(Some(false), None);
    let diagnoser = Diagnoser::new(Default::default(), Duration::from_secs(60));
    let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
    wait_until("the first frame", || hub.history_len() == 1);
    let mut resets = hub.watch_resets();
    let seq_before = hub.latest().map(|e| e.seq);

    // Forward into the second hour; between two frames, the one before wins.
    let n = replay.seek(T0 + 2_000_500);
    assert!(replay.wait_for_seek(n, Duration::from_secs(5)));
    assert!(resets.has_changed().unwrap_or(false), "sessions are told");
    let held: Vec<u64> = hub.history_after(None).iter().map(|e| e.t_ms).collect();
    assert_eq!(held.last(), Some(&(T0 + 2_000_000)));
    assert_eq!(held.len(), 900, "the ring's capacity of the 15 minutes");
    assert!(held.windows(2).all(|w| w[1] - w[0] == 1000));
    let d = hub.latest_diagnosis().expect("a diagnosis");
    assert_eq!(
        d.diagnosis().t_ms,
        Some(T0 + 2_000_000),
        "over the window ending there"
    );
    assert_eq!(Some(d.seq), hub.latest().map(|e| e.seq));
    assert!(
        hub.reset_floor() > seq_before.unwrap_or(0),
        "new seqs, above the old"
    );
    let info = replay.info();
    assert_eq!(info.position_ms, Some(T0 + 2_000_000));
    assert!(!info.playing, "a jump keeps a pause");

    // Back near the start: only what came before it.
    resets.mark_unchanged();
    let n = replay.seek(T0 + 10_000);
    assert!(replay.wait_for_seek(n, Duration::from_secs(5)));
    assert!(resets.has_changed().unwrap_or(false));
    let held: Vec<u64> = hub.history_after(None).iter().map(|e| e.t_ms).collect();
    assert_eq!(held, (0..=10).map(|i| T0 + i * 1000).collect::<Vec<_>>());

    // Before the start and after the end: the first and the last frame.
    let n = replay.seek(0);
    assert!(replay.wait_for_seek(n, Duration::from_secs(5)));
    assert_eq!(replay.info().position_ms, Some(T0));
    assert_eq!(hub.history_len(), 1);
    let n = replay.seek(u64::MAX);
    assert!(replay.wait_for_seek(n, Duration::from_secs(5)));
    assert_eq!(replay.info().position_ms, Some(T0 + 3_599_000));

    // Paused, nothing more comes, yet the host is not stale.
    std::thread::sleep(hub.stale_after() + Duration::from_millis(300));
    assert_eq!(hub.host_state().0, shared::HostState::Up);
    assert_eq!(replay.info().position_ms, Some(T0 + 3_599_000));
    p.stop_and_join();
}

#[test]
fn playing_on_after_a_jump_continues_from_that_moment() {
    let hub = hub();
    let replay = Replay::new(frames(600), Speed::Times(100.0));
    let diagnoser = Diagnoser::new(Default::default(), Duration::from_secs(60));
    let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
    let n = replay.seek(T0 + 300_000);
    assert!(replay.wait_for_seek(n, Duration::from_secs(5)));
    wait_until("frames after the jump", || {
        hub.latest().is_some_and(|e| e.t_ms >= T0 + 303_000)
    });
    let held: Vec<u64> = hub.history_after(None).iter().map(|e| e.t_ms).collect();
    assert!(
        held.windows(2).all(|w| w[1] - w[0] == 1000),
        "no gap and no step back after the jump"
    );
    assert!(held.first().is_some_and(|t| *t <= T0 + 1000));
    p.stop_and_join();
}

#[test]
fn play_at_the_end_starts_over() {
    let hub = hub();
    let replay = Replay::new(frames(20), Speed::Max);
    let diagnoser = Diagnoser::new(Default::default(), Duration::from_secs(60));
    let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
    wait_until("the end", || !replay.info().playing);
    assert_eq!(replay.info().position_ms, Some(T0 + 19_000));
    std::thread::sleep(hub.stale_after() + Duration::from_millis(300));
    assert_eq!(
        hub.host_state().0,
        shared::HostState::Up,
        "at the end the host is held, not stale"
    );
    replay.steer(Some(true), Some(Speed::Times(1.0)));
    wait_until("the start", || {
        hub.latest().is_some_and(|e| e.t_ms == T0) && hub.history_len() == 1
    });
    p.stop_and_join();
}

#[test]
fn a_jump_nobody_makes_times_out() {
    let replay = Replay::new(frames(5), Speed::Max);
    let n = replay.seek(T0);
    assert!(!replay.wait_for_seek(n, Duration::from_millis(50)));
}

#[test]
fn frames_out_of_order_are_played_in_time_order() {
    let mut f = frames(4);
    f.swap(0, 3);
    let replay = Replay::new(f, Speed::Max);
    let t: Vec<u64> = replay.frames.iter().map(|f| f.t_ms).collect();
    assert!(t.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_one_frame_replay_neither_loops_nor_stalls() {
    let hub = hub();
    let replay = Replay::new(frames(1), Speed::Max);
    let diagnoser = Diagnoser::new(Default::default(), Duration::from_secs(60));
    let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
    wait_until("the end", || !replay.info().playing);
    let resets = hub.watch_resets();
    replay.steer(Some(true), None);
    wait_until("the end again", || !replay.info().playing);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!replay.info().playing);
    assert_eq!(*resets.borrow(), 1, "one start-over per Play");
    assert_eq!(hub.history_len(), 1);
    p.stop_and_join();
}

/// One GPU of 80 GiB at `used_pct` memory, 90% busy.
fn gpu_frame(t_ms: u64, used_pct: f64) -> Frame {
    use shared::units::{Bytes, Percent};
    let total = 80u64 << 30;
    let used = (total as f64 * used_pct / 100.0) as u64;
    let mut f = Frame::empty("h", 0, t_ms, 1000);
    f.gpus = vec![shared::Gpu {
        memory: Some(shared::GpuMemory {
            total_bytes: Bytes(total),
            used_bytes: Bytes(used),
            reserved_bytes: None,
            free_bytes: Bytes(total - used),
        }),
        utilization_gpu_pct: Some(Percent(90.0)),
        ..shared::Gpu::unread(0, None, None, shared::GpuState::Ok)
    }];
    f
}

#[test]
fn a_jump_diagnoses_the_moment_as_playing_through_would_with_its_hysteresis() {
    // Pressure from 100 s to 250 s, then 88%: still held (entered at 97%) until it clears.
    let frames: Vec<Frame> = (0..400u64)
        .map(|i| {
            let pct = match i {
                0..100 => 40.0,
                100..250 => 97.0,
                250..300 => 88.0,
                _ => 40.0,
            };
            gpu_frame(T0 + i * 1000, pct)
        })
        .collect();
    let th = shared::diagnosis::Thresholds::default();
    let mut straight = Vec::new();
    let mut prev = None;
    for i in 0..frames.len() {
        let lo = frames[..=i].partition_point(|f| frames[i].t_ms - f.t_ms > 60_000);
        let d = shared::diagnosis::diagnose(&frames[lo..=i], &th, prev.as_ref());
        straight.push(d.clone());
        prev = Some(d);
    }
    let hub = hub();
    let replay = Replay::new(frames, Speed::Times(1.0));
    replay.steer(Some(false), None);
    replay
        .spawn_timeline(th.clone(), Duration::from_secs(60))
        .expect("timeline");
    wait_until("the timeline", || replay.info().timeline.is_some());
    let diagnoser = Diagnoser::new(th, Duration::from_secs(60));
    let p = spawn(replay.clone(), hub.clone(), diagnoser).expect("thread");
    for i in [280usize, 120, 5, 399] {
        let n = replay.seek(T0 + i as u64 * 1000);
        assert!(replay.wait_for_seek(n, Duration::from_secs(5)));
        let d = hub.latest_diagnosis().expect("a diagnosis");
        assert_eq!(**d.diagnosis(), straight[i], "frame {i}");
    }
    assert_eq!(
        straight[280].verdict,
        shared::diagnosis::Verdict::GpuMemoryPressure,
        "held at 88%, so the hysteresis was carried"
    );
    p.stop_and_join();
}
