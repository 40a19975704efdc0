//! What a hub's host detail adds to today's page: the way back to the overview in the top bar,
//! and a header naming the host (with the hostname it reports), its state, when it was last seen
//! and, while it is stale or down, why. Reads the host's summary, which a hub sends whatever the
//! subscription, so the reason shows even before (or without) any frame.

use crate::model::SummaryRef;
use crate::overview::{host_error, last_seen_text, state_attr, state_text};
use crate::route::{OVERVIEW_HREF, Route};
use crate::store::use_store;
use leptos::prelude::*;
use shared::HostState;

/// The top bar's link back to the overview, with the host shown; nothing on the overview or on a
/// one-host server.
#[component]
pub fn HostNav(route: ReadSignal<Route>) -> impl IntoView {
    let store = use_store();
    let name = move || {
        store
            .many_hosts
            .get()
            .then(|| route.with(|r| r.host().map(str::to_owned)))
            .flatten()
    };
    move || {
        name().map(|name| {
            view! {
                <nav class="host-nav" aria-label="Hosts">
                    <a id="back-to-overview" class="back-link" href=OVERVIEW_HREF>
                        "← All hosts"
                    </a>
                    <span class="host-nav-name">{name}</span>
                </nav>
            }
        })
    }
}

/// The detail's header on a hub: the host, its state and reason; or, for a name the hub does not
/// have, a note saying so.
#[component]
pub fn HostHead(name: String, now: ReadSignal<f64>) -> impl IntoView {
    let store = use_store();
    let server = store.server();
    let key = name.clone();
    let s: Memo<Option<SummaryRef>> = Memo::new(move |_| store.summary(&key));
    let known_name = name.clone();
    let known = Memo::new(move |_| {
        server.with(|s| s.as_ref().is_some_and(|s| s.hosts.contains(&known_name)))
            || s.with(Option::is_some)
    });
    let state =
        Memo::new(move |_| s.with(|s| s.as_ref().map_or(HostState::Connecting, |s| s.state)));
    let hostname = move || s.with(|s| s.as_ref().and_then(|s| s.hostname.clone()));
    let seen = move || last_seen_text(s.with(|s| s.as_ref().and_then(|s| s.seen_ms)), now.get());
    let error = move || s.with(|s| s.as_ref().and_then(|s| host_error(s).map(str::to_owned)));
    let head_name = name.clone();
    move || {
        if !known.get() {
            let name = name.clone();
            return view! {
                <p class="notice bad" data-testid="unknown-host">
                    "This server has no host named " <strong>{name}</strong> ". "
                    <a href=OVERVIEW_HREF>"See all hosts"</a>
                </p>
            }
            .into_any();
        }
        view! {
            <section
                class=move || format!("host-head state-{}", state_attr(state.get()))
                data-testid="host-head"
                data-host=head_name.clone()
                data-state=move || state_attr(state.get())
            >
                <div class="host-head-line">
                    <h2 class="host-head-name">{head_name.clone()}</h2>
                    {move || hostname().map(|h| view! { <span class="host-card-hostname">{h}</span> })}
                    <span class="host-state">{move || state_text(state.get())}</span>
                    <span class="host-seen">{seen}</span>
                </div>
                {move || error().map(|e| view! { <p class="host-error" data-testid="host-error">{e}</p> })}
            </section>
        }
        .into_any()
    }
}
