//! `vramio serve`: sample this host on the sampler thread, diagnose each tick, and serve the
//! dashboard until SIGINT/SIGTERM, then close every WebSocket session cleanly.

use super::flags::ServeArgs;
use crate::collect::sampler::{self, Sampler, SamplerConfig};
use crate::collect::sources::Sources;
use crate::http::{AppState, app};
use crate::hub::diagnoser::{DEFAULT_WINDOW, Diagnoser};
use crate::hub::{Hub, HubConfig};
use anyhow::Context;
use std::net::SocketAddr;

/// Serves until a signal; `thresholds` are the diagnosis' (defaults or `--thresholds`).
pub fn run(args: ServeArgs, thresholds: shared::diagnosis::Thresholds) -> anyhow::Result<()> {
    // One thread runs every connection. Sampling and diagnosis are on threads of their own, and a
    // session only forwards frames encoded once, so a single async thread has room for the
    // DESIGN's 1,000 viewers; a second worker would only add wake-ups and work stealing between
    // threads each tick, the largest part of what one viewer cost (see `benches/agent_cost.rs`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve_async(args, thresholds))
}

async fn serve_async(
    args: ServeArgs,
    thresholds: shared::diagnosis::Thresholds,
) -> anyhow::Result<()> {
    let host = super::hostname();
    let interval = args.sampling.interval;
    let config = HubConfig::for_interval(interval).starting_at(sampler::now_ms());
    let hub = Hub::new(host.clone(), interval, config);
    let mut state = AppState::new(hub.clone());
    if !args.bind.is_loopback() {
        state.host_policy = crate::http::same_origin::HostPolicy::Any;
        tracing::warn!(
            bind = %args.bind,
            "listening beyond loopback without authentication: anyone who can reach this port \
             sees this host's GPUs, processes and disks"
        );
    }
    let shutdown = state.shutdown.clone();
    let sessions = state.sessions.clone();

    let addr = SocketAddr::new(args.bind, args.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("no local address")?;

    let sources = Sources::system_default(args.sampling.nvml_lib.clone());
    let sampler = Sampler::new(sources, SamplerConfig { host, interval })
        .context("cannot start the sampler threads")?;
    let diagnoser = Diagnoser::new(thresholds, DEFAULT_WINDOW);
    let sampling =
        sampler::spawn(sampler, hub, diagnoser).context("cannot start the sampler thread")?;

    let shown = if local.ip().is_unspecified() {
        SocketAddr::new([127, 0, 0, 1].into(), local.port())
    } else {
        local
    };
    println!(
        "vramio {} serving on http://{shown}/",
        env!("CARGO_PKG_VERSION")
    );
    if !crate::http::assets::has_bundle() {
        println!("(no frontend bundle in this build: run `cargo xtask run` for the page)");
    }
    if local.ip().is_loopback() {
        println!(
            "from your laptop: ssh -L {p}:localhost:{p} <this server>, then open http://localhost:{p}/",
            p = local.port()
        );
    }

    let stop = shutdown.clone();
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async move {
            wait_for_signal().await;
            tracing::info!("shutting down");
            stop.cancel();
        })
        .await
        .context("server failed")?;
    // axum does not wait for upgraded WebSocket tasks: wait (briefly) for their Close frames.
    shutdown.cancel();
    sessions.close();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), sessions.wait()).await;
    let _ = tokio::task::spawn_blocking(move || sampling.stop_and_join()).await;
    Ok(())
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
