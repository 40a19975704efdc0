//! What a viewer sent, read once for every session ([`classify`]): `ping` gets `pong`; `subscribe`
//! becomes a [`Selection`] of the hosts served (unknown hosts get `error unknown_host`, listing
//! the hosts); anything else gets `error`, or ends the session ([`super::raw`]).

use super::hosts::Selection;
use super::{Ended, Raw, raw};
use crate::hub::fleet::Fleet;
use axum::extract::ws::Message;
use shared::{ClientMsg, ErrorCode, ServerMsg};

/// What to do about one client message.
pub enum Incoming {
    Subscribe(Selection),
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
            let since = picked
                .iter()
                .filter_map(|&i| {
                    let name = fleet.hubs()[i].host();
                    since
                        .as_ref()
                        .and_then(|m| m.get(name).copied())
                        .or(since_seq)
                        .map(|s| (i, s))
                })
                .collect();
            Incoming::Subscribe(Selection {
                hosts: picked,
                since,
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
