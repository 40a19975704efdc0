//! Every request's credentials and origin (docs/security.md#1-the-model-in-short), checked in one middleware
//! ([`guard`]) before any route runs, and the per-route requirements ([`require_viewer`],
//! [`require_admin`]).
//!
//! Credentials, in order: `Authorization: Bearer` (scripts, hubs, Prometheus); `?token=` on a
//! GET, answered with a 303 to the same URL without it and the admin cookie; the admin cookie
//! `vramio-<port>`; a share link's view cookie `vramio-<port>-view`. Cookies are named by the
//! port the browser addressed, since browsers do not separate cookies by port and every `ssh -L`
//! server is `localhost`. A cookie counts only on requests whose `Origin`, when a browser must
//! send one (WebSocket upgrades, anything but GET/HEAD), is this server's own.

mod gate;

pub use gate::{
    guard, location_without_token, require_admin, require_viewer, scrape_only, unauthorized,
};

use super::same_origin::{HostPolicy, origin_of, parse_origin, split_authority};
use crate::access::shares::{Grant, Shares, Standing};
use crate::access::token::Token;
use axum::http::{HeaderMap, Method, StatusCode, header};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Warnings about refused credentials come at most this often.
pub const WARN_EVERY: Duration = Duration::from_secs(10);
/// Admin cookies live a year (the token is what ends them).
const ADMIN_COOKIE_MAX_AGE_S: u64 = 365 * 24 * 3600;

/// What a request may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    Admin,
    Viewer(Grant),
    /// The scrape token (`--metrics-token-file`): `/metrics` and nothing else.
    Scrape,
}

impl Access {
    /// Whether user names may be shown to it.
    pub fn show_users(&self) -> bool {
        match self {
            Access::Admin => true,
            Access::Viewer(g) => g.show_users,
            Access::Scrape => false,
        }
    }

    /// Whether it may read the stored history (a share link made `--live-only` may not).
    pub fn sees_history(&self) -> bool {
        match self {
            Access::Admin => true,
            Access::Viewer(g) => !g.live_only,
            Access::Scrape => false,
        }
    }
}

/// The request's [`Access`], put in its extensions by [`guard`]; `None` without credentials.
#[derive(Clone, Debug)]
pub struct Granted(pub Option<Access>);

/// How this server authenticates; cheap to clone.
#[derive(Clone)]
pub struct Auth {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None`: `--no-auth`, everyone is admin.
    token: Option<Token>,
    /// The scrape token, good for `/metrics` only.
    scrape: Option<Token>,
    shares: Shares,
    /// Serving HTTPS: `Origin`s are `https://`, cookies are `Secure`.
    tls: bool,
    hosts: HostPolicy,
    /// The `--public-url` origin, allowed besides the server's own.
    public_origin: Option<String>,
    failures: FailureLog,
}

impl Auth {
    pub fn new(
        token: Option<Token>,
        shares: Shares,
        tls: bool,
        hosts: HostPolicy,
        public_origin: Option<String>,
    ) -> Auth {
        Auth {
            inner: Arc::new(Inner {
                token,
                scrape: None,
                shares,
                tls,
                hosts,
                public_origin,
                failures: FailureLog::default(),
            }),
        }
    }

    /// No authentication, loopback names only, no sharing (tests, `--no-auth`).
    pub fn disabled() -> Auth {
        Auth::new(
            None,
            Shares::off("authentication is off (--no-auth)"),
            false,
            HostPolicy::loopback_only(),
            None,
        )
    }

