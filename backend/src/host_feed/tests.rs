//! Tests of the hub: seq, one encoding, ring, lag, locks, diagnosis hand-out.

use super::*;

fn hub(history: usize, channel: usize) -> HostFeed {
    HostFeed::new(
        "h",
        Duration::from_secs(1),
        HostFeedConfig {
            history_frames: history,
            channel_capacity: channel,
            first_seq: 1,
        },
    )
}

fn frame(t: u64) -> Frame {
    Frame::empty("h", 0, t, 1000)
}

#[test]
fn assigns_increasing_seq_and_encodes_once() {
    let h = hub(10, 4);
    let a = h.publish(frame(5)).expect("encodes");
    let b = h.publish(frame(6)).expect("encodes");
    assert_eq!((a, b), (1, 2));
    let latest = h.latest().expect("has a frame");
    let parsed: Frame = serde_json::from_str(latest.frame_json()).expect("frame json");
    assert_eq!(parsed.seq, 2);
    assert_eq!(parsed.t_ms, 6);
    let msg: shared::ServerMsg =
        serde_json::from_str(latest.message().as_str()).expect("message json");
    assert!(matches!(msg, shared::ServerMsg::Frame { frame, .. } if frame.seq == 2));
}

#[test]
fn publishing_in_place_stamps_the_caller_s_frame() {
    let h = hub(10, 4);
    h.publish(frame(4)).expect("encodes");
    let mut f = frame(5);
    let seq = h.publish_in_place(&mut f).expect("encodes");
    assert_eq!((seq, f.seq), (2, 2));
    let latest = h.latest().expect("has a frame");
    let parsed: Frame = serde_json::from_str(latest.frame_json()).expect("frame json");
    assert_eq!(
        parsed, f,
        "the caller keeps exactly the frame that was sent"
    );
}

#[test]
fn history_is_bounded_and_resumable() {
    let h = hub(5, 4);
    for t in 0..12 {
        h.publish(frame(t)).expect("encodes");
    }
    assert_eq!(h.history_len(), 5);
    let seqs: Vec<u64> = h.history_after(Some(9)).iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![10, 11, 12]);
    let all: Vec<u64> = h.history_after(None).iter().map(|e| e.seq).collect();
    assert_eq!(all, vec![8, 9, 10, 11, 12]);
}

#[test]
fn slow_receiver_lags_without_blocking_publish() {
    let h = hub(100, 4);
    let mut rx = h.subscribe().frames;
    for t in 0..10 {
        h.publish(frame(t)).expect("encodes");
    }
    match rx.try_recv() {
        Err(broadcast::error::TryRecvError::Lagged(n)) => assert_eq!(n, 6),
        other => panic!("expected lag, got {other:?}"),
    }
    assert_eq!(rx.try_recv().expect("next after lag").seq, 7);
}

#[test]
fn encoding_runs_while_a_session_holds_the_state_lock() {
    let h = hub(10, 4);
    h.publish(frame(1)).expect("encodes");
    // A session in the middle of reading history (or subscribing) holds this lock.
    let session = h.state();
    let (encoded_tx, encoded) = std::sync::mpsc::channel();
    let publisher = {
        let h = h.clone();
        std::thread::spawn(move || {
            let prepared = h.prepare(&mut frame(2)).expect("encodes");
            let _ = encoded_tx.send(prepared.entry.seq);
            prepared.commit()
        })
    };
    let seq = encoded.recv_timeout(Duration::from_secs(10));
    assert_eq!(
        seq,
        Ok(2),
        "the frame is stamped and encoded without waiting for the state lock"
    );
    assert_eq!(
        session.ring.len(),
        1,
        "but not stored while a session reads"
    );
    drop(session);
    assert_eq!(publisher.join().expect("publisher"), 2);
    assert_eq!(h.latest().expect("stored").seq, 2);
}

#[test]
fn subscribing_tells_the_first_seq_the_feed_will_carry() {
    let h = hub(10, 4);
    assert_eq!(h.subscribe().next_seq, 1);
    h.publish(frame(1)).expect("encodes");
    let mut sub = h.subscribe();
    assert_eq!(sub.next_seq, 2);
    h.publish(frame(2)).expect("encodes");
    assert_eq!(sub.frames.try_recv().expect("live").seq, 2);
}

