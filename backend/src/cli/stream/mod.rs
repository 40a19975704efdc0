//! `vramio stream`: the `/ws` protocol over stdio, one JSON message per line on stdout and the
//! client's messages (a `subscribe` line) on stdin, for a hub that runs it over SSH. No port
//! opens: SSH is the authentication.
//!
//! When this user's `vramio serve` runs (its `server.json` in the state directory names a live
//! pid), [`relay`] pipes that server's `/ws`, so the hub shares its history and seq. Otherwise
//! (or with `--no-relay`) it samples like `serve` and runs one [`session::run`] over
//! [`stdio`]. The end of stdin ends it with exit 0. Logs go to stderr: stdout carries nothing but
//! protocol lines.

pub mod relay;
pub mod stdio;

use super::flags::StreamArgs;
use crate::collect::sampler::{self, SamplerConfig};
use crate::collect::sources::Sources;
use crate::collect::standby;
use crate::host_feed::diagnoser::{DEFAULT_WINDOW, DIAGNOSE_EVERY, Diagnoser};
use crate::host_feed::fleet::Fleet;
use crate::host_feed::{HostFeed, HostFeedConfig};
use crate::http::session::{self, Ended, SessionParams};
use crate::peers::lines::Lines;
use anyhow::{Context, bail};
use shared::protocol::MAX_CLIENT_MESSAGE_BYTES;
use tokio::io::BufReader;
use tokio_util::sync::CancellationToken;

/// Streams until stdin ends, stdout closes, or a signal.
pub fn run(args: StreamArgs, thresholds: shared::diagnosis::Thresholds) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(stream(args, thresholds));
    // tokio reads stdin on a blocking thread that cannot be cancelled: when stdout closed first,
    // waiting for it would hang until the next line comes.
    runtime.shutdown_background();
    result
}

fn stdin_lines() -> Lines<BufReader<tokio::io::Stdin>> {
    Lines::new(BufReader::new(tokio::io::stdin()), MAX_CLIENT_MESSAGE_BYTES)
}

async fn stream(args: StreamArgs, thresholds: shared::diagnosis::Thresholds) -> anyhow::Result<()> {
    if !args.no_relay {
        match relay::find(&args.access) {
            Err(e) => tracing::info!("not relaying: {e:#}"),
            Ok((token, server)) => match relay::connect(&server, &token).await {
                Ok(socket) => {
                    tracing::info!(server = %server.base_url, pid = server.pid, "relaying this user's vramio server");
                    return relay::pipe(socket, stdin_lines(), tokio::io::stdout()).await;
                }
                Err(e) => tracing::warn!(
                    server = %server.base_url,
                    "cannot relay this user's vramio server ({e:#}); sampling here instead"
                ),
            },
        }
    }
    sample(args, thresholds).await
}

async fn sample(args: StreamArgs, thresholds: shared::diagnosis::Thresholds) -> anyhow::Result<()> {
    let host = args.name.clone().unwrap_or_else(super::hostname);
    let interval = args.sampling.interval;
    let config = HostFeedConfig::for_interval(interval).starting_at(sampler::now_ms());
    let hub = HostFeed::new(host.clone(), interval, config);
    let sources = Sources::system_default(args.sampling.nvml_lib.clone())
        .with_job_map(args.sampling.job_map_dir.clone());
    let diagnoser = Diagnoser::new(thresholds, DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
    let sampling = standby::spawn(
        sources,
        SamplerConfig { host, interval },
        hub.clone(),
        diagnoser,
    )
    .context("cannot start the sampler threads")?;
    tracing::info!(host = %hub.host(), "sampling this host");

    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        super::serve::wait_for_signal().await;
        on_signal.cancel();
    });
    let params = SessionParams {
        fleet: Fleet::single(hub),
        version: env!("CARGO_PKG_VERSION"),
        since_seq: None,
        cancel,
        lease: None,
        show_users: true,
        history: None,
    };
    let ended = session::run(
        params,
        stdio::line_sink(tokio::io::stdout()),
        stdio::line_stream(BufReader::new(tokio::io::stdin()), MAX_CLIENT_MESSAGE_BYTES),
    )
    .await;
    let _ = tokio::task::spawn_blocking(move || sampling.stop_and_join()).await;
    match ended {
        Ended::ClientClosed | Ended::ServerShutdown => Ok(()),
        Ended::WriteFailed => bail!(
            "cannot write to stdout: closed, or nothing read for {:?}",
            session::WRITE_TIMEOUT
        ),
        Ended::TooBig => bail!("a line on stdin is over {MAX_CLIENT_MESSAGE_BYTES} bytes"),
        Ended::ShareRevoked | Ended::ShareExpired | Ended::HostGone => {
            bail!("the stream ended: {ended:?}")
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::flags::{Cli, Command};
    use clap::Parser;

    #[test]
    fn stream_takes_the_sampling_and_state_flags() {
        let cli = Cli::try_parse_from([
            "vramio",
            "stream",
            "--interval",
            "250ms",
            "--nvml-lib",
            "/x.so",
            "--state-dir",
            "/tmp/s",
            "--name",
            "gpu7",
            "--no-relay",
        ])
        .expect("parses");
        let Command::Stream(s) = cli.into_command() else {
            panic!("stream");
        };
        assert!(s.no_relay);
        assert_eq!(s.name.as_deref(), Some("gpu7"));
        assert_eq!(s.sampling.interval.as_millis(), 250);
        assert_eq!(s.access.state_dir.as_deref(), Some("/tmp/s".as_ref()));
        let plain = Cli::try_parse_from(["vramio", "stream"]).expect("parses");
        let Command::Stream(s) = plain.into_command() else {
            panic!("stream");
        };
        assert!(!s.no_relay && s.name.is_none());
    }
}
