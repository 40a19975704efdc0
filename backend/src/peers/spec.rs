//! Which peers a hub watches, as people write them on the command line or in a peers file:
//! `ssh://[user@]host[:port]`, `ssh://alias`, `ws://host:port[/path]`, `wss://host:port[/path]`,
//! and for ws/wss a ` token-file=PATH` on the peers file's line.
//!
//! Names reach `ssh` as arguments and appear in pages and logs, so they are held to a small
//! alphabet: hosts, aliases and users are `A-Z a-z 0-9 . _ -`, never starting with `-` (which
//! `ssh` would read as an option); ws hosts may also be an IPv6 address in brackets. Anything else
//! is refused with the line and the problem, never passed on.

use std::fmt;
use std::path::{Path, PathBuf};

/// Longest line of a peers file (a host name is at most 253 characters; a token path fits well).
pub const MAX_LINE_BYTES: usize = 1024;
/// Longest host name (RFC 1035's limit for a whole DNS name).
pub const MAX_NAME_CHARS: usize = 253;
/// Largest peers file read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// At most this many characters of a refused value are echoed in an error.
const ECHO_CHARS: usize = 64;

/// One peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerSpec {
    /// `ssh://[user@]host[:port]`; `ssh://alias` is a host with neither (ssh's config resolves it).
    Ssh {
        user: Option<String>,
        host: String,
        port: Option<u16>,
    },
    /// `ws://` or (`tls`) `wss://host:port[/path]`: a running `vramio serve`.
    Ws {
        tls: bool,
        /// A DNS name, an IPv4 address, or an IPv6 address in brackets (`[::1]`).
        host: String,
        port: u16,
        /// Where that vramio is served, `/` unless it sits behind a proxy under a prefix.
        path: String,
    },
}

/// One line of a peers file: the peer and, for ws/wss, the file its bearer token is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerLine {
    pub spec: PeerSpec,
    /// `token-file=PATH` as written (relative paths are the caller's to resolve, see
    /// [`read_peers_file`]); `None` means the hub's `--peer-token-file`.
    pub token_file: Option<PathBuf>,
}

/// What part of a peer a name problem is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Host,
    User,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Host => "host",
            Part::User => "user",
        })
    }
}

/// What is wrong with a host or user name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameProblem {
    #[error("is empty")]
    Empty,
    #[error("starts with `-`, which ssh would read as an option")]
    LeadingDash,
    #[error("holds {0:?}; a name may hold only A-Z, a-z, 0-9, `.`, `_` and `-`")]
    BadChar(char),
    #[error("is longer than {MAX_NAME_CHARS} characters")]
    TooLong,
    #[error("is not an IPv6 address (only those go in brackets)")]
    BadIpv6,
    #[error("is an IPv6 address; give ssh peers by name or alias (`ssh://alias`)")]
    Ipv6ForSsh,
}

/// Why a peer or a peers file line is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error(
        "{0:?} is not a peer: write ssh://[user@]host[:port], ssh://alias, ws://host:port or wss://host:port"
    )]
    Scheme(String),
    #[error("{part} {value:?} {problem}")]
    Name {
        part: Part,
        value: String,
        problem: NameProblem,
    },
    #[error("port {0:?} is not a port number from 1 to 65535")]
    Port(String),
    #[error("{0} needs a port, e.g. {0}:7575")]
    MissingPort(String),
    #[error("ssh peers take no path ({0:?})")]
    SshPath(String),
    #[error(
        "path {0:?} may hold only A-Z, a-z, 0-9 and `/ . _ ~ -` (no query: a token goes in token-file=)"
    )]
    Path(String),
    #[error("unknown option {0:?}; the only one is token-file=PATH, after a ws:// or wss:// peer")]
    UnknownOption(String),
    #[error("token-file= belongs to ws:// and wss:// peers only (ssh peers use ssh's own keys)")]
    TokenFileOnSsh,
    #[error("token-file= is given twice")]
    TokenFileTwice,
    #[error("token-file= needs a path")]
    EmptyTokenFile,
    #[error("the line is {0} bytes long; a peers file line is at most {MAX_LINE_BYTES}")]
    LineTooLong(usize),
    #[error("line {line}: {problem}")]
    Line {
        line: usize,
        problem: Box<SpecError>,
    },
    #[error("cannot read the peers file {}: {reason}", path.display())]
    File { path: PathBuf, reason: String },
}

