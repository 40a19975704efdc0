//! The commands a person runs: [`serve`] (the default), [`check`] and [`record`], with their
//! [`flags`] and the [`thresholds_file`] that `serve` and `check` read; [`client`] (`url`,
//! `share`) and [`stream`] (what a hub runs over SSH) find a running server through the state
//! directory. [`run`] dispatches one; [`markdown()`] renders them all as docs/cli.md.

pub mod check;
pub mod client;
pub mod flags;
pub mod history;
pub mod import;
mod markdown;
pub mod names;
pub mod record;
pub mod replay;
pub mod serve;
pub mod stream;
pub mod thresholds_file;

pub use markdown::markdown;

use flags::{CheckArgs, Command, DEFAULT_CHECK_WINDOW, EXIT_USAGE, RecordArgs};
use std::process::ExitCode;

/// Runs one command and returns the process' exit code: 64 for bad usage (flags, a thresholds
/// file), `check`'s 0-3, else 0 or 1.
pub fn run(command: Command) -> ExitCode {
    let result = match command {
        Command::Serve(args) if args.exposure_error().is_some() => {
            return open_to_all(&args);
        }
        Command::Serve(args) => match thresholds(args.diagnosis.thresholds.as_deref()) {
            Ok(t) => serve::run(args, Vec::new(), serve::Local::Sample, t),
            Err(code) => return code,
        },
        Command::Hub(args) if args.serve.exposure_error().is_some() => {
            return open_to_all(&args.serve);
        }
        Command::Hub(args) if !hub_has_peers(&args) => return usage_error(),
        Command::Hub(args) => match thresholds(args.serve.diagnosis.thresholds.as_deref()) {
            Ok(t) => serve::run(args.serve, args.peers, serve::Local::Nothing, t),
            Err(code) => return code,
        },
        Command::Check(args) => return check(args),
        Command::Record(args) => record(args),
        Command::Import(args) => import::run(args),
        Command::Replay(args) if args.serve.exposure_error().is_some() => {
            return open_to_all(&args.serve);
        }
        Command::Replay(args) => match thresholds(args.serve.diagnosis.thresholds.as_deref()) {
            Ok(t) => replay::run(args, t),
            Err(code) => return code,
        },
        Command::Schema => schema(),
        Command::History(args) => history::run(args.command),
        Command::Url(args) => client::url(&args),
        Command::Share(args) => client::share(&args),
        Command::Stream(args) => match thresholds(args.diagnosis.thresholds.as_deref()) {
            Ok(t) => stream::run(args, t),
            Err(code) => return code,
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vramio: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether a hub was given any peer (in its arguments, `--peer` or a peers file that names at
/// least one); says why not on stderr.
fn hub_has_peers(args: &flags::HubArgs) -> bool {
    if !args.peers.is_empty() || !args.serve.peers.peer.is_empty() {
        return true;
    }
    let Some(file) = &args.serve.peers.peers_file else {
        eprintln!(
            "vramio: a hub needs peers: vramio hub ssh://gpu1 ws://gpu2:7575 ... or --peers FILE"
        );
        return false;
    };
    match crate::peers::read_peers_file(file) {
        Ok(lines) if lines.is_empty() => {
            eprintln!(
                "vramio: the peers file {} names no peer (one per line: ssh://HOST, ws://HOST:PORT, \
                 wss://HOST:PORT; # starts a comment)",
                file.display()
            );
            false
        }
        Ok(_) => true,
        Err(e) => {
            eprintln!("vramio: {e}");
            false
        }
    }
}

fn usage_error() -> ExitCode {
    ExitCode::from(u8::try_from(EXIT_USAGE).unwrap_or(2))
}

/// The name this host reports in frames.
pub fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// Loads `--thresholds`, or reports the problem as a usage error.
fn thresholds(path: Option<&std::path::Path>) -> Result<shared::diagnosis::Thresholds, ExitCode> {
    thresholds_file::load_thresholds(path).map_err(|e| {
        eprintln!("vramio: {e}");
        usage_error()
    })
}

/// Flags that would open data to everyone who reaches the server
/// ([`flags::ServeArgs::exposure_error`]): refused, saying why.
fn open_to_all(args: &flags::ServeArgs) -> ExitCode {
    if let Some(why) = args.exposure_error() {
        eprintln!("vramio: {why}");
    }
    usage_error()
}

fn check(args: CheckArgs) -> ExitCode {
    let thresholds = match thresholds(args.diagnosis.thresholds.as_deref()) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let code = check::run(check::CheckOptions {
        json: args.json,
        window: args.window.unwrap_or(DEFAULT_CHECK_WINDOW),
        window_given: args.window.is_some(),
        from: args.from,
        format: args.logs.format.clone(),
        tuning: args.logs.tuning(),
        interval: args.sampling.interval,
        nvml_lib: args.sampling.nvml_lib,
        job_map_dir: args.sampling.job_map_dir,
        thresholds,
        host: hostname(),
    });
    ExitCode::from(u8::try_from(code).unwrap_or(3))
}

fn record(args: RecordArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    let stop = crate::collect::ticker::Stop::new();
    let on_signal = stop.clone();
    // A small runtime only to wait for SIGINT/SIGTERM while this thread records.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the signal watcher")?;
    std::thread::Builder::new()
        .name("vramio-signals".into())
        .spawn(move || {
            runtime.block_on(serve::wait_for_signal());
            on_signal.stop();
        })
        .context("cannot start the signal watcher")?;
    let out = args.out.clone();
    let written = record::run(
        record::RecordOptions {
            out: args.out,
            existing: match (args.force, args.append) {
                (true, _) => record::Existing::Replace,
                (_, true) => record::Existing::Append,
                _ => record::Existing::Refuse,
            },
            duration: args.duration,
            interval: args.sampling.interval,
            nvml_lib: args.sampling.nvml_lib,
            job_map_dir: args.sampling.job_map_dir,
            host: hostname(),
        },
        stop,
    )?;
    eprintln!("vramio: wrote {written} frames to {}", out.display());
    Ok(())
}

fn schema() -> anyhow::Result<()> {
    write_schema(&mut std::io::stdout().lock())
}

/// Writes the wire schema as pretty JSON; an encoding or write failure (a closed pipe) is an
/// error, never an empty or half document with exit 0.
fn write_schema(out: &mut impl std::io::Write) -> anyhow::Result<()> {
    use anyhow::Context;
    let text = serde_json::to_string_pretty(&shared::schema::wire_schema())
        .context("cannot encode the schema")?;
    writeln!(out, "{text}").context("cannot write the schema")?;
    out.flush().context("cannot write the schema")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that refuses every byte, like a pipe whose reader has gone.
    struct Closed;

    impl std::io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
    }

    #[test]
    fn schema_writes_json_and_reports_a_failed_write() {
        let mut out = Vec::new();
        write_schema(&mut out).expect("writes");
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        assert!(v["frame"].is_object());
        let e = write_schema(&mut Closed).expect_err("a closed pipe is an error");
        assert!(
            format!("{e:#}").contains("cannot write the schema"),
            "{e:#}"
        );
    }
}
