//! `vramio serve`: sample this host on the sampler thread, diagnose each tick, and serve the
//! dashboard until SIGINT/SIGTERM, then close every WebSocket session cleanly.
//!
//! Start-up opens the state directory ([`access`]: token, share links), binds TCP, TLS or a Unix
//! socket ([`listeners`]), builds the hubs of this host and its peers ([`fleet`]), prints the URL
//! with its token, and leaves `server.json` for `vramio url` and `vramio share`.

mod access;
mod fleet;
mod listeners;
#[cfg(test)]
mod testutil;

use super::flags::ServeArgs;
use crate::access::server_file::ServerKind;
use crate::access::token::Token;
use crate::collect::sampler::SamplerConfig;
use crate::collect::sources::Sources;
use crate::collect::standby;
use crate::http::listen;
use crate::http::metrics_route::MetricsPolicy;
use crate::http::{AppState, app};
use crate::hub::diagnoser::{DEFAULT_WINDOW, DIAGNOSE_EVERY, Diagnoser};
use access::{Access, Listening};
use anyhow::Context;
use fleet::{Hosts, LocalHost};
use listeners::{Listener, Tls};

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
    let host = fleet::host_name(&args, &source);
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

    let hosts = Hosts::build(&args, &extra_peers, source, host)?;
    let fleet = hosts.fleet().clone();
    let mut state = AppState::for_fleet(fleet.clone(), auth);
    state.replay = hosts.replay();
    state.metrics = MetricsPolicy {
        options: crate::metrics::Options {
            hub_mode: hosts.has_peers(),
            show_users: args.metrics.metrics_users,
        },
        public: args.metrics.metrics_public,
    };
    let shutdown = state.shutdown.clone();
    let sessions = state.sessions.clone();
    let sampling = match hosts.start(&shutdown) {
        Some(LocalHost::Sampled(hub)) => {
            let sources = Sources::system_default(args.sampling.nvml_lib.clone());
            let diagnoser =
                Diagnoser::new(thresholds, DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
            Some(Feeding::Sampler(
                standby::spawn(
                    sources,
                    SamplerConfig {
                        host: hub.host().to_owned(),
                        interval: args.sampling.interval,
                    },
                    hub,
                    diagnoser,
                )
                .context("cannot start the sampler threads")?,
            ))
        }
        Some(LocalHost::Played(hub, replay)) => {
            let diagnoser = Diagnoser::new(thresholds, DEFAULT_WINDOW);
            Some(Feeding::Player(
                crate::ingest::player::spawn(replay, hub, diagnoser)
                    .context("cannot start the player thread")?,
            ))
        }
        None => None,
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
