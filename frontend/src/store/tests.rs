//! The store's tests: messages in, memos out.

use super::*;

#[test]
fn lagged_notices_add_up_and_notices_are_bounded() {
    let mut n = Vec::new();
    add_notice(&mut n, Notice::Lagged { skipped: 3 });
    add_notice(&mut n, Notice::Decode("x".into()));
    add_notice(&mut n, Notice::Lagged { skipped: 4 });
    assert_eq!(n[0], Notice::Lagged { skipped: 7 });
    assert_eq!(n.len(), 2);
    for i in 0..10 {
        add_notice(&mut n, Notice::Decode(i.to_string()));
    }
    assert_eq!(n.len(), MAX_NOTICES);
    assert_eq!(n.last(), Some(&Notice::Decode("9".into())));
}

#[test]
fn applies_messages_and_ignores_replayed_frames() {
    use shared::Frame;
    let store = Store::new();
    store.apply(
        ServerMsg::hello(vec!["gpu1".into()], 1000, "0.1.0", "i1"),
        0.0,
    );
    assert_eq!(store.current_host.get_untracked().as_deref(), Some("gpu1"));
    assert!(store.latest.get_untracked().is_none());
    let frames = (1..=3)
        .map(|s| Frame::empty("gpu1", s, s * 1000, 1000))
        .collect();
    store.apply(
        ServerMsg::Backfill {
            host: "gpu1".into(),
            frames,
        },
        10.0,
    );
    assert_eq!(store.resume_seq(), Some(3));
    let replayed = Frame::empty("gpu1", 2, 2000, 1000);
    store.apply(
        ServerMsg::Frame {
            host: "gpu1".into(),
            frame: Box::new(replayed),
        },
        20.0,
    );
    assert_eq!(store.latest.get_untracked().map(|f| f.seq), Some(3));
    assert_eq!(store.received_at_ms.get_untracked(), Some(10.0));
    let next = Frame::empty("gpu1", 4, 4000, 1000);
    store.apply(
        ServerMsg::Frame {
            host: "gpu1".into(),
            frame: Box::new(next),
        },
        30.0,
    );
    assert_eq!(store.latest.get_untracked().map(|f| f.seq), Some(4));
    assert_eq!(store.with_history(|h| h.len()), Some(4));
    store.apply(ServerMsg::Lagged { skipped: 2 }, 30.0);
    assert_eq!(
        store.notices().get_untracked(),
        vec![Notice::Lagged { skipped: 2 }]
    );
    store.dismiss(0);
    assert!(store.notices().get_untracked().is_empty());
}

#[test]
fn keeps_the_latest_diagnosis_per_host() {
    use shared::diagnosis::{Severity, Verdict};
    let diag = |verdict, t_ms| Diagnosis {
        verdict,
        severity: Severity::Ok,
        path: vec![],
        findings: vec![],
        projections: vec![],
        window_s: Some(60.0),
        t_ms: Some(t_ms),
        no_data: None,
        jobs: vec![],
    };
    let store = Store::new();
    store.apply(
        ServerMsg::hello(vec!["a".into(), "b".into()], 1000, "0.1.0", "i1"),
        0.0,
    );
    assert_eq!(store.diagnosis.get_untracked(), None);
    let send = |host: &str, d: Diagnosis| {
        store.apply(
            ServerMsg::Diagnosis {
                host: host.into(),
                diagnosis: Box::new(d),
            },
            0.0,
        );
    };
    send("a", diag(Verdict::Healthy, 1));
    send("b", diag(Verdict::DiskSpaceRisk, 1));
    send("a", diag(Verdict::GpuMemoryPressure, 2));
    let verdict = || store.diagnosis.get_untracked().map(|d| d.verdict);
    // A hub shows the host the route names.
    assert_eq!(verdict(), None);
    store.select(Some("a".into()));
    assert_eq!(verdict(), Some(Verdict::GpuMemoryPressure));
    store.select(Some("b".into()));
    assert_eq!(verdict(), Some(Verdict::DiskSpaceRisk));
    // A diagnosis for a host `hello` did not name makes it known.
    send("c", diag(Verdict::NoData, 1));
    assert_eq!(store.host_names.get_untracked(), vec!["a", "b", "c"]);
}

