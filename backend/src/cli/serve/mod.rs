//! `vramio serve`, `hub` and `replay`: serve the dashboard of this host (sampled or replayed, as
//! [`Local`] says) and of any peers until SIGINT/SIGTERM, then close every WebSocket session
//! cleanly.
//!
//! Start-up is four parts, each built alone: [`access`] (the state directory, its lock, the
//! token and share links), [`listeners`] (TCP, TLS or a Unix socket, the URL, the allowed
//! `Host`s), [`fleet`] (this host's hub and the peers') and [`feeding`] (the sampler or player
//! thread). [`serve_until_signal`] wires them, prints the URL with its token, and leaves
//! `server.json` for `vramio url` and `vramio share` while it serves.

mod access;
mod feeding;
mod fleet;
mod listeners;
#[cfg(test)]
mod testutil;

use super::flags::ServeArgs;
use crate::access::server_file::ServerKind;
use crate::access::token::Token;
use crate::http::listen;
use crate::http::metrics_route::MetricsPolicy;
use crate::http::{AppState, app};
use access::{Access, Listening};
use anyhow::Context;
use feeding::Feeding;
use fleet::Hosts;
use listeners::{Listener, Tls};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

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
    // session only forwards frames encoded once, so a single async thread has room for the 1,000
    // viewers (docs/performance.md#targets); a second worker would only add
    // wake-ups and work stealing between threads each tick, the largest part of what one viewer
    // cost (see `benches/agent_cost.rs`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve_until_signal(args, peers, local, thresholds))
}

/// Builds access, listener, hosts and feeding in that order (a refusal of each comes before
/// anything of the next is made), serves until a signal, then closes the sessions and stops the
/// feeding.
async fn serve_until_signal(
    args: ServeArgs,
    extra_peers: Vec<String>,
    local: Local,
    thresholds: shared::diagnosis::Thresholds,
) -> anyhow::Result<()> {
    let host = fleet::host_name(&args, &local);
    let kind = local.kind();
    let tls = Tls::load(&args)?;
    let access = Access::open(&args)?;
    // Bind before any thread starts: the Unix socket is made under a narrowed umask.
    let listener = Listener::bind(&args, tls).await?;
    let public_url = args.public_url.as_deref();
    let hosts_allowed = listener.host_policy(&host, public_url);
    let auth = access.auth(hosts_allowed, listener.tls(), args.public_url.clone());
    let hosts = Hosts::build(&args, &extra_peers, local, host)?;
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
    let (history, sink) = match kind {
        ServerKind::Serve => open_history(&args, &access),
        _ => (None, None),
    };
    state.history = history.clone();
    state.thresholds = std::sync::Arc::new(thresholds.clone());
    state.first_peer = usize::from(kind != ServerKind::Hub);
    let (shutdown, sessions) = (state.shutdown.clone(), state.sessions.clone());
    let feeding = match hosts.start(&shutdown) {
        Some(local) => Some(Feeding::start(local, thresholds, &args.sampling, sink)?),
        None => None,
    };

    let base_url = listener.base_url(public_url);
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

    let served = serve(listener, state, shutdown.clone()).await;
    drop(published);
    served.context("server failed")?;
    close_sessions(shutdown, sessions).await;
    if let Some(feeding) = feeding {
        feeding.stop().await;
    }
    // The sampler is gone and its sink with it: the writer commits what it holds and ends.
    if let Some(history) = history {
        let _ = tokio::task::spawn_blocking(move || history.close()).await;
    }
    Ok(())
}

/// Opens this host's history (docs/history.md) unless `--no-history`: in `--history-dir`, else
/// in the state directory. A history that cannot be opened at all (no directory, another
/// server holds it) is logged and skipped: serving goes on without it.
fn open_history(
    args: &ServeArgs,
    access: &Access,
) -> (
    Option<crate::history::History>,
    Option<crate::history::Sink>,
) {
    if args.history.no_history {
        return (None, None);
    }
    let dir = match &args.history.history_dir {
        Some(d) => d.clone(),
        None => match access.state_dir() {
            Some(s) => s.path().join("history"),
            None => {
                tracing::info!("no history: no state directory (give --history-dir)");
                return (None, None);
            }
        },
    };
    match crate::history::History::open(&dir, args.history.history_max) {
        Ok((history, sink)) => {
            tracing::info!(dir = %dir.display(), "history kept");
            if let Some(aside) = history.status().set_aside {
                eprintln!(
                    "vramio: the history file could not be used and was moved aside: {aside}"
                );
            }
            (Some(history), Some(sink))
        }
        Err(e) => {
            eprintln!("vramio: no history this time: {e} (in {})", dir.display());
            tracing::error!(error = %e, dir = %dir.display(), "history cannot be opened");
            (None, None)
        }
    }
}

/// Serves `state` on `listener` until SIGINT/SIGTERM, which cancels `shutdown`.
async fn serve(
    listener: Listener,
    state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    listen::serve(listener.into_bound(), app(state), async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        shutdown.cancel();
    })
    .await
}

/// axum does not wait for upgraded WebSocket tasks: tells them to close and waits (briefly) for
/// their Close frames.
async fn close_sessions(shutdown: CancellationToken, sessions: TaskTracker) {
    shutdown.cancel();
    sessions.close();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), sessions.wait()).await;
}

/// Frames of history a hub keeps over all its peers (about 200 MB of 8-GPU frames).
pub const FLEET_HISTORY_FRAMES: usize = 32 * 1024;
/// ... but never less than this per peer (2 minutes at 1 Hz).
pub const MIN_PEER_HISTORY_FRAMES: usize = 120;

impl Local {
    /// The command `server.json` names.
    fn kind(&self) -> ServerKind {
        match self {
            Local::Sample => ServerKind::Serve,
            Local::Play(_) => ServerKind::Replay,
            Local::Nothing => ServerKind::Hub,
        }
    }
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
