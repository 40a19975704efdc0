//! Where a serving command listens, from its flags: the TLS config, the bound TCP, TLS or Unix
//! socket listener, the URL people open, the `Host` names it answers to, and the startup lines.

use crate::access::server_file::Endpoint;
use crate::access::token::Token;
use crate::cli::flags::{Listen, ServeArgs};
use crate::http::listen::{self, Bound};
use crate::http::same_origin::{HostPolicy, host_of};
use anyhow::Context;
use std::net::SocketAddr;
use std::sync::Arc;

/// `--tls-cert` with `--tls-key`, loaded; `None` for plain HTTP.
pub struct Tls(Option<Arc<rustls::ServerConfig>>);

impl Tls {
    /// Reads the certificate and key the flags name (clap requires both or neither).
    pub fn load(args: &ServeArgs) -> anyhow::Result<Tls> {
        Ok(Tls(match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(listen::tls_config(cert, key)?),
            _ => None,
        }))
    }
}

/// A bound listener and where it is.
pub struct Listener {
    bound: Bound,
    endpoint: Endpoint,
    tls: bool,
}

impl Listener {
    /// Binds what the flags ask for: a Unix socket (`--listen unix:PATH`, made under a narrowed
    /// umask), or TCP on `--bind`:`--port`, with TLS when `tls` has a config.
    pub async fn bind(args: &ServeArgs, tls: Tls) -> anyhow::Result<Listener> {
        let secure = tls.0.is_some();
        if let Some(Listen::Unix(path)) = &args.listen {
            let l = listen::bind_unix(path)?;
            let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            return Ok(Listener {
                bound: Bound::Unix(l, path.clone()),
                endpoint: Endpoint::Unix { path },
                tls: secure,
            });
        }
        let addr = SocketAddr::new(args.bind, args.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr().context("no local address")?;
        let bound = match tls.0 {
            Some(config) => Bound::Tls(listen::TlsListener::new(listener, config)?),
            None => Bound::Tcp(listener),
        };
        Ok(Listener {
            bound,
            endpoint: Endpoint::Tcp { addr: local },
            tls: secure,
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Whether it serves HTTPS.
    pub fn tls(&self) -> bool {
        self.tls
    }

    /// Whether other machines may reach it directly: TCP on an address other than loopback.
    pub fn beyond_loopback(&self) -> bool {
        matches!(&self.endpoint, Endpoint::Tcp { addr } if !addr.ip().is_loopback())
    }

    /// The URL people open ([`base_url`]).
    pub fn base_url(&self, public_url: Option<&str>) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        base_url(&self.endpoint, scheme, public_url)
    }

    /// The `Host`s it answers to ([`host_policy`]) for a server that reports `host`, with this
    /// machine's names ([`machine_names`](crate::cli::names::machine_names)) beyond loopback.
    pub fn host_policy(&self, host: &str, public_url: Option<&str>) -> HostPolicy {
        host_policy(
            self.beyond_loopback(),
            host,
            public_url,
            crate::cli::names::machine_names,
        )
    }

    /// Warns when the token and the data would cross the network unencrypted.
    pub fn warn_if_plain(&self) {
        if self.beyond_loopback() && !self.tls {
            tracing::warn!(
                "listening beyond loopback over plain HTTP: the token and the data cross the \
                 network unencrypted; serve TLS (--tls-cert/--tls-key) or put a TLS reverse proxy \
                 in front"
            );
        }
    }

    /// The listener, for [`listen::serve`].
    pub fn into_bound(self) -> Bound {
        self.bound
    }
}

/// The URL people open, without the token: `--public-url`, else the listening address (loopback
/// for an unspecified bind), else for a Unix socket the usual `ssh -L 7575:` forward.
pub fn base_url(endpoint: &Endpoint, scheme: &str, public_url: Option<&str>) -> String {
    if let Some(u) = public_url {
        return u.to_owned();
    }
    match endpoint {
        Endpoint::Tcp { addr } => {
            let shown = if addr.ip().is_unspecified() {
                SocketAddr::new([127, 0, 0, 1].into(), addr.port())
            } else {
                *addr
            };
            format!("{scheme}://{shown}")
        }
        Endpoint::Unix { .. } => format!("{scheme}://localhost:7575"),
    }
}

/// The `Host` allow-list: loopback names always, the `--public-url` host; beyond loopback also
/// any IP address, the name this host reports (`--name`) and every name the machine answers to
/// (its hostname, short name and FQDN: `ws://gpu3.lab.example` reaches a server named `gpu3`),
/// which `machine_names` gives and is asked only then.
pub fn host_policy(
    beyond_loopback: bool,
    host: &str,
    public_url: Option<&str>,
    machine_names: impl FnOnce() -> Vec<String>,
) -> HostPolicy {
    let public_host = public_url
        .and_then(|u| u.split_once("://"))
        .map(|(_, a)| host_of(a));
    let mut names: Vec<String> = public_host.into_iter().collect();
    if beyond_loopback {
        names.push(host.to_ascii_lowercase());
        names.extend(machine_names());
    }
    HostPolicy {
        any_ip: beyond_loopback,
        names,
    }
}

/// The startup lines: the URL with its token (the one place the token is printed).
pub fn announce(endpoint: &Endpoint, base_url: &str, token: Option<&Token>) {
    let url = super::dashboard_url(base_url, token);
    let version = env!("CARGO_PKG_VERSION");
    match endpoint {
        Endpoint::Tcp { addr } => {
            println!("vramio {version} serving on {url}");
            if !crate::http::assets::has_bundle() {
                println!("(no frontend bundle in this build: run `cargo xtask run` for the page)");
            }
            if addr.ip().is_loopback() {
                println!(
                    "from your laptop: ssh -L {p}:localhost:{p} <this server>, then open the URL above",
                    p = addr.port()
                );
            }
        }
        Endpoint::Unix { path } => {
            println!("vramio {version} serving on unix:{}", path.display());
            println!(
                "from your laptop: ssh -L 7575:{} <this server>, then open {url}",
                path.display()
            );
        }
    }
}

#[cfg(test)]
#[path = "listeners_tests.rs"]
mod tests;