#[test]
fn gaps_are_three_intervals() {
    assert_eq!(max_gap_ms(1000), 3000);
    assert_eq!(max_gap_ms(0), 3);
}

#[test]
fn protocol_versions_are_checked() {
    let info = |protocol| ServerInfo {
        protocol,
        version: "0.1.0".into(),
        hosts: vec![],
        interval_ms: 1000,
    };
    assert!(info(PROTOCOL_VERSION).compatible());
    assert!(!info(PROTOCOL_VERSION + 1).compatible());
}

#[test]
fn a_hub_keys_hosts_by_the_message_and_shows_only_the_selected_one() {
    use shared::{Frame, HostState, HostSummary};
    let store = Store::new();
    store.apply(
        ServerMsg::hello(
            vec!["ssh://gpu1".into(), "gpu2:7575".into()],
            1000,
            "0.1.0",
            "i1",
        ),
        0.0,
    );
    assert!(store.many_hosts.get_untracked());
    // The overview: no host shown.
    assert_eq!(store.current_host.get_untracked(), None);
    // Both peers report the same hostname; they stay apart.
    for (host, seq) in [("ssh://gpu1", 10), ("gpu2:7575", 3)] {
        store.apply(
            ServerMsg::Frame {
                host: host.into(),
                frame: Box::new(Frame::empty("node", seq, 5000, 1000)),
            },
            1.0,
        );
    }
    assert_eq!(
        store.host_names.get_untracked(),
        vec!["gpu2:7575", "ssh://gpu1"]
    );
    let held: Vec<_> = store.held_seqs().into_iter().collect();
    assert_eq!(
        held,
        vec![("gpu2:7575".to_owned(), 3), ("ssh://gpu1".to_owned(), 10)]
    );
    store.select(Some("ssh://gpu1".into()));
    assert_eq!(store.latest.get_untracked().map(|f| f.seq), Some(10));
    // A host the hub does not have shows nothing, not some other host.
    store.select(Some("gpu9".into()));
    assert_eq!(store.current_host.get_untracked(), None);
    assert!(store.latest.get_untracked().is_none());

    let down = HostSummary::bare(HostState::Down, Some("Permission denied".into()));
    store.apply(
        ServerMsg::Summary {
            host: "gpu2:7575".into(),
            summary: Box::new(down.clone()),
        },
        2.0,
    );
    let held = store.summary("gpu2:7575").map(|s| s.0);
    assert_eq!(held.as_deref(), Some(&down));
    // The same summary again keeps the one held (its card is not redrawn).
    store.apply(
        ServerMsg::Summary {
            host: "gpu2:7575".into(),
            summary: Box::new(down),
        },
        3.0,
    );
    let again = store.summary("gpu2:7575").map(|s| s.0);
    assert!(matches!((&held, &again), (Some(a), Some(b)) if std::sync::Arc::ptr_eq(a, b)));
    // The overview lists every host `hello` named, with or without a summary.
    let listed = store.with_summaries(|all| {
        all.iter()
            .map(|(n, s)| (n.to_string(), s.is_some()))
            .collect::<Vec<_>>()
    });
    assert_eq!(
        listed,
        vec![
            ("gpu2:7575".to_owned(), true),
            ("ssh://gpu1".to_owned(), false)
        ]
    );
}

#[test]
fn one_host_is_shown_whatever_the_route_says() {
    let store = Store::new();
    store.apply(
        ServerMsg::hello(vec!["gpu1".into()], 1000, "0.1.0", "i1"),
        0.0,
    );
    assert!(!store.many_hosts.get_untracked());
    store.select(Some("other".into()));
    assert_eq!(store.current_host.get_untracked().as_deref(), Some("gpu1"));
}
