//! Status around the data: the connection badge (fed by the feed's state), notices about the
//! stream and the host (protocol, lag, staleness, NVML; a hub's detail shows the host's state in
//! its own header instead), and the footer with seq and age.

use crate::feed::ConnState;
use crate::format::age;
use crate::store::{Notice, use_store};
use leptos::prelude::*;
use shared::{HostState, NvmlStatus, SourceCost};
use std::time::Duration;

/// Whether the page shows a replay (`vramio replay`): set by the replay bar once the server
/// says so, read by the badge, which then says "replay", not "live".
#[derive(Clone, Copy)]
pub struct Replaying(pub RwSignal<bool>);

/// The badge's words for a connection state (`replaying`: the stream is a replay).
pub fn badge_text(state: &ConnState, replaying: bool) -> String {
    match state {
        ConnState::Connecting => "connecting…".to_owned(),
        ConnState::Open if replaying => "replay".to_owned(),
        ConnState::Open => "live".to_owned(),
        ConnState::Reconnecting { attempt, in_ms } => format!(
            "reconnecting in {:.1} s (attempt {attempt})",
            f64::from(*in_ms) / 1000.0
        ),
        ConnState::Closed { .. } => "disconnected".to_owned(),
    }
}

/// What to say about NVML, if anything: `(headline, detail)`.
pub fn nvml_notice(status: &NvmlStatus) -> Option<(&'static str, String)> {
    match status {
        NvmlStatus::Ok { .. } => None,
        NvmlStatus::NoDriver { message } => Some(("No NVIDIA driver found", message.clone())),
        NvmlStatus::Error { message } => Some(("NVML error", message.clone())),
    }
}

pub fn notice_text(n: &Notice) -> String {
    match n {
        Notice::Lagged { skipped } => {
            format!("This page fell behind: the server skipped {skipped} frame(s).")
        }
        Notice::Server { code, message } => {
            format!("The server refused a message ({code:?}): {message}")
        }
        Notice::Decode(m) => format!("A server message could not be read: {m}"),
    }
}

/// Browser time, ticking once a second, for ages.
pub fn use_clock() -> ReadSignal<f64> {
    let now = RwSignal::new(js_sys::Date::now());
    if let Ok(handle) =
        set_interval_with_handle(move || now.set(js_sys::Date::now()), Duration::from_secs(1))
    {
        on_cleanup(move || handle.clear());
    }
    now.read_only()
}

#[component]
pub fn ConnBadge(state: ReadSignal<ConnState>) -> impl IntoView {
    let replay = use_context::<Replaying>();
    let replaying = move || replay.is_some_and(|r| r.0.get());
    let title = move || match state.get() {
        ConnState::Closed { reason } => reason,
        _ => String::new(),
    };
    view! {
        <span
            class="conn-badge"
            data-testid="conn-badge"
            data-state=move || state.with(ConnState::as_attr)
            title=title
            role="status"
        >
            <span class="dot"></span>
            {move || state.with(|s| badge_text(s, replaying()))}
        </span>
    }
}

#[component]
pub fn Notices(now: ReadSignal<f64>) -> impl IntoView {
    let store = use_store();
    let protocol = move || {
        store.server().with(|s| {
            s.as_ref().filter(|s| !s.compatible()).map(|s| {
                format!(
                    "This page speaks protocol {} but the server (vramio {}) speaks {}. Reload the page.",
                    shared::PROTOCOL_VERSION, s.version, s.protocol
                )
            })
        })
    };
    let host_state = move || {
        // A hub's detail says this in its header (`views/hub.rs`).
        if store.many_hosts.get() {
            return None;
        }
        let status = store.host_status.get()?;
        let what = match status.state {
            HostState::Up => return None,
            HostState::Connecting => "connecting",
            HostState::Stale => "stale",
            HostState::Down => "down",
        };
        let host = store.current_host.get().unwrap_or_default();
        let seen = status
            .last_seen_ms
            .map(|t| format!(", last frame {} ago", age(now.get() - t as f64)))
            .unwrap_or_default();
        let error = status.error.map(|e| format!(": {e}")).unwrap_or_default();
        Some(format!("Host {host} is {what}{seen}{error}"))
    };
    let nvml = move || {
        store
            .latest
            .with(|f| f.as_ref().and_then(|f| nvml_notice(&f.nvml)))
    };
    view! {
        <div class="notices">
            {move || protocol().map(|m| view! { <p class="notice bad" data-testid="protocol-notice">{m}</p> })}
            {move || host_state().map(|m| view! { <p class="notice warn" data-testid="host-status">{m}</p> })}
            {move || {
                nvml()
                    .map(|(head, detail)| {
                        view! {
                            <p class="notice info" data-testid="nvml-notice">
                                <strong>{head}</strong>
                                " — "
                                <span class="detail">{detail}</span>
                            </p>
                        }
                    })
            }}
            {move || {
                store
                    .notices()
                    .get()
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        view! {
                            <p class="notice warn">
                                {notice_text(n)}
                                <button class="dismiss" aria-label="Dismiss" on:click=move |_| store.dismiss(i)>
                                    "×"
                                </button>
                            </p>
                        }
                    })
                    .collect_view()
            }}
        </div>
    }
}

