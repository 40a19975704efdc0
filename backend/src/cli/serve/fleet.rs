//! The hosts a serving command shows, from its flags and [`Local`]: this host's name and hub
//! (none for `hub`), one hub and link per peer with its share of the history budget, checked for
//! names given twice, as one [`Fleet`]; [`Hosts::start`] runs the peer links and summaries.

use super::{FLEET_HISTORY_FRAMES, Local, MIN_PEER_HISTORY_FRAMES};
use crate::cli::flags::ServeArgs;
use crate::collect::sampler;
use crate::host_feed::fleet::Fleet;
use crate::host_feed::{HostFeed, HostFeedConfig};
use crate::ingest::player::Replay;
use crate::peers::life::{Link, supervise};
use crate::peers::{LinkOptions, PeerLine, PeerSink, PeerSpec, link_for, read_peers_file};
use anyhow::Context;
use shared::HostState;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The name this host reports: `--name`, else the replayed host's, else the hostname.
pub fn host_name(args: &ServeArgs, local: &Local) -> String {
    let played = match local {
        Local::Play(replay) => replay.frames.first().map(|f| f.host.clone()),
        _ => None,
    };
    args.name
        .clone()
        .or(played)
        .unwrap_or_else(crate::cli::hostname)
}

/// The first host's hub with what is to feed it: there is one only when the command has a host
/// of its own (`serve`, `replay`).
pub enum LocalHost {
    /// Sampled on this machine.
    Sampled(HostFeed),
    /// Played from a recording.
    Played(HostFeed, Arc<Replay>),
}

/// A peer's hub and its link, not yet running.
struct Peer {
    link: Box<dyn Link>,
    hub: HostFeed,
}

/// Every host one server shows, built but not yet fed.
pub struct Hosts {
    fleet: Fleet,
    local: Option<LocalHost>,
    peers: Vec<Peer>,
    /// Frames of history each peer's hub keeps ([`per_peer_history`]).
    per_peer: usize,
}

impl Hosts {
    /// This host's hub named `host` (unless `local` is [`Local::Nothing`]) first, then one per
    /// peer of `--peer`, `--peers FILE` and `extra_peers` (a hub's arguments). A bad peer, a
    /// token file that is not private, or a name given twice (or this host's) is refused.
    pub fn build(
        args: &ServeArgs,
        extra_peers: &[String],
        local: Local,
        host: String,
    ) -> anyhow::Result<Hosts> {
        let interval = args.sampling.interval;
        let config = HostFeedConfig::for_interval(interval).starting_at(sampler::now_ms());
        let local = match local {
            Local::Sample => Some(LocalHost::Sampled(HostFeed::new(host, interval, config))),
            Local::Play(replay) => Some(LocalHost::Played(
                HostFeed::new(host, interval, config),
                replay,
            )),
            Local::Nothing => None,
        };
        let mut hubs: Vec<HostFeed> = local.iter().map(|l| l.hub().clone()).collect();
        let options = LinkOptions {
            interval,
            token_file: args.peers.peer_token_file.clone(),
            ca: args.peers.peer_ca.clone(),
            ssh_config: args.peers.ssh_config.clone(),
            remote_command: Some(args.peers.remote_command.clone()),
        };
        let lines = peer_lines(args, extra_peers)?;
        let per_peer = per_peer_history(lines.len(), config.history_frames);
        let peer_config = HostFeedConfig {
            history_frames: per_peer,
            ..config
        };
        let mut peers = Vec::with_capacity(lines.len());
        for line in lines {
            let name = line.spec.name();
            if hubs.iter().any(|h| h.host() == name) {
                anyhow::bail!("the peer {name} is given twice (or is this host's own name)");
            }
            let link = link_for(&line, &options).with_context(|| format!("peer {name}"))?;
            let hub = HostFeed::new(name, interval, peer_config);
            hub.set_link(HostState::Connecting, None);
            hubs.push(hub.clone());
            peers.push(Peer { link, hub });
        }
        Ok(Hosts {
            fleet: Fleet::new(hubs),
            local,
            peers,
            per_peer,
        })
    }

    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// Whether it shows other hosts than its own.
    pub fn has_peers(&self) -> bool {
        !self.peers.is_empty()
    }

    /// The replay the first host plays, if it plays one.
    pub fn replay(&self) -> Option<Arc<Replay>> {
        match &self.local {
            Some(LocalHost::Played(_, replay)) => Some(replay.clone()),
            _ => None,
        }
    }

    /// Starts a supervisor per peer link and, with more than one host, the summaries, all until
    /// `shutdown`; gives the first host's hub, for the feeding, if there is one.
    pub fn start(self, shutdown: &CancellationToken) -> Option<LocalHost> {
        if self.fleet.len() > 1 {
            self.fleet.spawn_summaries(shutdown.clone());
        }
        for Peer { link, hub } in self.peers {
            let sink: Arc<dyn PeerSink> = Arc::new(hub);
            tokio::spawn(supervise(link, sink, self.per_peer, shutdown.clone()));
        }
        self.local
    }
}

impl LocalHost {
    pub fn hub(&self) -> &HostFeed {
        match self {
            LocalHost::Sampled(hub) | LocalHost::Played(hub, _) => hub,
        }
    }
}

/// History is what a hub holds most of: one budget of frames ([`FLEET_HISTORY_FRAMES`]) is
/// shared between `peers`, so 256 peers of 8 GPUs stay within a few hundred MB while a handful
/// keep the full 15 minutes; never less than [`MIN_PEER_HISTORY_FRAMES`] nor more than the
/// local host's `local_history`.
pub fn per_peer_history(peers: usize, local_history: usize) -> usize {
    (FLEET_HISTORY_FRAMES / peers.max(1)).clamp(MIN_PEER_HISTORY_FRAMES, local_history)
}

/// The peers of `--peer`, `--peers FILE` and the hub's arguments, checked.
fn peer_lines(args: &ServeArgs, extra: &[String]) -> anyhow::Result<Vec<PeerLine>> {
    let mut lines = Vec::new();
    for given in args.peers.peer.iter().chain(extra) {
        let spec = PeerSpec::parse(given).with_context(|| format!("peer {given:?}"))?;
        lines.push(PeerLine {
            spec,
            token_file: None,
        });
    }
    if let Some(file) = &args.peers.peers_file {
        lines.extend(read_peers_file(file)?);
    }
    Ok(lines)
}

#[cfg(test)]
#[path = "fleet_tests.rs"]
mod tests;
