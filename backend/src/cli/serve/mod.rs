//! `vramio serve`: sample this host on the sampler thread, diagnose each tick, and serve the
//! dashboard until SIGINT/SIGTERM, then close every WebSocket session cleanly.
//!
//! Start-up opens the state directory ([`access`]: token, share links), binds TCP, TLS or a Unix
//! socket ([`listeners`]), prints the URL with its token, and leaves `server.json` for `vramio url` and
//! `vramio share`.

mod access;
mod listeners;
#[cfg(test)]
mod testutil;

use super::flags::ServeArgs;
use crate::access::server_file::ServerKind;
use crate::access::token::Token;
use crate::collect::sampler::{self, SamplerConfig};
use crate::collect::sources::Sources;
use crate::collect::standby;
use crate::http::listen;
use crate::http::metrics_route::MetricsPolicy;
use crate::http::{AppState, app};
use crate::hub::diagnoser::{DEFAULT_WINDOW, DIAGNOSE_EVERY, Diagnoser};
use crate::hub::fleet::Fleet;
use crate::hub::{Hub, HubConfig};
use crate::peers::life::supervise;
use crate::peers::{LinkOptions, PeerLine, PeerSpec, link_for, read_peers_file};
use access::{Access, Listening};
use anyhow::Context;
use listeners::{Listener, Tls};
use shared::HostState;

/// Where the first host's frames come from.
pub enum Local {
    /// Sample this host (`serve`).
    Sample,
    /// Play recorded or imported frames of one host (`replay`).
    Play(std::sync::Arc<crate::ingest::player::Replay>),
    /// No host of its own (`hub`).
    Nothing,
}

/// Serves until a signal: this host (as `local` says) and the peers of the flags plus `peers`.
pub fn run(
    args: ServeArgs,
    peers: Vec<String>,
    local: Local,
    thresholds: shared::diagnosis::Thresholds,
) -> anyhow::Result<()> {
    // One thread runs every connection. Sampling and diagnosis are on threads of their own, and a
    // session only forwards frames encoded once, so a single async thread has room for the
    // 1,000 viewers (docs/architecture.md#8-performance-targets); a second worker would only add wake-ups and work stealing between
    // threads each tick, the largest part of what one viewer cost (see `benches/agent_cost.rs`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve_async(args, peers, local, thresholds))
}