/// `s` cut to [`ECHO_CHARS`] characters for an error message (the Debug format escapes the rest).
fn echo(s: &str) -> String {
    let mut out: String = s.chars().take(ECHO_CHARS).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Checks a host, alias or user name.
fn check_name(part: Part, value: &str) -> Result<(), SpecError> {
    let fail = |problem| SpecError::Name {
        part,
        value: echo(value),
        problem,
    };
    if value.is_empty() {
        return Err(fail(NameProblem::Empty));
    }
    if value.starts_with('-') {
        return Err(fail(NameProblem::LeadingDash));
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(fail(NameProblem::BadChar(c)));
    }
    if value.len() > MAX_NAME_CHARS {
        return Err(fail(NameProblem::TooLong));
    }
    Ok(())
}

fn parse_port(s: &str) -> Result<u16, SpecError> {
    // Digits only: `u16::from_str` would also take a leading `+`.
    match s.parse::<u16>() {
        Ok(p) if p > 0 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
        _ => Err(SpecError::Port(echo(s))),
    }
}

/// Splits `host[:port]`, where host may be `[IPv6]`; returns the host as written (brackets kept).
fn split_host_port(authority: &str) -> Result<(&str, Option<&str>), SpecError> {
    if authority.starts_with('[') {
        let Some(end) = authority.find(']') else {
            return Err(SpecError::Name {
                part: Part::Host,
                value: echo(authority),
                problem: NameProblem::BadIpv6,
            });
        };
        let (host, rest) = authority.split_at(end + 1);
        return match rest.strip_prefix(':') {
            Some(port) => Ok((host, Some(port))),
            None if rest.is_empty() => Ok((host, None)),
            None => Err(SpecError::Port(echo(rest))),
        };
    }
    Ok(match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

fn check_ipv6(host: &str) -> Result<(), SpecError> {
    let inner = &host[1..host.len() - 1];
    inner
        .parse::<std::net::Ipv6Addr>()
        .map(|_| ())
        .map_err(|_| SpecError::Name {
            part: Part::Host,
            value: echo(host),
            problem: NameProblem::BadIpv6,
        })
}

impl PeerSpec {
    /// Parses one peer as given on the command line (no options, no surrounding spaces).
    pub fn parse(given: &str) -> Result<PeerSpec, SpecError> {
        if let Some(rest) = given.strip_prefix("ssh://") {
            return Self::parse_ssh(rest);
        }
        let (tls, rest) = match (given.strip_prefix("wss://"), given.strip_prefix("ws://")) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) => (false, rest),
            (None, None) => return Err(SpecError::Scheme(echo(given))),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        let (host, port) = split_host_port(authority)?;
        if host.starts_with('[') {
            check_ipv6(host)?;
        } else {
            check_name(Part::Host, host)?;
        }
        let scheme = if tls { "wss" } else { "ws" };
        let port =
            parse_port(port.ok_or_else(|| SpecError::MissingPort(format!("{scheme}://{host}")))?)?;
        if !path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '~' | '-'))
        {
            return Err(SpecError::Path(echo(path)));
        }
        Ok(PeerSpec::Ws {
            tls,
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }

    fn parse_ssh(rest: &str) -> Result<PeerSpec, SpecError> {
        if let Some(i) = rest.find('/') {
            return Err(SpecError::SshPath(echo(&rest[i..])));
        }
        let (user, authority) = match rest.rsplit_once('@') {
            Some((user, authority)) => (Some(user), authority),
            None => (None, rest),
        };
        if let Some(user) = user {
            check_name(Part::User, user)?;
        }
        let (host, port) = split_host_port(authority)?;
        if host.starts_with('[') {
            return Err(SpecError::Name {
                part: Part::Host,
                value: echo(host),
                problem: NameProblem::Ipv6ForSsh,
            });
        }
        check_name(Part::Host, host)?;
        Ok(PeerSpec::Ssh {
            user: user.map(str::to_owned),
            host: host.to_owned(),
            port: port.map(parse_port).transpose()?,
        })
    }

    /// The name its host is known by in the hub: the peer as given for ssh (`ssh://gpu1`,
    /// `ssh://me@gpu1:2222`), `host:port` for ws and wss (`gpu2:7575`), with the path when it is
    /// not `/` (`proxy:443/gpu3`), so two peers never share a name.
    pub fn name(&self) -> String {
        match self {
            PeerSpec::Ssh { user, host, port } => {
                let user = user.as_deref().map(|u| format!("{u}@")).unwrap_or_default();
                let port = port.map(|p| format!(":{p}")).unwrap_or_default();
                format!("ssh://{user}{host}{port}")
            }
            PeerSpec::Ws {
                host, port, path, ..
            } => {
                let path = path.trim_end_matches('/');
                format!("{host}:{port}{path}")
            }
        }
    }
}

impl fmt::Display for PeerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerSpec::Ssh { .. } => f.write_str(&self.name()),
            PeerSpec::Ws {
                tls,
                host,
                port,
                path,
            } => {
                let scheme = if *tls { "wss" } else { "ws" };
                write!(f, "{scheme}://{host}:{port}{path}")
            }
        }
    }
}

