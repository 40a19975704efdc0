//! Fleet: the host's name, a name given twice, the hub without a host of its own, and the
//! history budget split between peers.

use super::*;
use crate::cli::serve::testutil::serve_args;
use crate::host_feed::{MAX_HISTORY_FRAMES, MIN_HISTORY_FRAMES};
use crate::ingest::player::Speed;
use shared::Frame;

fn replay_of(host: &str) -> Arc<Replay> {
    Replay::new(
        vec![Frame::empty(host, 0, 1_700_000_000_000, 1000)],
        Speed::Max,
    )
}

fn refusal(r: anyhow::Result<Hosts>) -> String {
    match r {
        Ok(_) => panic!("built"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn the_name_is_the_flag_else_the_replayed_host_else_the_hostname() {
    let named = serve_args(&["--name", "gpu7"]);
    assert_eq!(host_name(&named, &Local::Play(replay_of("rec"))), "gpu7");
    let plain = serve_args(&[]);
    assert_eq!(host_name(&plain, &Local::Play(replay_of("rec"))), "rec");
    assert_eq!(host_name(&plain, &Local::Sample), crate::cli::hostname());
    assert_eq!(host_name(&plain, &Local::Nothing), crate::cli::hostname());
}

#[test]
fn a_peer_given_twice_or_named_like_this_host_is_refused() {
    let args = serve_args(&["--peer", "ws://127.0.0.1:9", "--peer", "ssh://gpu1"]);
    let e = refusal(Hosts::build(
        &args,
        &["ssh://gpu1".to_owned()],
        Local::Nothing,
        "here".to_owned(),
    ));
    assert!(e.contains("the peer ssh://gpu1 is given twice"), "{e}");

    let e = refusal(Hosts::build(
        &args,
        &[],
        Local::Sample,
        "127.0.0.1:9".to_owned(),
    ));
    assert!(e.contains("the peer 127.0.0.1:9 is given twice"), "{e}");

    let bad = serve_args(&["--peer", "ftp://gpu1"]);
    let e = refusal(Hosts::build(&bad, &[], Local::Sample, "here".to_owned()));
    assert!(e.contains("peer \"ftp://gpu1\""), "{e}");
}

#[test]
fn a_hub_shows_its_peers_and_no_host_of_its_own() {
    let args = serve_args(&["--peer", "ssh://gpu1"]);
    let hosts = Hosts::build(
        &args,
        &["ssh://gpu2".to_owned()],
        Local::Nothing,
        "here".to_owned(),
    )
    .expect("builds");
    assert_eq!(hosts.fleet().names(), ["ssh://gpu1", "ssh://gpu2"]);
    assert!(hosts.has_peers());
    assert!(hosts.local.is_none() && hosts.replay().is_none());
    for hub in hosts.fleet().hubs() {
        assert_eq!(hub.host_state().0, HostState::Connecting);
    }
}

#[test]
fn this_host_comes_first_with_what_feeds_it() {
    let args = serve_args(&["--peer", "ssh://gpu1"]);
    let replay = replay_of("rec");
    let hosts =
        Hosts::build(&args, &[], Local::Play(replay.clone()), "rec".to_owned()).expect("builds");
    assert_eq!(hosts.fleet().names(), ["rec", "ssh://gpu1"]);
    assert!(matches!(&hosts.local, Some(LocalHost::Played(h, _)) if h.host() == "rec"));
    assert!(hosts.replay().is_some_and(|r| Arc::ptr_eq(&r, &replay)));

    let alone =
        Hosts::build(&serve_args(&[]), &[], Local::Sample, "gpu0".to_owned()).expect("builds");
    assert_eq!(alone.fleet().names(), ["gpu0"]);
    assert!(!alone.has_peers());
    assert!(matches!(&alone.local, Some(LocalHost::Sampled(h)) if h.host() == "gpu0"));
}

#[tokio::test]
async fn start_gives_the_local_hub_only_when_there_is_one() {
    let shutdown = CancellationToken::new();
    let alone =
        Hosts::build(&serve_args(&[]), &[], Local::Sample, "gpu0".to_owned()).expect("builds");
    let local = alone.start(&shutdown).expect("a local host");
    assert_eq!(local.hub().host(), "gpu0");
    let hub = Hosts::build(
        &serve_args(&[]),
        &["ws://127.0.0.1:9".to_owned()],
        Local::Nothing,
        "here".to_owned(),
    )
    .expect("builds");
    shutdown.cancel();
    assert!(hub.start(&shutdown).is_none());
}

#[test]
fn peers_share_one_history_budget_within_bounds() {
    let full = MIN_HISTORY_FRAMES;
    assert_eq!(per_peer_history(0, full), full, "no peers: no split");
    assert_eq!(
        per_peer_history(1, full),
        full,
        "never above the host's own"
    );
    assert_eq!(
        per_peer_history(100, MAX_HISTORY_FRAMES),
        FLEET_HISTORY_FRAMES / 100
    );
    assert_eq!(
        per_peer_history(1000, full),
        MIN_PEER_HISTORY_FRAMES,
        "a floor"
    );
    let args = serve_args(&["--peer", "ssh://gpu1"]);
    let hosts = Hosts::build(&args, &[], Local::Sample, "gpu0".to_owned()).expect("builds");
    assert_eq!(hosts.per_peer, full, "1 s interval: 15 minutes each");
}
