//! The hub overview's pure logic: which hosts a filter keeps, the worst-first order of the cards,
//! the words and attribute values a card shows. Fed by the store's per-host `summary` messages;
//! rendered by `views/overview.rs`. Tested natively.

use shared::HostState;
use shared::diagnosis::Severity;
use shared::summary::HostSummary;
use std::cmp::Ordering;

/// The `data-state` value (and `state-*` class suffix) for a host state, as on the wire.
pub fn state_attr(s: HostState) -> &'static str {
    match s {
        HostState::Connecting => "connecting",
        HostState::Up => "up",
        HostState::Stale => "stale",
        HostState::Down => "down",
    }
}

/// The `data-verdict` value: the verdict id, or `none` before the host's first diagnosis.
pub fn verdict_attr(s: Option<&HostSummary>) -> &'static str {
    s.and_then(|s| s.verdict).map_or("none", |v| v.id())
}

/// Rank of a host's state, worst first: down, stale, connecting, up. A host the server named but
/// sent no summary for yet counts as connecting.
fn state_rank(s: Option<HostState>) -> u8 {
    match s {
        Some(HostState::Down) => 0,
        Some(HostState::Stale) => 1,
        Some(HostState::Connecting) | None => 2,
        Some(HostState::Up) => 3,
    }
}

/// Rank of a verdict's severity, worst first: critical, warning, then everything else (ok,
/// unknown, none yet).
fn severity_rank(s: Option<Severity>) -> u8 {
    match s {
        Some(Severity::Critical) => 0,
        Some(Severity::Warning) => 1,
        Some(Severity::Ok | Severity::Unknown) | None => 2,
    }
}

/// Worst first: by state, then by severity, then by name.
pub fn worst_first(a: (&str, Option<&HostSummary>), b: (&str, Option<&HostSummary>)) -> Ordering {
    let rank = |s: Option<&HostSummary>| {
        (
            state_rank(s.map(|s| s.state)),
            severity_rank(s.and_then(|s| s.severity)),
        )
    };
    rank(a.1).cmp(&rank(b.1)).then_with(|| a.0.cmp(b.0))
}

/// Whether a host passes the filter: a case-insensitive substring of its name or of the hostname
/// it reports. A blank filter keeps every host.
pub fn matches_filter(filter: &str, name: &str, hostname: Option<&str>) -> bool {
    let needle = filter.trim().to_lowercase();
    needle.is_empty()
        || name.to_lowercase().contains(&needle)
        || hostname.is_some_and(|h| h.to_lowercase().contains(&needle))
}

/// The names of the hosts that pass `filter`, worst first.
pub fn card_order<'a>(
    hosts: impl IntoIterator<Item = (&'a str, Option<&'a HostSummary>)>,
    filter: &str,
) -> Vec<String> {
    let blank = filter.trim().is_empty();
    let mut kept: Vec<_> = hosts
        .into_iter()
        .filter(|(name, s)| {
            blank || matches_filter(filter, name, s.and_then(|s| s.hostname.as_deref()))
        })
        .collect();
    kept.sort_by(|a, b| worst_first(*a, *b));
    kept.into_iter().map(|(name, _)| name.to_owned()).collect()
}

/// `last seen 3 s ago`, `last seen 4 min ago`, `never seen`: when the host's newest frame was
/// taken (`seen_ms`, its clock) as seen from `now_ms` (the browser's). A clock ahead of the
/// browser's reads as just now.
pub fn last_seen_text(seen_ms: Option<u64>, now_ms: f64) -> String {
    let Some(seen) = seen_ms else {
        return "never seen".to_owned();
    };
    let secs = ((now_ms - seen as f64) / 1000.0).max(0.0).floor();
    if secs < 1.0 {
        "last seen just now".to_owned()
    } else if secs < 120.0 {
        format!("last seen {secs:.0} s ago")
    } else if secs < 2.0 * 3600.0 {
        format!("last seen {:.0} min ago", (secs / 60.0).floor())
    } else if secs < 2.0 * 86_400.0 {
        format!("last seen {:.0} h ago", (secs / 3600.0).floor())
    } else {
        format!("last seen {:.0} d ago", (secs / 86_400.0).floor())
    }
}

/// The state in words for a card: `up`, `connecting…`, `stale`, `down`.
pub fn state_text(s: HostState) -> &'static str {
    match s {
        HostState::Connecting => "connecting…",
        HostState::Up => "up",
        HostState::Stale => "stale",
        HostState::Down => "down",
    }
}

