//! DNS-rebinding and cross-origin defence (docs/security.md#1-the-model-in-short): a request must name a `Host` on the
//! allow-list (loopback names always; IP addresses and this machine's name when listening beyond
//! loopback; the `--public-url` host), and an `Origin`, when a request carries one, must be this
//! server's own scheme, host and port exactly.
//!
//! Without the first, any web page could rebind its own domain to 127.0.0.1 and read the
//! dashboard through the user's browser; without the second, a page served by another local
//! port (SameSite does not separate ports) would ride the user's cookie into `/ws`.

/// Which `Host` names are served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPolicy {
    /// Any IP address literal (listening beyond loopback: people type the address).
    pub any_ip: bool,
    /// Names besides loopback ones (this machine's hostname, the `--public-url` host), lowercase.
    pub names: Vec<String>,
}

impl HostPolicy {
    /// Loopback names only.
    pub fn loopback_only() -> HostPolicy {
        HostPolicy {
            any_ip: false,
            names: Vec::new(),
        }
    }

    /// Whether `host` (from [`host_of`]) may be served.
    pub fn allows(&self, host: &str) -> bool {
        is_loopback_name(host)
            || (self.any_ip && host.parse::<std::net::IpAddr>().is_ok())
            || self.names.iter().any(|n| n == host)
    }
}

/// The host part of a `Host` / `Origin` authority, lowercased, without port or brackets.
pub fn host_of(authority: &str) -> String {
    split_authority(authority).0.to_ascii_lowercase()
}

/// `(host, port)` of an authority; the port is `None` when absent.
pub fn split_authority(authority: &str) -> (&str, Option<&str>) {
    let a = authority.trim();
    if let Some(rest) = a.strip_prefix('[') {
        let (host, after) = rest.split_once(']').unwrap_or((rest, ""));
        return (host, after.strip_prefix(':').filter(|p| !p.is_empty()));
    }
    match a.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|c| c.is_ascii_digit()) && !h.contains(':') => {
            (h, Some(port).filter(|p| !p.is_empty()))
        }
        _ => (a, None),
    }
}

/// Whether `host` (from [`host_of`]) names this machine's loopback.
pub fn is_loopback_name(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `scheme://host[:port]` in the form browsers send as `Origin`: lowercase, and without the
/// scheme's default port.
pub fn origin_of(scheme: &str, authority: &str) -> String {
    let (host, port) = split_authority(authority);
    let default = if scheme == "https" { "443" } else { "80" };
    let host = host.to_ascii_lowercase();
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    match port.filter(|p| *p != default) {
        Some(p) => format!("{scheme}://{host}:{p}"),
        None => format!("{scheme}://{host}"),
    }
}

/// Normalises an `Origin` header (or a `--public-url`) to [`origin_of`]'s form; `None` when it
/// is not `http(s)://authority` (`null`, other schemes, paths).
pub fn parse_origin(origin: &str) -> Option<String> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
        return None;
    }
    Some(origin_of(&scheme, authority))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_parts() {
        assert_eq!(host_of("localhost:7575"), "localhost");
        assert_eq!(host_of("[::1]:7575"), "::1");
        assert_eq!(host_of("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_of("GPU-Node.example:80"), "gpu-node.example");
        assert_eq!(split_authority("[::1]:7575"), ("::1", Some("7575")));
        assert_eq!(split_authority("localhost"), ("localhost", None));
    }

    #[test]
    fn loopback_only_refuses_other_names() {
        let p = HostPolicy::loopback_only();
        assert!(p.allows("localhost"));
        assert!(p.allows("127.0.0.1"));
        assert!(p.allows("::1"));
        assert!(!p.allows("evil.example"));
        assert!(!p.allows("192.168.1.20"));
        let lan = HostPolicy {
            any_ip: true,
            names: vec!["gpu-node".into()],
        };
        assert!(lan.allows("192.168.1.20") && lan.allows("gpu-node"));
        assert!(!lan.allows("gpu-node.evil.example"));
    }

    #[test]
    fn origins_compare_exactly() {
        assert_eq!(origin_of("http", "LocalHost:7575"), "http://localhost:7575");
        assert_eq!(origin_of("http", "localhost:80"), "http://localhost");
        assert_eq!(origin_of("https", "[::1]:443"), "https://[::1]");
        assert_eq!(
            parse_origin("http://127.0.0.1:7575").as_deref(),
            Some("http://127.0.0.1:7575")
        );
        assert_eq!(
            parse_origin("https://gpu.example/").as_deref(),
            Some("https://gpu.example")
        );
        assert_eq!(parse_origin("null"), None);
        assert_eq!(parse_origin("file://x/y"), None);
        assert_ne!(
            parse_origin("http://127.0.0.1:8888"),
            Some(origin_of("http", "127.0.0.1:7575")),
            "another port is another origin"
        );
    }
}
