//! Who may reach a serving command, from its flags: the state directory (held by its lock for as
//! long as this server runs), the admin token, the share links and the scrape token, made into
//! the server's [`Auth`]; and `server.json`, written once the server listens and removed at exit.
//!
//! `--no-auth` uses no state directory at all: no lock, no token, no shares, no `server.json`.

use crate::access::server_file::{Endpoint, ServerFile, ServerKind};
use crate::access::shares::Shares;
use crate::access::state_dir::{ServerLock, StateDir};
use crate::access::token::Token;
use crate::cli::flags::ServeArgs;
use crate::http::auth::Auth;
use crate::http::same_origin::HostPolicy;
use anyhow::Context;
use std::path::Path;

/// A serving command's credentials, from [`Access::open`].
pub struct Access {
    /// `None` with `--no-auth`.
    guarded: Option<Guarded>,
    /// `--metrics-token-file` (read with `--no-auth` too: a bad file is an error either way).
    scrape: Option<Token>,
}

/// What a server with authentication owns in its state directory.
struct Guarded {
    dir: StateDir,
    /// Held until the server ends: one server per state directory.
    _lock: ServerLock,
    token: Token,
    shares: Shares,
}

impl Access {
    /// Opens the state directory and takes its lock before reading or making anything in it
    /// (refused, naming the holder, when another server holds it), loads or creates the token,
    /// opens the share store, reads the scrape token, and refuses flags that open the data to
    /// everyone ([`ServeArgs::exposure_error`]).
    pub fn open(args: &ServeArgs) -> anyhow::Result<Access> {
        let guarded = if args.no_auth {
            None
        } else {
            Some(Guarded::open(args)?)
        };
        let scrape = match &args.metrics.metrics_token_file {
            Some(file) => Some(Token::from_file(file).context("--metrics-token-file")?),
            None => None,
        };
        if let Some(why) = args.exposure_error() {
            anyhow::bail!(why);
        }
        Ok(Access { guarded, scrape })
    }

    /// The admin token; `None` with `--no-auth`.
    pub fn token(&self) -> Option<&Token> {
        self.guarded.as_ref().map(|g| &g.token)
    }

    /// The state directory; `None` with `--no-auth`.
    pub fn state_dir(&self) -> Option<&StateDir> {
        self.guarded.as_ref().map(|g| &g.dir)
    }

    /// The server's authentication: these credentials, for the `Host`s of `hosts`, under TLS
    /// or not, with the `--public-url` origin allowed besides the server's own.
    pub fn auth(&self, hosts: HostPolicy, tls: bool, public_url: Option<String>) -> Auth {
        let shares = match &self.guarded {
            Some(g) => g.shares.clone(),
            None => Shares::off("authentication is off (--no-auth)"),
        };
        let auth = Auth::new(self.token().cloned(), shares, tls, hosts, public_url);
        match &self.scrape {
            Some(t) => auth.with_scrape_token(t.clone()),
            None => auth,
        }
    }

    /// Writes `server.json` (so `vramio url` and `vramio share` find this server) and returns
    /// the guard that removes it; nothing with `--no-auth`. A failed write is logged: the server
    /// still serves.
    pub fn publish(&self, server: Listening<'_>) -> Published<'_> {
        let dir = self.state_dir();
        if let Some(dir) = dir {
            let file = ServerFile {
                pid: std::process::id(),
                kind: Some(server.kind),
                peers: server.peers,
                base_url: server.base_url.to_owned(),
                endpoint: server.endpoint.clone(),
                tls_cert: server
                    .tls_cert
                    .map(|c| std::fs::canonicalize(c).unwrap_or_else(|_| c.to_owned())),
            };
            if let Err(e) = file.write(dir) {
                tracing::warn!(error = %e, "cannot write the server file: `vramio url` and `vramio share` will not find this server");
            }
        }
        Published { dir }
    }
}

impl Guarded {
    fn open(args: &ServeArgs) -> anyhow::Result<Guarded> {
        let dir = StateDir::open(args.access.state_dir.as_deref())?;
        // Before anything in the directory is read or made: one server per state directory.
        let lock = dir
            .lock_server()?
            .ok_or_else(|| anyhow::anyhow!(busy(&dir)))?;
        let token = match &args.access.token_file {
            Some(file) => Token::from_file(file)?,
            None => Token::load_or_create(&dir)?,
        };
        let shares = Shares::open(dir.clone());
        if let Some(reason) = shares.off_reason() {
            eprintln!("vramio: {reason}");
            tracing::error!(%reason, "share store");
        }
        Ok(Guarded {
            dir,
            _lock: lock,
            token,
            shares,
        })
    }
}

/// What `server.json` says about a listening server.
pub struct Listening<'a> {
    pub kind: ServerKind,
    /// Whether it shows other hosts too.
    pub peers: bool,
    pub base_url: &'a str,
    pub endpoint: &'a Endpoint,
    /// `--tls-cert`, which clients of this machine pin.
    pub tls_cert: Option<&'a Path>,
}

/// `server.json` while it is this server's: removed (if this process wrote the file there now)
/// when dropped.
#[must_use = "dropping it removes server.json"]
pub struct Published<'a> {
    dir: Option<&'a StateDir>,
}

impl Drop for Published<'_> {
    fn drop(&mut self) {
        if let Some(dir) = self.dir {
            ServerFile::remove_if_mine(dir);
        }
    }
}

/// Why a second server may not serve from `dir`: who holds it (pid, command, URL, from its
/// `server.json` or the lock file) and how to run this one beside it.
fn busy(dir: &StateDir) -> String {
    let holder = match ServerFile::read(dir) {
        Ok(Some(f)) if f.is_alive() => format!(
            "{} (pid {}) serves {}",
            f.kind.map_or("vramio", ServerKind::command),
            f.pid,
            f.base_url
        ),
        _ => match dir.lock_holder() {
            Some(pid) => format!("vramio (pid {pid}) is starting"),
            None => "another vramio".to_owned(),
        },
    };
    format!(
        "{holder} from the state directory {}: one server per state directory (its token, share \
         links and server.json are that server's). Stop it, or give this one a directory of its \
         own: --state-dir DIR",
        dir.path().display()
    )
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
