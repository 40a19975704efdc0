//! Command-line flags (DESIGN section 3). Every flag has a `VRAMIO_*` environment variable; bad
//! flags exit with 64 (EX_USAGE) so they never collide with `check`'s 0-3.

use clap::{Args, Parser, Subcommand};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// sysexits' EX_USAGE.
pub const EXIT_USAGE: i32 = 64;

#[derive(Debug, Parser)]
#[command(
    name = "vramio",
    version,
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
pub struct HubArgs {
    /// Peers: `ssh://[user@]host[:port]`, `ssh://alias` (from ~/.ssh/config), `ws://host:port`,
    /// `wss://host:port`.
    #[arg(value_name = "PEER")]
    pub peers: Vec<String>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// How a hub reaches its peers (`vramio hub`, `vramio serve --peer`).
#[derive(Debug, Clone, Args)]
pub struct PeerArgs {
    /// A peer to watch beside this host (repeatable): ssh://HOST, ws://HOST:PORT, wss://...
    #[arg(
        long = "peer",
        env = "VRAMIO_PEER",
        value_name = "PEER",
        value_delimiter = ','
    )]
    pub peer: Vec<String>,
    /// A file of peers, one per line (`#` comments; `URL token-file=PATH` for ws/wss).
    #[arg(long = "peers", env = "VRAMIO_PEERS", value_name = "FILE")]
    pub peers_file: Option<PathBuf>,
    /// The bearer token for ws/wss peers whose line names no `token-file=` (mode 0600).
    #[arg(long, env = "VRAMIO_PEER_TOKEN_FILE", value_name = "FILE")]
    pub peer_token_file: Option<PathBuf>,
    /// The only CA (PEM) trusted for wss peers (default: the system's roots).
    #[arg(long, env = "VRAMIO_PEER_CA", value_name = "FILE")]
    pub peer_ca: Option<PathBuf>,
    /// An ssh config file for ssh peers (passed to ssh as -F).
    #[arg(long, env = "VRAMIO_SSH_CONFIG", value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// What ssh runs on the peer (by its login shell).
    #[arg(
        long,
        env = "VRAMIO_REMOTE_COMMAND",
        value_name = "CMD",
        default_value = "vramio stream"
    )]
    pub remote_command: String,
}

/// Flags of the commands that talk to a running server.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    #[command(flatten)]
    pub access: AccessArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ShareArgs {
    #[command(subcommand)]
    pub command: ShareCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ShareCommand {
    /// Create a read-only link; its last output line is the URL.
    Create {
        /// How long the link works (at most 30 days).
        #[arg(long, default_value = "24h", value_parser = parse_share_expiry)]
        expires: Duration,
        /// A note for the list (who it is for).
        #[arg(long)]
        label: Option<String>,
        /// Let the viewer see user names (hidden by default).
        #[arg(long)]
        show_users: bool,
        /// On a hub: show only this host (every host by default).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List the active links.
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Revoke one link by its id, or every link with --all (a new signing key).
    Revoke {
        /// The link's id, as `share list` shows it (base64url: it may start with `-`).
        #[arg(
            required_unless_present = "all",
            conflicts_with = "all",
            allow_hyphen_values = true
        )]
        id: Option<String>,
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
}

impl ShareCommand {
    /// Where the command finds the server.
    pub fn client(&self) -> &ClientArgs {
        match self {
            ShareCommand::Create { client, .. }
            | ShareCommand::List { client }
            | ShareCommand::Revoke { client, .. } => client,
        }
    }
}

/// Where vramio keeps its secrets (every serving and client command).
#[derive(Debug, Clone, Args)]
pub struct AccessArgs {
    /// Directory for the token, share links and the server file (mode 0700). Default:
    /// $XDG_STATE_HOME/vramio, else ~/.local/state/vramio.
    #[arg(long, env = "VRAMIO_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Read the admin token from this file (mode 0600) instead of the state directory's.
    #[arg(long, env = "VRAMIO_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

/// A `--listen` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Unix(PathBuf),
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
    /// Diagnose a recording (NDJSON frames from `vramio record`) instead of sampling.
    #[arg(long, env = "VRAMIO_FROM", value_name = "FILE")]
    pub from: Option<PathBuf>,
    #[command(flatten)]
    pub diagnosis: DiagnosisArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// The window `check` samples when `--window` is not given.
pub const DEFAULT_CHECK_WINDOW: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// File to write (replaced if it exists).
    #[arg(long, env = "VRAMIO_OUT", value_name = "FILE")]
    pub out: PathBuf,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(long, env = "VRAMIO_DURATION", value_parser = parse_window)]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
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
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on. Loopback by default: reach it through `ssh -L`. Any other address
    /// keeps auth on; use TLS there.
    #[arg(long, env = "VRAMIO_BIND", default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Port to listen on (0 picks a free one).
    #[arg(long, env = "VRAMIO_PORT", default_value_t = 7575)]
    pub port: u16,
    /// Listen on a Unix socket (mode 0600) instead of TCP: `unix:PATH`. Forward it with
    /// `ssh -L 7575:PATH server`.
    #[arg(long, env = "VRAMIO_LISTEN", value_name = "unix:PATH", value_parser = parse_listen,
          conflicts_with_all = ["bind", "port"])]
    pub listen: Option<Listen>,
    /// Serve HTTPS and WSS with this PEM certificate chain (with --tls-key).
    #[arg(
        long,
        env = "VRAMIO_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(
        long,
        env = "VRAMIO_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// The address people reach this server by (a LAN name, a reverse proxy), e.g.
    /// https://gpu7.lab.example: printed links use it, and its host and origin are allowed.
    #[arg(long, env = "VRAMIO_PUBLIC_URL", value_name = "URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,
    /// The name this host reports (default: its hostname), e.g. to tell apart cloned machines
    /// in a hub.
    #[arg(long, env = "VRAMIO_NAME", value_name = "NAME", value_parser = parse_name)]
    pub name: Option<String>,
    /// Serve without authentication: anyone who reaches the port sees this host's GPUs,
    /// processes and disks. Refused with a non-loopback --bind.
    #[arg(long, env = "VRAMIO_NO_AUTH")]
    pub no_auth: bool,
    #[command(flatten)]
    pub access: AccessArgs,
    #[command(flatten)]
    pub peers: PeerArgs,
    #[command(flatten)]
    pub diagnosis: DiagnosisArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// A host name as shown in pages and used in `subscribe`: printable, no control characters, at
