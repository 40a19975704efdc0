//! The `vramio` binary: parses flags, sets up logging, then serves or runs a one-shot command.

use anyhow::Context;
use clap::Parser;
use std::net::SocketAddr;
use std::process::ExitCode;
use vramio::check::CheckOptions;
use vramio::cli::{
    CheckArgs, Cli, Command, DEFAULT_CHECK_WINDOW, EXIT_USAGE, RecordArgs, ServeArgs,
};
use vramio::diagnoser::{DEFAULT_WINDOW, Diagnoser};
use vramio::hub::{Hub, HubConfig};
use vramio::record::RecordOptions;
use vramio::routes::{AppState, app};
use vramio::sampler::Stop;
use vramio::sampler::{self, Sampler, SamplerConfig};
use vramio::sources::Sources;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            return if usage {
                ExitCode::from(EXIT_USAGE as u8)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("VRAMIO_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.into_command() {
        Command::Serve(args) if !args.bind.is_loopback() && !args.no_auth => {
            eprintln!(
                "vramio: refusing to listen on {} without authentication, which vramio does not \
                 have yet: anyone reaching that port would see this host's GPUs, processes and \
                 users. Keep the default loopback bind and use `ssh -L`, or pass --no-auth to \
                 accept that.",
                args.bind
            );
            return ExitCode::from(EXIT_USAGE as u8);
        }
        Command::Serve(args) => match thresholds(args.diagnosis.thresholds.as_deref()) {
            Ok(t) => serve(args, t),
            Err(code) => return code,
        },
        Command::Check(args) => return check(args),
        Command::Record(args) => record(args),
        Command::Schema => {
            println!(
                "{}",
                serde_json::to_string_pretty(&shared::schema::wire_schema()).unwrap_or_default()
            );
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vramio: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// Loads `--thresholds`, or reports the problem as a usage error.
fn thresholds(path: Option<&std::path::Path>) -> Result<shared::diagnosis::Thresholds, ExitCode> {
    vramio::config::load_thresholds(path).map_err(|e| {
        eprintln!("vramio: {e}");
        ExitCode::from(EXIT_USAGE as u8)
    })
}

fn check(args: CheckArgs) -> ExitCode {
    let thresholds = match thresholds(args.diagnosis.thresholds.as_deref()) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let code = vramio::check::run(CheckOptions {
        json: args.json,
        window: args.window.unwrap_or(DEFAULT_CHECK_WINDOW),
        window_given: args.window.is_some(),
        from: args.from,
        interval: args.sampling.interval,
        nvml_lib: args.sampling.nvml_lib,
        thresholds,
        host: hostname(),
    });
    ExitCode::from(u8::try_from(code).unwrap_or(3))
}

fn record(args: RecordArgs) -> anyhow::Result<()> {
    let stop = Stop::new();
    let on_signal = stop.clone();
    // A small runtime only to wait for SIGINT/SIGTERM while the main thread records.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the signal watcher")?;
    std::thread::Builder::new()
        .name("vramio-signals".into())
        .spawn(move || {
            runtime.block_on(wait_for_signal());
            on_signal.stop();
        })
        .context("cannot start the signal watcher")?;
    let out = args.out.clone();
    let written = vramio::record::run(
        RecordOptions {
            out: args.out,
            duration: args.duration,
            interval: args.sampling.interval,
            nvml_lib: args.sampling.nvml_lib,
            host: hostname(),
        },
        stop,
    )?;
    eprintln!("vramio: wrote {written} frames to {}", out.display());
    Ok(())
}

fn serve(args: ServeArgs, thresholds: shared::diagnosis::Thresholds) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve_async(args, thresholds))
}

async fn serve_async(
    args: ServeArgs,
    thresholds: shared::diagnosis::Thresholds,
) -> anyhow::Result<()> {
    let host = hostname();
    let interval = args.sampling.interval;
    let config = HubConfig::for_interval(interval).starting_at(sampler::now_ms());
    let hub = Hub::new(host.clone(), interval, config);
    let mut state = AppState::new(hub.clone());
    if !args.bind.is_loopback() {
        state.host_policy = vramio::guard::HostPolicy::Any;
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
    if !vramio::assets::has_bundle() {
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

async fn wait_for_signal() {
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