/// Parses one line of a peers file (already known not to be blank or a comment).
fn parse_line(line: &str) -> Result<PeerLine, SpecError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(SpecError::LineTooLong(line.len()));
    }
    let mut words = line.split_whitespace();
    let spec = PeerSpec::parse(words.next().unwrap_or_default())?;
    let mut token_file = None;
    for word in words {
        if word.starts_with('#') {
            break;
        }
        let Some(path) = word.strip_prefix("token-file=") else {
            return Err(SpecError::UnknownOption(echo(word)));
        };
        if matches!(spec, PeerSpec::Ssh { .. }) {
            return Err(SpecError::TokenFileOnSsh);
        }
        if path.is_empty() {
            return Err(SpecError::EmptyTokenFile);
        }
        if token_file.replace(PathBuf::from(path)).is_some() {
            return Err(SpecError::TokenFileTwice);
        }
    }
    Ok(PeerLine { spec, token_file })
}

/// Parses a peers file: one PEER per line, optionally followed by ` token-file=PATH` (ws/wss),
/// `#` comments (whole lines, or after the peer) and blank lines. The first bad line ends it with
/// its line number (1-based) and the problem.
pub fn parse_peers_file(text: &str) -> Result<Vec<PeerLine>, SpecError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        out.push(parse_line(trimmed).map_err(|e| SpecError::Line {
            line: i + 1,
            problem: Box::new(e),
        })?);
    }
    Ok(out)
}

/// Reads and parses the peers file at `path` (at most [`MAX_FILE_BYTES`]); a relative
/// `token-file=` is taken relative to the file's own directory.
pub fn read_peers_file(path: &Path) -> Result<Vec<PeerLine>, SpecError> {
    let fail = |reason: String| SpecError::File {
        path: path.to_owned(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(fail(format!("it is larger than {MAX_FILE_BYTES} bytes")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut lines = parse_peers_file(&text)?;
    for line in &mut lines {
        if let Some(f) = &mut line.token_file
            && f.is_relative()
        {
            *f = dir.join(&*f);
        }
    }
    Ok(lines)
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
