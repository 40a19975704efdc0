//! The flags of the commands that serve the page (`serve`, `hub`): where to listen, TLS, the
//! public URL, access (state directory, token) and the peers a hub watches.

use super::{DiagnosisArgs, SamplingArgs};
use clap::Args;
use std::net::IpAddr;
use std::path::PathBuf;

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

/// Who may scrape `/metrics`, and what it shows.
#[derive(Debug, Clone, Args)]
pub struct MetricsArgs {
    /// A second bearer token (mode 0600) that reads /metrics and nothing else: give it to
    /// Prometheus (`authorization: {credentials_file: ...}`) instead of the admin token.
    #[arg(long, env = "VRAMIO_METRICS_TOKEN_FILE", value_name = "FILE")]
    pub metrics_token_file: Option<std::path::PathBuf>,
    /// Serve /metrics without a token. Only on loopback or a Unix socket: anyone who can reach
    /// the port could read process names and GPU use.
    #[arg(long, env = "VRAMIO_METRICS_PUBLIC")]
    pub metrics_public: bool,
    /// Label per-process series with the owner's login name (`user`).
    #[arg(long, env = "VRAMIO_METRICS_USERS")]
    pub metrics_users: bool,
}

/// A `--listen` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Unix(PathBuf),
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
          conflicts_with_all = ["bind", "port", "tls_cert"])]
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
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub peers: PeerArgs,
    #[command(flatten)]
    pub diagnosis: DiagnosisArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// Where `serve` keeps its history (docs/history.md).
#[derive(Debug, Clone, clap::Args)]
pub struct HistoryArgs {
    /// Directory of the history store [default: STATE_DIR/history]. On HPC nodes, where the home
    /// directory is often NFS, give a local disk.
    #[arg(long, env = "VRAMIO_HISTORY_DIR", value_name = "DIR")]
    pub history_dir: Option<PathBuf>,
    /// Largest size of the history on disk: the oldest data of the finest tier goes first
    /// (`256MB`, `2GB`, `512MiB`).
    #[arg(long, env = "VRAMIO_HISTORY_MAX", value_name = "SIZE", default_value = "256MB", value_parser = parse_size)]
    pub history_max: u64,
    /// Keep no history (the page then shows the last 15 minutes, as before).
    #[arg(long, env = "VRAMIO_NO_HISTORY", conflicts_with = "history_dir")]
    pub no_history: bool,
}

/// `256MB`, `2GB`, `512MiB`, `1048576`: a size in bytes, at least 1 MB.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "k" => 1_000,
        "mb" | "m" => 1_000_000,
        "gb" | "g" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "`{s}` is not a size: a number and MB, GB, MiB or GiB"
            ));
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size: a number and MB, GB, MiB or GiB"))?;
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))?;
    if bytes < 1_000_000 {
        return Err(format!("`{s}` is too small for a history: at least 1MB"));
    }
    Ok(bytes)
}

impl ServeArgs {
    /// Refuses the flags that open data to everyone who reaches the server, where more than
    /// this host's users can reach it: `--no-auth` anywhere but a loopback `--bind` without
    /// `--public-url`; `--metrics-public` anywhere but loopback or a Unix socket without
    /// `--public-url`. A `--public-url` means a proxy or a LAN name forwards other machines'
    /// requests to this server, so loopback no longer bounds who reaches it. Every local user can
    /// reach loopback (docs/security.md#1-the-model-in-short); that is the exposure these two flags
    /// accept.
    pub fn exposure_error(&self) -> Option<String> {
        let proxied = self.public_url.as_deref();
        if self.no_auth {
            if let Some(url) = proxied {
                return Some(format!(
                    "refusing --no-auth with --public-url {url}: whoever reaches that address \
                     would see this host's GPUs, processes and users. Drop --no-auth (the token \
                     keeps it private)."
                ));
            }
            if self.listen.is_none() && !self.bind.is_loopback() {
                return Some(format!(
                    "refusing to listen on {} without authentication: anyone reaching that port \
                     would see this host's GPUs, processes and users. Drop --no-auth (the token \
                     keeps it private), or keep the loopback bind.",
                    self.bind
                ));
            }
        }
        if self.metrics.metrics_public {
            if let Some(url) = proxied {
                return Some(format!(
                    "refusing --metrics-public with --public-url {url}: /metrics would be open \
                     to whoever reaches that address; give Prometheus a token instead: \
                     --metrics-token-file FILE"
                ));
            }
            if self.listen.is_none() && !self.bind.is_loopback() {
                return Some(format!(
                    "--metrics-public serves /metrics without a token, so only on loopback \
                     (--bind 127.0.0.1 or ::1) or a Unix socket (--listen unix:PATH), not on {}; \
                     give Prometheus a token instead: --metrics-token-file FILE",
                    self.bind
                ));
            }
        }
        None
    }
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