#[test]
fn host_state_follows_publishing() {
    // Up is asserted on a hub of a 60 s interval, so no pause of this thread can make it stale;
    // stale on one of 10 ms, after a sleep that can only last longer than asked.
    let slow = HostFeed::new(
        "h",
        Duration::from_secs(60),
        HostFeedConfig::for_interval(Duration::from_secs(60)),
    );
    assert_eq!(slow.host_state().0, HostState::Down);
    slow.publish(frame(1)).expect("encodes");
    assert_eq!(slow.host_state().0, HostState::Up);
    let fast = HostFeed::new(
        "h",
        Duration::from_millis(10),
        HostFeedConfig::for_interval(Duration::from_millis(10)),
    );
    fast.publish(frame(1)).expect("encodes");
    std::thread::sleep(fast.stale_after() + Duration::from_millis(20));
    assert_eq!(fast.host_state().0, HostState::Stale);
}

#[test]
fn seq_can_start_later_so_restarts_keep_it_increasing() {
    let cfg = HostFeedConfig::for_interval(Duration::from_secs(1)).starting_at(1_700_000_000_000);
    let h = HostFeed::new("h", Duration::from_secs(1), cfg);
    assert_eq!(h.publish(frame(1)).expect("encodes"), 1_700_000_000_000);
    assert_eq!(h.publish(frame(2)).expect("encodes"), 1_700_000_000_001);
}

#[test]
fn diagnosis_is_encoded_once_and_watched() {
    let h = hub(10, 4);
    let mut rx = h.watch_diagnosis();
    assert!(h.latest_diagnosis().is_none());
    let d = shared::diagnosis::diagnose(&[], &Default::default(), None);
    h.publish_diagnosis(7, &d).expect("encodes");
    assert!(rx.has_changed().expect("sender alive"));
    let entry = rx.borrow_and_update().clone().expect("a diagnosis");
    assert_eq!(entry.seq, 7);
    let back: shared::diagnosis::Diagnosis =
        serde_json::from_str(entry.diagnosis_json()).expect("diagnosis json");
    assert_eq!(back, d);
    let msg: shared::ServerMsg =
        serde_json::from_str(entry.message().as_str()).expect("message json");
    assert!(matches!(msg, shared::ServerMsg::Diagnosis { host, .. } if host == "h"));
}

#[test]
fn history_sizing_follows_interval() {
    assert_eq!(
        HostFeedConfig::for_interval(Duration::from_secs(1)).history_frames,
        900
    );
    assert_eq!(
        HostFeedConfig::for_interval(Duration::from_millis(100)).history_frames,
        9000
    );
    assert_eq!(
        HostFeedConfig::for_interval(Duration::from_secs(5)).history_frames,
        900
    );
}

#[test]
fn user_names_are_dropped_for_viewers_that_may_not_see_them() {
    let fixture = include_str!("../../../tests/fixtures/protocol/server-frame.json");
    let msg: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
    let frame: Frame = serde_json::from_value(msg["frame"].clone()).expect("a frame");
    let user = frame
        .gpus
        .iter()
        .flat_map(|g| g.processes.iter().flatten())
        .find_map(|p| p.user.clone())
        .expect("the fixture names a user");
    let h = hub(10, 10);
    h.publish(frame).expect("publish");
    let e = h.latest().expect("entry");
    let quoted = format!("\"{user}\"");
    assert!(e.message_for(true).as_str().contains(&quoted));
    assert!(e.frame_json_for(true).contains(&quoted));
    let hidden = e.message_for(false);
    assert!(!hidden.as_str().contains("\"user\""), "{}", hidden.as_str());
    assert!(!e.frame_json_for(false).contains("\"user\""));
    let back: Frame = serde_json::from_str(e.frame_json_for(false)).expect("still a frame");
    assert_eq!(back.seq, e.seq, "the same frame, minus names");
    assert!(!back.jobs.is_empty(), "jobs stay, without their users");
    assert!(
        back.gpus
            .iter()
            .any(|g| g.processes.as_ref().is_some_and(|p| !p.is_empty()))
    );
    // A frame without user names is never re-encoded.
    h.publish(Frame::empty("h", 0, 5, 1000)).expect("publish");
    let plain = h.latest().expect("entry");
    assert_eq!(plain.message_for(false).as_str(), plain.message().as_str());
}

