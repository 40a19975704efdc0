//! Fuzz target `peer_msg`: what a peer (`vramio serve` over WebSocket, `vramio stream` over ssh)
//! sends a hub. Each message (the input split at ASCII RS, 0x1E, as in JSON text sequences) is
//! decoded as a `shared::ServerMsg` by `ServerMsg::from_json` (what a hub and the page run) and
//! by serde's derive: equal when both decode; where only from_json decodes (it skips fields it
//! does not read unchecked), the derive reads its result's encoding back equal; where only the
//! derive decodes (arrays, `{}` for a unit variant), from_json reads the derive's result's
//! encoding back equal. When it decodes, encoded and decoded again (equal; for
//! `history`, whose figures the wire rounds, from the encoded form on); then
//! the messages, after a valid `hello`, go through `peers::feed::Feed::apply` into a real `HostFeed`,
//! whose own encoding of each frame, and of each diagnosis without user names, must decode again
//! (its sessions rely on that).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::{Frame, ServerMsg};
use std::time::Duration;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::peers::feed::Feed;

/// Messages per input: a hub reads one at a time; a few cover the order rules.
const AT_MOST: usize = 8;

fn encode(m: &ServerMsg) -> String {
    serde_json::to_string(m).expect("a ServerMsg encodes")
}

/// `back`, read from `sent`'s encoding, equals `sent`; for `history`, whose figures the wire
/// rounds to 0.01 (shared::history), from the encoded form on.
fn same_through(
    back: &ServerMsg,
    sent: &ServerMsg,
    read: impl Fn(&str) -> serde_json::Result<ServerMsg>,
) {
    if matches!(sent, ServerMsg::History { .. }) {
        let again = read(&encode(back)).expect("an encoded ServerMsg decodes");
        assert_eq!(&again, back);
    } else {
        assert_eq!(back, sent);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let messages: Vec<&str> = text.split('\u{1e}').take(AT_MOST).collect();
    for m in &messages {
        let derived = serde_json::from_str::<ServerMsg>(m);
        match (ServerMsg::from_json(m), &derived) {
            (Ok(got), Ok(want)) => assert_eq!(&got, want, "{m}"),
            (Ok(got), Err(_)) => {
                let read = |t: &str| serde_json::from_str::<ServerMsg>(t);
                let back = read(&encode(&got)).expect("the derive reads from_json's result");
                same_through(&back, &got, read);
            }
            (Err(e), Ok(want)) => {
                let read = ServerMsg::from_json;
                let back = read(&encode(want)).unwrap_or_else(|e2| panic!("{e}; then {e2}"));
                same_through(&back, want, read);
            }
            (Err(_), Err(_)) => {}
        }
        if let Ok(msg) = derived {
            let encoded = serde_json::to_string(&msg).expect("a ServerMsg encodes");
            let again: ServerMsg =
                serde_json::from_str(&encoded).expect("an encoded ServerMsg decodes");
            if matches!(msg, ServerMsg::History { .. }) {
                // `history` figures go on the wire rounded to 0.01 (shared::history), so the
                // round trip starts from the encoded form.
                let encoded = serde_json::to_string(&again).expect("a ServerMsg encodes");
                let third: ServerMsg =
                    serde_json::from_str(&encoded).expect("an encoded ServerMsg decodes");
                assert_eq!(third, again, "{encoded}");
            } else {
                assert_eq!(again, msg, "{encoded}");
            }
        }
    }
    let interval = Duration::from_secs(1);
    let hub = HostFeed::new("peer", interval, HostFeedConfig::for_interval(interval));
    let mut feed = Feed::default();
    let hello = serde_json::to_string(&ServerMsg::hello(
        vec!["peer".into()],
        1000,
        "fuzz",
        "fuzz-instance",
    ))
    .expect("hello encodes");
    feed.apply(&hello, &hub).expect("a valid hello");
    for m in &messages {
        let _ = feed.apply(m, &hub);
        if let Some(entry) = hub.latest() {
            let frame: Frame =
                serde_json::from_str(entry.frame_json()).expect("the hub's frame decodes");
            assert_eq!(frame.seq, entry.seq);
            let hidden: Frame = serde_json::from_str(entry.frame_json_for(false))
                .expect("the frame without users decodes");
            // No user name is left as a word in a name shown to viewers without user names.
            let users: Vec<&str> = entry.users().collect();
            let named = |text: &str| {
                text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| users.iter().any(|u| !u.is_empty() && *u == w))
            };
            for job in &hidden.jobs {
                assert!(job.user.is_none());
                assert!(!named(&job.id) && !job.name.as_deref().is_some_and(named), "{job:?}");
            }
            for p in hidden.gpus.iter().flat_map(|g| g.processes.iter().flatten()) {
                assert!(p.user.is_none() && !p.name.as_deref().is_some_and(named), "{p:?}");
            }
            let _: shared::history::Sample =
                serde_json::from_str(entry.sample_json()).expect("the chart sample decodes");
        }
        if let Some(d) = hub.latest_diagnosis() {
            // What a viewer without user names gets decodes, and names none of the jobs' users.
            let hidden: shared::diagnosis::Diagnosis =
                serde_json::from_str(d.diagnosis_json_for(false))
                    .expect("the diagnosis without users decodes");
            assert!(hidden.jobs.iter().all(|j| j.user.is_none()));
        }
    }
    let _ = hub.history_after(None);
});