#[component]
pub fn Footer(now: ReadSignal<f64>) -> impl IntoView {
    let store = use_store();
    let seq = move || store.latest.with(|f| f.as_ref().map(|f| f.seq));
    let host = move || store.current_host.get().unwrap_or_else(|| "—".to_owned());
    let updated = move || {
        store.received_at_ms.get().map_or_else(
            || "no data yet".to_owned(),
            |t| format!("updated {} ago", age(now.get() - t)),
        )
    };
    // What vramio itself costs: the sampler's time per tick, summed over its sources.
    let cost = move || {
        store
            .latest
            .with(|f| f.as_ref().map(|f| sampling_cost_text(tick_micros(&f.cost))))
    };
    let server = move || {
        store
            .server()
            .with(|s| s.as_ref().map(|s| format!("vramio {}", s.version)))
    };
    view! {
        <footer class="footer">
            <span class="host-name">{host}</span>
            <span data-testid="last-seq" data-seq=move || seq().map(|s| s.to_string())>
                {move || seq().map_or_else(|| "seq —".to_owned(), |s| format!("seq {s}"))}
            </span>
            <span>{updated}</span>
            <span>{move || format!("every {} ms", store.interval_ms.get())}</span>
            <span data-testid="sampling-cost" title="time the sampler spent reading every source this tick">
                {cost}
            </span>
            <span>{server}</span>
        </footer>
    }
}

/// The sampler's time for one tick: its sources' costs added up, saturating (the figures come off
/// the wire, and a recording can say anything).
pub fn tick_micros(cost: &[SourceCost]) -> u64 {
    cost.iter().fold(0, |sum, c| sum.saturating_add(c.micros))
}

/// `sampled in 0.4 ms`: the sampler's own time for the latest tick.
pub fn sampling_cost_text(micros: u64) -> String {
    if micros < 10_000 {
        format!("sampled in {:.1} ms", micros as f64 / 1000.0)
    } else {
        format!("sampled in {} ms", micros / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn badge_says_what_the_feed_does() {
        assert_eq!(badge_text(&ConnState::Open, false), "live");
        assert_eq!(badge_text(&ConnState::Open, true), "replay");
        assert_eq!(
            badge_text(
                &ConnState::Reconnecting {
                    attempt: 3,
                    in_ms: 2000
                },
                true
            ),
            "reconnecting in 2.0 s (attempt 3)"
        );
    }

    #[test]
    fn nvml_notices() {
        let none = NvmlStatus::NoDriver {
            message: "libnvidia-ml.so.1: cannot open shared object file".into(),
        };
        let (head, detail) = nvml_notice(&none).unwrap_or_default();
        assert_eq!(head, "No NVIDIA driver found");
        assert!(detail.contains("libnvidia-ml"));
        let err = NvmlStatus::Error {
            message: "init failed".into(),
        };
        assert_eq!(nvml_notice(&err).map(|n| n.1), Some("init failed".into()));
        assert_eq!(
            nvml_notice(&NvmlStatus::Ok {
                driver_version: None
            }),
            None
        );
    }

    #[test]
    fn notices_read_well() {
        assert!(notice_text(&Notice::Lagged { skipped: 5 }).contains("skipped 5"));
    }

    #[test]
    fn sampling_cost_reads_in_ms() {
        assert_eq!(sampling_cost_text(420), "sampled in 0.4 ms");
        assert_eq!(sampling_cost_text(2_550), "sampled in 2.5 ms");
        assert_eq!(sampling_cost_text(312_000), "sampled in 312 ms");
    }

    #[test]
    fn a_hostile_cost_saturates() {
        let cost = |micros| SourceCost {
            source: shared::Source::Gpu,
            micros,
        };
        assert_eq!(tick_micros(&[cost(400), cost(20)]), 420);
        assert_eq!(tick_micros(&[cost(u64::MAX), cost(5)]), u64::MAX);
        assert!(sampling_cost_text(u64::MAX).ends_with(" ms"));
    }
}
