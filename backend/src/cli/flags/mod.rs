//! Command-line flags (docs/architecture.md#4-commands-and-flags). Every flag has a `VRAMIO_*` environment variable; bad
//! flags exit with 64 (EX_USAGE) so they never collide with `check`'s 0-3.
//!
//! The commands and the sampling flags are here; [`serving`] holds the flags of the commands that
//! serve the page (`serve`, `hub`: listening, TLS, access, peers) and [`remote`] those that talk
//! to a running server (`url`, `share`).

mod remote;
mod serving;

pub use remote::{ClientArgs, ShareArgs, ShareCommand};
pub use serving::{AccessArgs, HubArgs, Listen, PeerArgs, ServeArgs};

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// sysexits' EX_USAGE.
pub const EXIT_USAGE: i32 = 64;

/// What `vramio --version` prints after the name: the version, the commit, the target and the
/// glibc the binary needs (stamped by build.rs; `cargo xtask dist` pins the glibc).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("VRAMIO_COMMIT"),
    ", ",
    env!("VRAMIO_TARGET"),
    ", ",
    env!("VRAMIO_GLIBC"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "vramio",
    version = VERSION,
    about = "Is your GPU job held back by GPU memory or by disk? Live, in a browser."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags of `serve`, which is what `vramio` alone runs.
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sample this host and serve the live dashboard (the default).
    Serve(ServeArgs),
    /// Sample for a short window (or read a recording), print the verdict; exit 0 ok,
    /// 1 warning, 2 critical, 3 unknown.
    Check(CheckArgs),
    /// Write this host's frames to a file as NDJSON, one frame per line.
    Record(RecordArgs),
    /// Turn logs (nvidia-smi CSV, dmon, pmon or tables, iostat -x text or JSON, df) into a
    /// recording, merged by time.
    Import(ImportArgs),
    /// Serve the dashboard from recordings or logs, played at --speed with the live diagnosis.
    Replay(ReplayArgs),
    /// Print the JSON schema of frames and protocol messages.
    Schema,
    /// Serve one page for many GPU servers (SSH or WebSocket peers) without sampling this host.
    Hub(HubArgs),
    /// Print the running server's dashboard URL with its token.
    Url(ClientArgs),
    /// Read-only share links of the running server: create, list, revoke.
    Share(ShareArgs),
    /// The live protocol as one JSON message per line on stdout, for a hub that reaches this
    /// host over SSH: relays this user's running `vramio serve`, else samples.
    Stream(StreamArgs),
    /// The history `serve` keeps: export a range as CSV or NDJSON frames.
    History(HistoryCmdArgs),
}

#[derive(Debug, Clone, Args)]
pub struct HistoryCmdArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum HistoryCommand {
    /// Write a range of the history to stdout (or --out): CSV, one column per series, or
    /// NDJSON frames that `vramio replay` and `check --from` read. Asks the running server
    /// when there is one, else reads the history directory.
    Export {
        /// Start: RFC 3339 (`2026-12-03T22:00:00Z`), milliseconds since the epoch, or a time
        /// ago (`24h`, `7d`).
        #[arg(long, value_name = "TIME")]
        from: String,
        /// End, as --from, or `now`.
        #[arg(long, value_name = "TIME", default_value = "now")]
        to: String,
        /// The host (a hub's peer); default: the server's own.
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        #[arg(long, value_enum, default_value = "csv")]
        format: crate::history::Format,
        /// Write here instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Read this history directly [default: STATE_DIR/history], when no server runs.
        #[arg(long, env = "VRAMIO_HISTORY_DIR", value_name = "DIR")]
        history_dir: Option<PathBuf>,
        #[command(flatten)]
        access: AccessArgs,
    },
}