#[test]
fn a_peer_that_jumped_starts_the_hosts_history_over() {
    use crate::peers::PeerSink;
    let hub = HostFeed::new(
        "peer",
        Duration::from_secs(1),
        HostFeedConfig::for_interval(Duration::from_secs(1)),
    );
    for t in 0..5 {
        PeerSink::frame(&hub, Frame::empty("peer", t, 1_000_000 + t * 1000, 1000));
    }
    let resets = hub.watch_resets();
    PeerSink::reset(&hub);
    assert!(resets.has_changed().unwrap_or(false), "sessions are told");
    assert_eq!(hub.history_len(), 0);
    PeerSink::frame(&hub, Frame::empty("peer", 6, 10_000, 1000));
    let held: Vec<u64> = hub.history_after(None).iter().map(|e| e.t_ms).collect();
    assert_eq!(held, vec![10_000], "only the new history");
    assert!(hub.reset_floor() > 5);
}

#[test]
fn a_frame_whose_only_user_is_a_jobs_is_stripped_for_viewers() {
    let mut frame = Frame::empty("h", 1, 1_764_500_000_000, 1000);
    let fixture = include_str!("../../../tests/fixtures/protocol/server-frame.json");
    let msg: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
    let full: Frame = serde_json::from_value(msg["frame"].clone()).expect("a frame");
    frame.jobs = full.jobs;
    assert!(frame.jobs.iter().any(|j| j.user.is_some()));
    let h = hub(10, 10);
    h.publish(frame).expect("publish");
    let e = h.latest().expect("entry");
    assert!(e.frame_json_for(true).contains("\"user\""));
    assert!(!e.frame_json_for(false).contains("\"user\""));
    assert!(!e.message_for(false).as_str().contains("\"user\""));
}

#[test]
fn a_diagnosis_naming_a_users_job_is_sent_without_it_to_viewers_that_may_not_see_users() {
    let fixture = include_str!("../../../tests/fixtures/protocol/server-frame.json");
    let msg: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
    let mut frame: Frame = serde_json::from_value(msg["frame"].clone()).expect("a frame");
    let job = frame.jobs.first_mut().expect("the fixture has a job");
    job.kind = shared::JobKind::Unit;
    job.id = "jupyter-zoe-singleuser.service".into();
    job.user = Some("zoe".into());
    let h = hub(10, 10);
    h.publish(frame.clone()).expect("publish");
    let d = shared::diagnosis::diagnose(&[frame], &shared::diagnosis::Thresholds::default(), None);
    assert_eq!(d.users().collect::<Vec<_>>(), ["zoe"], "{:?}", d.jobs);
    let stand_in = {
        let mut t = "zoe".to_owned();
        hider(["zoe"]).hide(&mut t);
        t
    };
    let hidden_id = format!("jupyter-{stand_in}-singleuser.service");
    // A peer of the release before job verdicts carried users sends none: the frames' users are
    // hidden all the same.
    let mut old_peer = d.clone();
    old_peer.jobs.iter_mut().for_each(|j| j.user = None);
    for d in [d, old_peer] {
        h.publish_diagnosis(1, &d).expect("publish");
        let entry = h.latest_diagnosis().expect("a diagnosis");
        assert!(
            entry
                .message_for(true)
                .as_str()
                .contains("jupyter-zoe-singleuser")
        );
        let hidden = entry.message_for(false);
        assert!(!hidden.as_str().contains("zoe"), "{}", hidden.as_str());
        assert!(hidden.as_str().contains(&hidden_id), "{}", hidden.as_str());
        assert!(!entry.diagnosis_json_for(false).contains("zoe"));
        let back: shared::ServerMsg =
            serde_json::from_str(hidden.as_str()).expect("still a message");
        assert!(matches!(back, shared::ServerMsg::Diagnosis { .. }));
    }
    // The frame the same viewer gets hides the same words with the same stand-in.
    let e = h.latest().expect("entry");
    assert!(!e.frame_json_for(false).contains("zoe"));
    assert!(e.frame_json_for(false).contains(&hidden_id));
}