async fn serve_async(
    args: ServeArgs,
    extra_peers: Vec<String>,
    source: Local,
    thresholds: shared::diagnosis::Thresholds,
) -> anyhow::Result<()> {
    let played_host = match &source {
        Local::Play(replay) => replay.frames.first().map(|f| f.host.clone()),
        _ => None,
    };
    let host = args
        .name
        .clone()
        .or(played_host)
        .unwrap_or_else(super::hostname);
    let interval = args.sampling.interval;
    let tls = Tls::load(&args)?;
    let kind = match &source {
        Local::Sample => ServerKind::Serve,
        Local::Play(_) => ServerKind::Replay,
        Local::Nothing => ServerKind::Hub,
    };
    let access = Access::open(&args)?;

    // Bind before any thread starts: the Unix socket is made under a narrowed umask.
    let listener = Listener::bind(&args, tls).await?;
    let policy = listener.host_policy(&host, args.public_url.as_deref());
    let auth = access.auth(policy, listener.tls(), args.public_url.clone());

    let config = HubConfig::for_interval(interval).starting_at(sampler::now_ms());
    let local =
        (!matches!(source, Local::Nothing)).then(|| Hub::new(host.clone(), interval, config));
    let mut hubs: Vec<Hub> = local.iter().cloned().collect();
    let mut links = Vec::new();
    let options = LinkOptions {
        interval,
        token_file: args.peers.peer_token_file.clone(),
        ca: args.peers.peer_ca.clone(),
        ssh_config: args.peers.ssh_config.clone(),
        remote_command: Some(args.peers.remote_command.clone()),
    };
    let lines = peer_lines(&args, &extra_peers)?;
    // History is what a hub holds most of: share one budget of frames between the hosts, so 256
    // peers of 8 GPUs stay within a few hundred MB while a handful keep the full 15 minutes.
    let per_peer = (FLEET_HISTORY_FRAMES / lines.len().max(1))
        .clamp(MIN_PEER_HISTORY_FRAMES, config.history_frames);
    let peer_config = HubConfig {
        history_frames: per_peer,
        ..config
    };
    for line in lines {
        let name = line.spec.name();
        if hubs.iter().any(|h| h.host() == name) {
            anyhow::bail!("the peer {name} is given twice (or is this host's own name)");
        }
        let link = link_for(&line, &options).with_context(|| format!("peer {name}"))?;
        let hub = Hub::new(name, interval, peer_config);
        hub.set_link(HostState::Connecting, None);
        links.push((link, hub.clone()));
        hubs.push(hub);
    }
    let fleet = Fleet::new(hubs);
    let mut state = AppState::for_fleet(fleet.clone(), auth);
    if let Local::Play(replay) = &source {
        state.replay = Some(replay.clone());
    }
    state.metrics = MetricsPolicy {
        options: crate::metrics::Options {
            hub_mode: !links.is_empty(),
            show_users: args.metrics.metrics_users,
        },
        public: args.metrics.metrics_public,
    };
    let shutdown = state.shutdown.clone();
    let sessions = state.sessions.clone();
    if fleet.len() > 1 {
        fleet.spawn_summaries(shutdown.clone());
    }
    for (link, hub) in links {
        let sink: std::sync::Arc<dyn crate::peers::PeerSink> = std::sync::Arc::new(hub);
        tokio::spawn(supervise(link, sink, per_peer, shutdown.clone()));
    }

    let sampling = match (local, source) {
        (Some(hub), Local::Sample) => {
            let sources = Sources::system_default(args.sampling.nvml_lib.clone());
            let diagnoser =
                Diagnoser::new(thresholds, DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
            Some(Feeding::Sampler(
                standby::spawn(sources, SamplerConfig { host, interval }, hub, diagnoser)
                    .context("cannot start the sampler threads")?,
            ))
        }
        (Some(hub), Local::Play(replay)) => {
            let diagnoser = Diagnoser::new(thresholds, DEFAULT_WINDOW);
            Some(Feeding::Player(
                crate::ingest::player::spawn(replay, hub, diagnoser)
                    .context("cannot start the player thread")?,
            ))
        }
        _ => None,
    };

    let base_url = listener.base_url(args.public_url.as_deref());
    // The server file first: once the startup line is out, `vramio url` and `vramio share` work.
    let published = access.publish(Listening {
        kind,
        peers: fleet.len() > 1,
        base_url: &base_url,
        endpoint: listener.endpoint(),
        tls_cert: args.tls_cert.as_deref(),
    });

    listeners::announce(listener.endpoint(), &base_url, access.token());
    listener.warn_if_plain();

    let stop = shutdown.clone();
    let served = listen::serve(listener.into_bound(), app(state), async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        stop.cancel();
    })
    .await;
    drop(published);
    served.context("server failed")?;
    // axum does not wait for upgraded WebSocket tasks: wait (briefly) for their Close frames.
    shutdown.cancel();
    sessions.close();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), sessions.wait()).await;
    if let Some(sampling) = sampling {
        let _ = tokio::task::spawn_blocking(move || match sampling {
            Feeding::Sampler(s) => s.stop_and_join(),
            Feeding::Player(p) => p.stop_and_join(),
        })
        .await;
    }
    Ok(())
}

/// The thread that feeds the first host's hub.
enum Feeding {
    Sampler(standby::Running),
    Player(crate::ingest::player::Playing),
}

/// Frames of history a hub keeps over all its peers (about 200 MB of 8-GPU frames).
pub const FLEET_HISTORY_FRAMES: usize = 32 * 1024;
/// ... but never less than this per peer (2 minutes at 1 Hz).
pub const MIN_PEER_HISTORY_FRAMES: usize = 120;

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

/// `BASE/?token=TOKEN`, or `BASE/` without auth.
pub fn dashboard_url(base_url: &str, token: Option<&Token>) -> String {
    match token {
        Some(t) => format!("{base_url}/?token={}", t.expose()),
        None => format!("{base_url}/"),
    }
}

pub(crate) async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
