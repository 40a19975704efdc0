//! What a viewer sent, read once for every session ([`classify`]): `ping` gets `pong`; `subscribe`
//! becomes a [`Selection`] of the hosts served (unknown hosts get `error unknown_host`, listing
//! the hosts); anything else gets `error`, or ends the session ([`super::raw`]).
//!
//! `subscribe` reads as docs/api.md#4-client-messages says: on a server of one host `hosts`
//! is only checked and every `subscribe` backfills that host again; on several, `hosts` selects,
//! and only hosts named with a seq start over.

use super::hosts::Selection;
use super::{Ended, Raw, raw};
use crate::host_feed::fleet::Fleet;
use axum::extract::ws::Message;
use shared::{ClientMsg, ErrorCode, ServerMsg};

/// What to do about one client message.
pub enum Incoming {
    Subscribe(Selection),
    /// A question about the stored history (`history_query`, `moment_query`), answered by
    /// [`super::query::answer`].
    Query(ClientMsg),
    Reply(ServerMsg),
    Ignore,
    End(Ended),
}

/// Reads one client message of a session serving `fleet`.
pub fn classify<E: std::fmt::Display>(fleet: &Fleet, incoming: Result<Message, E>) -> Incoming {
    let text = match raw(incoming) {
        Raw::Text(t) => t,
        Raw::Reply(m) => return Incoming::Reply(m),
        Raw::Ignore => return Incoming::Ignore,
        Raw::End(e) => return Incoming::End(e),
    };
    match serde_json::from_str::<ClientMsg>(text.as_str()) {
        Ok(ClientMsg::Ping) => Incoming::Reply(ServerMsg::Pong),
        Ok(q @ (ClientMsg::HistoryQuery { .. } | ClientMsg::MomentQuery { .. })) => {
            Incoming::Query(q)
        }
        Ok(ClientMsg::Subscribe {
            hosts,
            since_seq,
            since,
            samples,
            max_frames,
        }) => {
            let names = hosts.unwrap_or_else(|| fleet.names());
            let mut picked = Vec::new();
            let mut unknown = Vec::new();
            for n in &names {
                match fleet.find(n) {
                    Some((i, _)) if !picked.contains(&i) => picked.push(i),
                    Some(_) => {}
                    None => unknown.push(n.clone()),
                }
            }
            if !unknown.is_empty() {
                return Incoming::Reply(ServerMsg::Error {
                    code: ErrorCode::UnknownHost,
                    message: format!(
                        "not served here: {}; hosts: {}",
                        unknown.join(", "),
                        fleet.names().join(", ")
                    ),
                });
            }
            let since_of = |i: usize| {
                let name = fleet.hubs()[i].host();
                since
                    .as_ref()
                    .and_then(|m| m.get(name).copied())
                    .or(since_seq)
            };
            let (picked, restart) = if fleet.len() == 1 {
                (vec![0], [(0, since_of(0))].into())
            } else {
                let restart = picked
                    .iter()
                    .filter_map(|&i| since_of(i).map(|s| (i, Some(s))))
                    .collect();
                (picked, restart)
            };
            Incoming::Subscribe(Selection {
                hosts: picked,
                restart,
                samples,
                max_frames: max_frames.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            })
        }
        Err(e) => Incoming::Reply(ServerMsg::Error {
            code: ErrorCode::BadMessage,
            message: format!("cannot read message: {e}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_feed::{HostFeed, HostFeedConfig};
    use std::convert::Infallible;
    use std::time::Duration;

    fn fleet(names: &[&str]) -> Fleet {
        let tick = Duration::from_secs(1);
        Fleet::new(
            names
                .iter()
                .map(|n| HostFeed::new(*n, tick, HostFeedConfig::for_interval(tick)))
                .collect(),
        )
    }

    fn read(fleet: &Fleet, text: &str) -> Incoming {
        classify(fleet, Ok::<_, Infallible>(Message::text(text)))
    }

    fn selection(i: Incoming) -> (Vec<usize>, Vec<(usize, Option<u64>)>) {
        match i {
            Incoming::Subscribe(s) => (s.hosts, s.restart.into_iter().collect()),
            _ => panic!("a subscribe"),
        }
    }

    #[test]
    fn one_host_is_only_checked_and_every_subscribe_starts_it_over() {
        let one = fleet(&["a"]);
        for text in [
            r#"{"type":"subscribe"}"#,
            r#"{"type":"subscribe","hosts":[]}"#,
            r#"{"type":"subscribe","hosts":["a"]}"#,
        ] {
            assert_eq!(
                selection(read(&one, text)),
                (vec![0], vec![(0, None)]),
                "{text}"
            );
        }
        assert_eq!(
            selection(read(
                &one,
                r#"{"type":"subscribe","since":{"a":7},"since_seq":3}"#
            )),
            (vec![0], vec![(0, Some(7))])
        );
        assert!(matches!(
            read(&one, r#"{"type":"subscribe","hosts":["b"]}"#),
            Incoming::Reply(ServerMsg::Error {
                code: ErrorCode::UnknownHost,
                ..
            })
        ));
    }

    #[test]
    fn several_hosts_are_selected_and_only_those_with_a_seq_start_over() {
        let three = fleet(&["a", "b", "c"]);
        assert_eq!(
            selection(read(&three, r#"{"type":"subscribe"}"#)),
            (vec![0, 1, 2], vec![])
        );
        assert_eq!(
            selection(read(&three, r#"{"type":"subscribe","hosts":[]}"#)),
            (vec![], vec![])
        );
        assert_eq!(
            selection(read(
                &three,
                r#"{"type":"subscribe","hosts":["c","a","c"],"since":{"a":5}}"#
            )),
            (vec![2, 0], vec![(0, Some(5))])
        );
        match read(&three, r#"{"type":"subscribe","hosts":["a","x"]}"#) {
            Incoming::Reply(ServerMsg::Error { code, message }) => {
                assert_eq!(code, ErrorCode::UnknownHost);
                assert_eq!(message, "not served here: x; hosts: a, b, c");
            }
            _ => panic!("an error"),
        }
    }
}