/// most 128 bytes.
fn parse_name(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() || s.len() > 128 || s.chars().any(char::is_control) {
        return Err(format!(
            "`{s}` is not a name: 1 to 128 printable characters"
        ));
    }
    Ok(s.to_owned())
}

fn parse_listen(s: &str) -> Result<Listen, String> {
    match s.strip_prefix("unix:") {
        Some(path) if !path.is_empty() => Ok(Listen::Unix(PathBuf::from(path))),
        _ => Err(format!(
            "`{s}` is not unix:PATH (for TCP use --bind and --port)"
        )),
    }
}

/// `--public-url`: `http(s)://host[:port]`, normalised to an origin (no path: vramio serves at
/// the root of its name).
fn parse_public_url(s: &str) -> Result<String, String> {
    crate::http::same_origin::parse_origin(s).ok_or_else(|| {
        format!(
            "`{s}` is not http://HOST[:PORT] or https://HOST[:PORT] (no path: serve vramio at the \
             root of its own name)"
        )
    })
}

fn parse_share_expiry(s: &str) -> Result<Duration, String> {
    let d = parse_window(s)?;
    if d.as_secs() > shared::access::MAX_SHARE_SECS {
        return Err(format!(
            "{s} is longer than the 30 days a share link may live"
        ));
    }
    if d.as_secs() == 0 {
        return Err("a share link must live at least one second".into());
    }
    Ok(d)
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
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("vramio").chain(args.iter().copied()))
    }

    #[test]
    fn defaults_are_loopback_7575_one_second() {
        let Command::Serve(s) = parse(&[]).expect("parses").into_command() else {
            panic!("serve is the default");
        };
        assert_eq!(s.bind.to_string(), "127.0.0.1");
        assert_eq!(s.port, 7575);
        assert_eq!(s.sampling.interval, Duration::from_secs(1));
    }

    #[test]
    fn interval_has_a_floor_and_a_format() {
        let e = parse(&["serve", "--interval", "50ms"]).expect_err("below floor");
        assert!(e.to_string().contains("below the 100 ms floor"), "{e}");
        let e = parse(&["--interval", "soon"]).expect_err("not a duration");
        assert!(e.to_string().contains("not a duration"), "{e}");
        let Command::Serve(s) = parse(&["serve", "--interval", "250ms", "--port", "0"])
            .expect("parses")
            .into_command()
        else {
            panic!("serve");
        };
        assert_eq!(s.sampling.interval, Duration::from_millis(250));
    }

    #[test]
    fn check_and_record_flags() {
        let Command::Check(c) = parse(&["check", "--json", "--window", "3s", "--from", "r.ndjson"])
            .expect("parses")
            .into_command()
        else {
            panic!("check");
        };
        assert!(c.json);
        assert_eq!(c.window, Some(Duration::from_secs(3)));
        assert_eq!(c.from.as_deref(), Some(std::path::Path::new("r.ndjson")));
        assert!(parse(&["check", "--window", "0s"]).is_err());
        assert!(parse(&["record"]).is_err(), "--out is required");
        let Command::Record(r) = parse(&[
            "record",
            "--out",
            "f",
            "--duration",
            "2s",
            "--interval",
            "200ms",
        ])
        .expect("parses")
        .into_command() else {
            panic!("record");
        };
        assert_eq!(r.duration, Some(Duration::from_secs(2)));
        assert_eq!(r.sampling.interval, Duration::from_millis(200));
    }

    #[test]
    fn no_auth_is_a_flag() {
        let Command::Serve(s) = parse(&["serve", "--bind", "0.0.0.0", "--no-auth"])
            .expect("parses")
            .into_command()
        else {
            panic!("serve");
        };
        assert!(s.no_auth && !s.bind.is_loopback());
    }

    #[test]
    fn access_and_listen_flags() {
        let Command::Serve(s) = parse(&[
            "serve",
            "--listen",
            "unix:/run/user/1000/vramio.sock",
            "--state-dir",
            "/tmp/s",
            "--public-url",
            "https://GPU7.lab.example/",
        ])
        .expect("parses")
        .into_command() else {
            panic!("serve");
        };
        assert_eq!(
            s.listen,
            Some(Listen::Unix("/run/user/1000/vramio.sock".into()))
        );
        assert_eq!(s.public_url.as_deref(), Some("https://gpu7.lab.example"));
        assert!(parse(&["--listen", "tcp:1.2.3.4:5"]).is_err());
        let Command::Serve(named) = parse(&["serve", "--name", "gpu7-a"])
            .expect("parses")
            .into_command()
        else {
            panic!("serve");
        };
        assert_eq!(named.name.as_deref(), Some("gpu7-a"));
        assert!(parse(&["serve", "--name", "a\u{7}b"]).is_err());
        assert!(parse(&["--listen", "unix:/x", "--port", "1"]).is_err());
        assert!(parse(&["--tls-cert", "c.pem"]).is_err(), "needs --tls-key");
        assert!(parse(&["--public-url", "https://x.example/vramio"]).is_err());
        let Command::Share(sh) = parse(&["share", "create", "--expires", "3s", "--label", "ana"])
            .expect("parses")
            .into_command()
        else {
            panic!("share");
        };
        assert!(
            matches!(sh.command, ShareCommand::Create { expires, .. } if expires.as_secs() == 3)
        );
        assert!(parse(&["share", "create", "--expires", "31d"]).is_err());
        assert!(parse(&["share", "revoke"]).is_err(), "an id or --all");
        assert!(parse(&["share", "revoke", "--all"]).is_ok());
        for args in [
            &["share", "revoke", "-Bx_y"][..],
            &["share", "revoke", "--state-dir", "/tmp/s", "-Bx_y"][..],
            &["share", "revoke", "-Bx_y", "--state-dir", "/tmp/s"][..],
        ] {
            let Command::Share(sh) = parse(args).expect("an id may start with -").into_command()
            else {
                panic!("share");
            };
            let ShareCommand::Revoke { id, all, client } = sh.command else {
                panic!("revoke");
            };
            assert_eq!((id.as_deref(), all), (Some("-Bx_y"), false), "{args:?}");
            let given = args.contains(&"--state-dir");
            assert_eq!(client.access.state_dir.is_some(), given, "{args:?}");
        }
        let Command::Share(sh) = parse(&["share", "revoke", "--all"])
            .expect("parses")
            .into_command()
        else {
            panic!("share");
        };
        assert!(matches!(
            sh.command,
            ShareCommand::Revoke {
                id: None,
                all: true,
                ..
            }
        ));
    }

    #[test]
    fn bad_bind_is_refused() {
        assert!(parse(&["--bind", "localhost:80"]).is_err());
    }
}
