//! The page's route: the overview or one host's detail, read from the address so a detail URL is
//! shareable. `#/host/<NAME>` (NAME percent-encoded) or `?host=<NAME>` opens a host; a `#/...`
//! hash decides over the query, so the overview link `#/` works from a `?host=` page.
//!
//! [`parse_route`], [`host_href`] and the percent coding are pure and tested natively;
//! [`use_route`] is the thin hook that follows `hashchange` and `popstate`.

use leptos::prelude::*;

/// Which view the address asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// No host named: the overview on a hub, the one host's page otherwise.
    Home,
    /// One host's detail, by the name the server knows it by.
    Host(String),
}

impl Route {
    /// The host this route opens, if any.
    pub fn host(&self) -> Option<&str> {
        match self {
            Route::Home => None,
            Route::Host(name) => Some(name),
        }
    }
}

/// The prefix of a host's detail in the hash.
const HOST_PREFIX: &str = "#/host/";

/// The route of an address with `hash` (`location.hash`, with its `#`) and `search`
/// (`location.search`, with its `?`). An empty name is no host.
pub fn parse_route(hash: &str, search: &str) -> Route {
    if hash.starts_with("#/") {
        return hash
            .strip_prefix(HOST_PREFIX)
            .map(|enc| percent_decode(enc, false))
            .filter(|name| !name.is_empty())
            .map_or(Route::Home, Route::Host);
    }
    search
        .trim_start_matches('?')
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(key, _)| *key == "host")
        .map(|(_, value)| percent_decode(value, true))
        .filter(|name| !name.is_empty())
        .map_or(Route::Home, Route::Host)
}

/// The link that opens `host`'s detail: `#/host/` and the name, encoded as
/// `encodeURIComponent` does (so `ssh://gpu1` is `#/host/ssh%3A%2F%2Fgpu1`).
pub fn host_href(host: &str) -> String {
    format!("{HOST_PREFIX}{}", percent_encode(host))
}

/// The link back to the overview.
pub const OVERVIEW_HREF: &str = "#/";

/// Percent-encodes every byte but `A-Z a-z 0-9 - _ . ! ~ * ' ( )`, as `encodeURIComponent`.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` sequences (and `+` as a space when `plus_is_space`, as in a query); a `%` not
/// followed by two hex digits stays as it is, and bytes that are not UTF-8 become U+FFFD.
pub fn percent_decode(s: &str, plus_is_space: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let hex = |j: usize| bytes.get(j).and_then(|c| char::from(*c).to_digit(16));
        match (b, hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                // Two hex digits make at most 0xFF.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'%'));
                i += 3;
            }
            (b'+', _, _) if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The route of the page's current address.
fn current_route() -> Route {
    let location = window().location();
    parse_route(
        &location.hash().unwrap_or_default(),
        &location.search().unwrap_or_default(),
    )
}

/// The route, following the address as links, back and forward change it.
pub fn use_route() -> ReadSignal<Route> {
    let route = RwSignal::new(current_route());
    let follow = move |_: web_sys::Event| {
        let now = current_route();
        if route.with_untracked(|r| *r != now) {
            route.set(now);
        }
    };
    let on_hash = window_event_listener_untyped("hashchange", follow);
    let on_pop = window_event_listener_untyped("popstate", follow);
    on_cleanup(move || {
        on_hash.remove();
        on_pop.remove();
    });
    route.read_only()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> Route {
        Route::Host(name.to_owned())
    }

    #[test]
    fn no_route_is_home() {
        assert_eq!(parse_route("", ""), Route::Home);
        assert_eq!(parse_route("#/", ""), Route::Home);
        assert_eq!(parse_route("#/host/", ""), Route::Home);
        assert_eq!(parse_route("", "?token=x"), Route::Home);
        assert_eq!(parse_route("", "?host="), Route::Home);
        assert_eq!(parse_route("#/elsewhere", "?host=a"), Route::Home);
    }

    #[test]
    fn the_hash_names_a_host() {
        assert_eq!(parse_route("#/host/gpu2%3A7575", ""), host("gpu2:7575"));
        assert_eq!(
            parse_route("#/host/ssh%3A%2F%2Fgpu1", ""),
            host("ssh://gpu1")
        );
        // Browsers may leave some characters unencoded in the hash.
        assert_eq!(parse_route("#/host/ssh://gpu1", ""), host("ssh://gpu1"));
        // A `+` in the hash is a plus sign.
        assert_eq!(parse_route("#/host/a+b", ""), host("a+b"));
    }

    #[test]
    fn the_query_names_a_host_unless_the_hash_decides() {
        assert_eq!(
            parse_route("", "?host=ssh%3A%2F%2Fgpu1"),
            host("ssh://gpu1")
        );
        assert_eq!(parse_route("", "?x=1&host=gpu2:7575&y"), host("gpu2:7575"));
        assert_eq!(parse_route("", "?host=a+b"), host("a b"));
        assert_eq!(parse_route("", "?hosts=a"), Route::Home);
        // The overview link from a `?host=` page, and a card clicked there.
        assert_eq!(parse_route("#/", "?host=a"), Route::Home);
        assert_eq!(parse_route("#/host/b", "?host=a"), host("b"));
        // A share link's secret is not a route.
        assert_eq!(parse_route("#secret", "?host=a"), host("a"));
    }

    #[test]
    fn names_round_trip_through_the_link() {
        for name in [
            "gpu1",
            "ssh://user@gpu1:2222",
            "gpu2:7575",
            "wss://[::1]:7575",
            "a b/c?d#e%f&g=h",
            "ünïcode",
        ] {
            let href = host_href(name);
            let hash = href.as_str();
            assert!(
                !hash[HOST_PREFIX.len()..].contains(['/', '#', '?', ' ']),
                "{href}"
            );
            assert_eq!(parse_route(hash, ""), host(name), "{href}");
        }
    }

    #[test]
    fn encoding_matches_encode_uri_component() {
        assert_eq!(percent_encode("ssh://gpu1"), "ssh%3A%2F%2Fgpu1");
        assert_eq!(percent_encode("a-b_c.d!e~f*g'h(i)"), "a-b_c.d!e~f*g'h(i)");
        assert_eq!(percent_encode("a b+c"), "a%20b%2Bc");
        assert_eq!(percent_encode("é"), "%C3%A9");
    }

    #[test]
    fn malformed_escapes_are_kept() {
        assert_eq!(percent_decode("100%", false), "100%");
        assert_eq!(percent_decode("%zz%4", false), "%zz%4");
        assert_eq!(percent_decode("%FF", false), "\u{FFFD}");
    }
}
