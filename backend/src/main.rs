//! The `vramio` binary: parses flags, sets up logging, then hands over to `vramio::cli`.

use clap::Parser;
use std::process::ExitCode;
use vramio::cli::flags::{Cli, Command, EXIT_USAGE};

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
    // A hub keeps `vramio stream`'s last stderr line as the reason its link ended: there, only
    // problems are logged unless VRAMIO_LOG asks for more.
    let default_level = match cli.command {
        Some(Command::Stream(_)) => "warn",
        _ => "info",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("VRAMIO_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .init();
    vramio::cli::run(cli.into_command())
}