    /// This server with `token` also accepted as a bearer token for `/metrics` alone. Call it
    /// on a new [`Auth`], before it is cloned: a shared one is returned unchanged (and says so).
    pub fn with_scrape_token(mut self, token: Token) -> Auth {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.scrape = Some(token),
            None => tracing::error!("the scrape token was set on an Auth already in use: ignored"),
        }
        self
    }

    pub fn shares(&self) -> &Shares {
        &self.inner.shares
    }
    pub fn enabled(&self) -> bool {
        self.inner.token.is_some()
    }
    pub fn tls(&self) -> bool {
        self.inner.tls
    }
    pub fn scheme(&self) -> &'static str {
        if self.inner.tls { "https" } else { "http" }
    }
    pub fn public_origin(&self) -> Option<&str> {
        self.inner.public_origin.as_deref()
    }

    /// Whether `Set-Cookie` should say `Secure`: under TLS, or behind an https public URL.
    fn secure_cookies(&self) -> bool {
        self.inner.tls
            || self
                .inner
                .public_origin
                .as_deref()
                .is_some_and(|o| o.starts_with("https://"))
    }

    /// The `Set-Cookie` value for a view cookie that lives `max_age_s`.
    pub fn view_cookie(&self, port: &str, value: &str, max_age_s: u64) -> String {
        cookie(
            &format!("vramio-{port}-view"),
            value,
            max_age_s,
            self.secure_cookies(),
        )
    }

    /// Decides a request from its method, path, query and headers: the pure core of [`guard`],
    /// which the benchmark times.
    pub fn decide(&self, method: &Method, query: Option<&str>, headers: &HeaderMap) -> Decision {
        let Some(authority) = authority(headers) else {
            return Decision::Refuse(StatusCode::BAD_REQUEST, "a request must name its Host");
        };
        let (host, port) = split_authority(authority);
        if !self.inner.hosts.allows(&host.to_ascii_lowercase()) {
            return Decision::Refuse(
                StatusCode::FORBIDDEN,
                "this vramio does not answer to that name: open it by the address it printed",
            );
        }
        let origin = headers
            .get(header::ORIGIN)
            .map(|o| o.to_str().unwrap_or(""));
        let same_origin = match origin {
            None => None,
            Some(o) => {
                let own = origin_of(self.scheme(), authority);
                let given = parse_origin(o);
                let ok = given.as_deref() == Some(own.as_str())
                    || (given.is_some() && given.as_deref() == self.public_origin());
                if !ok {
                    return Decision::Refuse(
                        StatusCode::FORBIDDEN,
                        "cross-origin request refused: its Origin is not this server",
                    );
                }
                Some(())
            }
        };
        let port = port.unwrap_or(if self.inner.tls { "443" } else { "80" });
        let Some(token) = &self.inner.token else {
            return Decision::Pass(Some(Access::Admin));
        };
        // A bearer token decides alone.
        if let Some(auth) = headers.get(header::AUTHORIZATION) {
            let given = auth.as_bytes();
            let bearer = given
                .get(..7)
                .filter(|p| p.eq_ignore_ascii_case(b"bearer "))
                .map(|_| given[7..].trim_ascii());
            let scrape = self.inner.scrape.as_ref();
            return match bearer {
                Some(t) if token.matches(t) => Decision::Pass(Some(Access::Admin)),
                Some(t) if scrape.is_some_and(|s| s.matches(t)) => {
                    Decision::Pass(Some(Access::Scrape))
                }
                _ => Decision::BadCredential("bad bearer token"),
            };
        }
        if (method == Method::GET || method == Method::HEAD)
            && let Some(t) = query.and_then(query_token)
        {
            return if token.matches(t.as_bytes()) {
                Decision::SetAdminCookie {
                    port: port.to_owned(),
                }
            } else {
                Decision::BadCredential("bad ?token=")
            };
        }
        // Cookies ride along with any request a browser makes, so they count only where the
        // browser proves the page is ours (it always sends Origin on these).
        let needs_origin = (method != Method::GET && method != Method::HEAD) || is_upgrade(headers);
        if needs_origin && same_origin.is_none() {
            return Decision::Pass(None);
        }
        let mut access = None;
        for (name, value) in cookies(headers) {
            let Some(rest) = name.strip_prefix("vramio-") else {
                continue;
            };
            let (cookie_port, view) = match rest.strip_suffix("-view") {
                Some(p) => (p, true),
                None => (rest, false),
            };
            if cookie_port != port {
                continue;
            }
            if !view {
                // A cookie from before the token changed is no credential, not an attack: the
                // page still loads and explains how to get the new link.
                if token.matches(value.as_bytes()) {
                    return Decision::Pass(Some(Access::Admin));
                }
                continue;
            }
            let Some((id, secret)) = value.split_once('.') else {
                continue;
            };
            if let Standing::Active(grant) = self.inner.shares.check(id, secret, now_ms()) {
                access = Some(Access::Viewer(grant));
            }
        }
        Decision::Pass(access)
    }
}

/// What [`Auth::decide`] concluded.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Go on to the route, with this access.
    Pass(Option<Access>),
    /// A valid `?token=`: redirect without it and set the admin cookie for `port`.
    SetAdminCookie {
        port: String,
    },
    /// A credential was given and is wrong.
    BadCredential(&'static str),
    Refuse(StatusCode, &'static str),
}

fn authority(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.trim().is_empty())
}

fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .is_some_and(|u| u.as_bytes().eq_ignore_ascii_case(b"websocket"))
}

/// The value of the first `token=` in a query string.
fn query_token(query: &str) -> Option<&str> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// The query without its `token` parameters.
fn query_without_token(query: &str) -> String {
    query
        .split('&')
        .filter(|p| !p.is_empty() && *p != "token" && !p.starts_with("token="))
        .collect::<Vec<_>>()
        .join("&")
}

/// `(name, value)` pairs of every `Cookie` header.
fn cookies(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| {
            let (n, v) = pair.split_once('=')?;
            Some((n.trim(), v.trim()))
        })
}

fn cookie(name: &str, value: &str, max_age_s: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}")
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Counts refused credentials and warns at most every [`WARN_EVERY`], never with the credential.
#[derive(Default)]
struct FailureLog {
    state: Mutex<(Option<Instant>, u64)>,
}

impl FailureLog {
    fn record(&self, what: &'static str, path: &str) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.1 += 1;
        if s.0.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
            let path: String = path.chars().take(80).collect();
            tracing::warn!(
                refused = s.1,
                last = what,
                path = ?path,
                "refused requests with a bad credential (count since the last warning)"
            );
            *s = (Some(Instant::now()), 0);
        }
    }
}

#[cfg(test)]
mod tests;
