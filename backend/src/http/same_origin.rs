//! DNS-rebinding and cross-site WebSocket defence (DESIGN section 7): while vramio listens on
//! loopback only, a request must name a loopback host (`localhost`, `127.x.y.z`, `[::1]`), and a
//! WebSocket upgrade that carries an `Origin` must come from the host it is addressed to.
//!
//! Without this, any web page a user visits could rebind its own domain to 127.0.0.1 and read the
//! dashboard (GPU, process and user names) through the user's browser.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Which `Host` headers are accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostPolicy {
    /// Listening on loopback: only loopback names.
    LoopbackOnly,
    /// Listening on other addresses: any host name (access control is the operator's).
    Any,
}

/// The host part of a `Host` / `Origin` authority, lowercased, without port or brackets.
pub fn host_of(authority: &str) -> String {
    let a = authority.trim();
    let host = if let Some(rest) = a.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        a.rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(a, |(h, _)| h)
    };
    host.to_ascii_lowercase()
}

/// Whether `host` (from [`host_of`]) names this machine's loopback.
pub fn is_loopback_name(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn refused(why: &str) -> Response {
    (StatusCode::FORBIDDEN, format!("{why}\n")).into_response()
}

/// Checks `Host` and, on WebSocket upgrades, `Origin`.
pub fn check(policy: HostPolicy, headers: &HeaderMap) -> Result<(), &'static str> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(host_of);
    if policy == HostPolicy::LoopbackOnly
        && let Some(h) = &host
        && !is_loopback_name(h)
    {
        return Err("this vramio listens on loopback only: open it as http://localhost:PORT/");
    }
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|u| u.to_str().ok())
        .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    if upgrade && let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        let origin_host = origin
            .split_once("://")
            .map_or(origin, |(_, rest)| rest)
            .split('/')
            .next()
            .map(host_of)
            .unwrap_or_default();
        if host.as_deref() != Some(origin_host.as_str()) {
            return Err("cross-origin WebSocket refused");
        }
    }
    Ok(())
}

/// Axum middleware around [`check`].
pub async fn layer(State(policy): State<HostPolicy>, req: Request, next: Next) -> Response {
    match check(policy, req.headers()) {
        Ok(()) => next.run(req).await,
        Err(why) => refused(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn host_parts() {
        assert_eq!(host_of("localhost:7575"), "localhost");
        assert_eq!(host_of("[::1]:7575"), "::1");
        assert_eq!(host_of("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_of("GPU-Node.example:80"), "gpu-node.example");
    }

    #[test]
    fn loopback_only_refuses_other_names() {
        let p = HostPolicy::LoopbackOnly;
        assert!(check(p, &headers(&[("host", "localhost:7575")])).is_ok());
        assert!(check(p, &headers(&[("host", "127.0.0.1:7575")])).is_ok());
        assert!(check(p, &headers(&[("host", "[::1]:7575")])).is_ok());
        assert!(check(p, &headers(&[("host", "evil.example:7575")])).is_err());
        assert!(check(HostPolicy::Any, &headers(&[("host", "gpu-node:7575")])).is_ok());
    }

    #[test]
    fn websocket_origin_must_match_host() {
        let p = HostPolicy::LoopbackOnly;
        let same = headers(&[
            ("host", "localhost:7575"),
            ("upgrade", "websocket"),
            ("origin", "http://localhost:7575"),
        ]);
        assert!(check(p, &same).is_ok());
        let cross = headers(&[
            ("host", "localhost:7575"),
            ("upgrade", "websocket"),
            ("origin", "https://evil.example"),
        ]);
        assert!(check(p, &cross).is_err());
        let no_origin = headers(&[("host", "localhost:7575"), ("upgrade", "websocket")]);
        assert!(
            check(p, &no_origin).is_ok(),
            "non-browser clients send no Origin"
        );
    }
}