#[derive(Debug, Clone, Args)]
pub struct StreamArgs {
    /// Sample here even when this user's `vramio serve` runs (found through the state
    /// directory), instead of relaying it.
    #[arg(long, env = "VRAMIO_NO_RELAY")]
    pub no_relay: bool,
    /// The host name to report when sampling (default: the hostname).
    #[arg(long, env = "VRAMIO_NAME", value_name = "NAME")]
    pub name: Option<String>,
    #[command(flatten)]
    pub access: AccessArgs,
    #[command(flatten)]
    pub diagnosis: DiagnosisArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Print the diagnosis as one JSON object.
    #[arg(long, env = "VRAMIO_JSON")]
    pub json: bool,
    /// How long to sample (with --from: how much of the recording's end to diagnose; all of it
    /// when not given).
    #[arg(long, env = "VRAMIO_WINDOW", value_parser = parse_window)]
    pub window: Option<Duration>,
    /// Diagnose a recording (NDJSON frames from `vramio record`) or logs (nvidia-smi, iostat,
    /// df; repeatable, merged by time) instead of sampling.
    #[arg(long, env = "VRAMIO_FROM", value_name = "FILE", value_delimiter = ',')]
    pub from: Vec<PathBuf>,
    #[command(flatten)]
    pub logs: LogArgs,
    #[command(flatten)]
    pub diagnosis: DiagnosisArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// The window `check` samples when `--window` is not given.
pub const DEFAULT_CHECK_WINDOW: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// File to write. An existing file is refused unless --force (replace it) or --append (add
    /// to it) says what to do with it.
    #[arg(long, env = "VRAMIO_OUT", value_name = "FILE")]
    pub out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long, conflicts_with = "append")]
    pub force: bool,
    /// Add to the end of --out if it exists (a recording may hold several runs).
    #[arg(long)]
    pub append: bool,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(long, env = "VRAMIO_DURATION", value_parser = parse_window)]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The logs to import (their formats are detected; see --format).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The recording to write (replaced if it exists).
    #[arg(
        long,
        env = "VRAMIO_OUT",
        value_name = "FILE",
        required_unless_present = "into_history"
    )]
    pub out: Option<PathBuf>,
    /// Load the logs into the history store (docs/history.md#import), so they show on the
    /// page's charts and verdict timeline; with --out too, both.
    #[arg(long)]
    pub into_history: bool,
    /// The history to load into [default: STATE_DIR/history]. A running `vramio serve` holds
    /// its history: stop it for the import.
    #[arg(long, env = "VRAMIO_HISTORY_DIR", value_name = "DIR")]
    pub history_dir: Option<PathBuf>,
    /// The state directory whose history to load into [default: $XDG_STATE_HOME/vramio, else
    /// ~/.local/state/vramio].
    #[arg(long, env = "VRAMIO_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    #[command(flatten)]
    pub logs: LogArgs,
    /// The step between samples of a log without timestamps.
    #[arg(long, env = "VRAMIO_INTERVAL", default_value = "1s", value_parser = parse_window)]
    pub interval: Duration,
    /// The host name the frames carry (default: the first file's name).
    #[arg(long, env = "VRAMIO_NAME", value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Recordings (from `vramio record` or `import`) or logs, merged by time.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Times real time (1, 10x, 60), or `max`.
    #[arg(long, env = "VRAMIO_SPEED", default_value = "1",
          value_parser = crate::ingest::player::Speed::parse)]
    pub speed: crate::ingest::player::Speed,
    #[command(flatten)]
    pub logs: LogArgs,
    /// Where to serve, who may see it (as `serve`); `--interval` is the step of a log without
    /// timestamps.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// How to read imported logs (`import`, `replay`, `check --from`).
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Read every log as this format instead of detecting it: nvidia-smi-csv,
    /// nvidia-smi-apps, dmon, pmon, nvidia-smi, iostat, iostat-json, df.
    #[arg(long, env = "VRAMIO_FORMAT", value_name = "NAME")]
    pub format: Option<String>,
    /// The field list a headerless nvidia-smi CSV was made with (as given to --query-gpu).
    #[arg(
        long,
        env = "VRAMIO_FIELDS",
        value_name = "A,B,...",
        value_delimiter = ','
    )]
    pub fields: Option<Vec<String>>,
    /// Keep iostat's first report (a log taken with `iostat -y` has no since-boot report).
    #[arg(long, env = "VRAMIO_KEEP_FIRST_REPORT")]
    pub keep_first_report: bool,
    /// Read `df -h` sizes as powers of 1000 (a `df -H` log).
    #[arg(long, env = "VRAMIO_DF_SI")]
    pub df_si: bool,
}

impl LogArgs {
    pub fn tuning(&self) -> crate::ingest::source::Tuning {
        crate::ingest::source::Tuning {
            fields: self.fields.clone(),
            keep_first_report: self.keep_first_report,
            df_si: self.df_si,
        }
    }
}

/// Flags of every command that diagnoses.
#[derive(Debug, Clone, Args)]
pub struct DiagnosisArgs {
    /// Override diagnosis thresholds from a TOML or JSON file (any subset of fields).
    #[arg(long, env = "VRAMIO_THRESHOLDS", value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
}

/// Flags of every command that samples this host.
#[derive(Debug, Clone, Args)]
pub struct SamplingArgs {
    /// Time between samples (e.g. 1s, 500ms); at least 100ms.
    #[arg(long, env = "VRAMIO_INTERVAL", default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,
    /// Load this libnvidia-ml instead of the system's (e.g. a test double).
    #[arg(long, env = "VRAMIO_NVML_LIB", value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
    /// Name jobs from dcgm-exporter's HPC job-mapping files: one file per GPU index holding the
    /// ids of the jobs on it, one per line (for processes no Slurm, pod, container or unit cgroup
    /// names).
    #[arg(long, env = "VRAMIO_JOB_MAP_DIR", value_name = "DIR")]
    pub job_map_dir: Option<PathBuf>,
}

fn parse_window(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration like 5s or 2m: {e}"))?;
    if d.is_zero() {
        return Err("the duration must be longer than zero".into());
    }
    Ok(d)
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration like 1s or 500ms: {e}"))?;
    if d < crate::collect::sampler::MIN_INTERVAL {
        return Err(format!(
            "{s} is below the {} ms floor",
            crate::collect::sampler::MIN_INTERVAL.as_millis()
        ));
    }
    Ok(d)
}

impl Cli {
    /// The command to run, `serve` when none was named.
    pub fn into_command(self) -> Command {
        self.command.unwrap_or(Command::Serve(self.serve))
    }
}

#[cfg(test)]
mod tests;