/// The reason to show for a host: its `error`, only while it is stale or down.
pub fn host_error(s: &HostSummary) -> Option<&str> {
    matches!(s.state, HostState::Stale | HostState::Down)
        .then_some(s.error.as_deref())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::Verdict;

    fn summary(state: HostState, severity: Option<Severity>) -> HostSummary {
        let mut s = HostSummary::bare(state, None);
        s.severity = severity;
        s
    }

    #[test]
    fn cards_go_worst_first() {
        use HostState::*;
        let hosts = [
            ("a-ok", summary(Up, Some(Severity::Ok))),
            ("b-crit", summary(Up, Some(Severity::Critical))),
            ("c-down", summary(Down, None)),
            ("d-warn", summary(Up, Some(Severity::Warning))),
            ("e-stale", summary(Stale, Some(Severity::Critical))),
            ("f-conn", summary(Connecting, None)),
            ("g-unknown", summary(Up, Some(Severity::Unknown))),
            ("a-down", summary(Down, Some(Severity::Ok))),
            ("h-none", summary(Up, None)),
        ];
        let order = card_order(hosts.iter().map(|(n, s)| (*n, Some(s))), "");
        assert_eq!(
            order,
            vec![
                "a-down",
                "c-down",
                "e-stale",
                "f-conn",
                "b-crit",
                "d-warn",
                "a-ok",
                "g-unknown",
                "h-none"
            ]
        );
    }

    #[test]
    fn a_host_without_a_summary_counts_as_connecting() {
        let down = summary(HostState::Down, None);
        let up = summary(HostState::Up, Some(Severity::Critical));
        let order = card_order([("x", None), ("y", Some(&up)), ("z", Some(&down))], "");
        assert_eq!(order, vec!["z", "x", "y"]);
    }

    #[test]
    fn the_filter_matches_name_or_reported_hostname() {
        let mut s = summary(HostState::Up, None);
        s.hostname = Some("dgx-07.cluster".into());
        let hosts = [("ssh://gpu1", Some(&s)), ("gpu2:7575", None)];
        assert_eq!(card_order(hosts, "GPU"), vec!["gpu2:7575", "ssh://gpu1"]);
        assert_eq!(card_order(hosts, " dgx "), vec!["ssh://gpu1"]);
        assert_eq!(card_order(hosts, "7575"), vec!["gpu2:7575"]);
        assert!(card_order(hosts, "nothing").is_empty());
        assert!(matches_filter("", "x", None));
        assert!(!matches_filter("y", "x", None));
    }

    #[test]
    fn last_seen_reads_in_whole_units() {
        let now = 1_000_000_000.0;
        let ago = |ms: f64| Some((now - ms) as u64);
        assert_eq!(last_seen_text(None, now), "never seen");
        assert_eq!(last_seen_text(ago(400.0), now), "last seen just now");
        assert_eq!(last_seen_text(ago(3_200.0), now), "last seen 3 s ago");
        assert_eq!(last_seen_text(ago(119_000.0), now), "last seen 119 s ago");
        assert_eq!(last_seen_text(ago(250_000.0), now), "last seen 4 min ago");
        assert_eq!(
            last_seen_text(ago(3.0 * 3_600_000.0), now),
            "last seen 3 h ago"
        );
        assert_eq!(
            last_seen_text(ago(5.0 * 86_400_000.0), now),
            "last seen 5 d ago"
        );
        // A host whose clock runs ahead of the browser's.
        assert_eq!(last_seen_text(ago(-5_000.0), now), "last seen just now");
    }

    #[test]
    fn attributes_follow_the_wire_names() {
        for s in [
            HostState::Connecting,
            HostState::Up,
            HostState::Stale,
            HostState::Down,
        ] {
            let wire = serde_json::to_value(s).ok();
            assert_eq!(wire.as_ref().and_then(|v| v.as_str()), Some(state_attr(s)));
        }
        let mut s = summary(HostState::Up, Some(Severity::Critical));
        assert_eq!(verdict_attr(Some(&s)), "none");
        assert_eq!(verdict_attr(None), "none");
        s.verdict = Some(Verdict::GpuMemoryPressure);
        assert_eq!(verdict_attr(Some(&s)), "gpu_memory_pressure");
    }

    #[test]
    fn only_stale_or_down_hosts_show_their_error() {
        let mut s = HostSummary::bare(HostState::Down, Some("Permission denied".into()));
        assert_eq!(host_error(&s), Some("Permission denied"));
        s.state = HostState::Stale;
        assert_eq!(host_error(&s), Some("Permission denied"));
        s.state = HostState::Up;
        assert_eq!(host_error(&s), None);
        s.state = HostState::Down;
        s.error = None;
        assert_eq!(host_error(&s), None);
    }
}
