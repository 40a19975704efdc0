//! `App`: the boot, then the dashboard. The boot claims a share link when the page is one
//! (`/s/<id>#<secret>`), then asks `/api/session` who this browser is; without credentials it
//! shows only how to get the link. The dashboard creates the store, starts the live feed into it
//! (with the session in context) and follows the route: on a hub without a host in the address,
//! the overview; otherwise one host's sections (on a hub under a header with its state): the
//! verdict banner, GPUs, the decision tree, findings and suggestions, charts, host, mounts, block
//! devices.

use crate::access::{BootPlan, boot_plan};
use crate::api;
use crate::feed::{FeedEnd, use_live_feed};
use crate::route::use_route;
use crate::store::{Store, use_store};
use crate::views::access::{AuthRequired, BootError, ShareEnded, ShareInvalid, ViewerBadge};
use crate::views::charts::ChartsSection;
use crate::views::disks::{BlockSection, MountsSection};
use crate::views::gpu::GpuSection;
use crate::views::host::HostPanel;
use crate::views::hub::{HostHead, HostNav};
use crate::views::overview::Overview;
use crate::views::share::{ShareButton, ShareDialog};
use crate::views::status::{ConnBadge, Footer, Notices, use_clock};
use crate::views::suggestions::SuggestionsSection;
use crate::views::tree::TreeSection;
use crate::views::verdict::VerdictBanner;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::access::{Role, SessionInfo};

/// Where the boot stands.
#[derive(Clone, Debug)]
enum Boot {
    Checking,
    AuthRequired,
    ShareInvalid,
    Failed(String),
    Ready(SessionInfo),
}

/// Replaces the share link's address (`/s/<id>#<secret>`) with `/`, so neither the id nor the
/// secret stays in the address bar or the history.
fn forget_link_address() {
    if let Ok(history) = window().history()
        && let Err(e) = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some("/"))
    {
        leptos::logging::error!("vramio: cannot replace the address: {e:?}");
    }
}

async fn run_boot() -> Boot {
    let location = window().location();
    let plan = boot_plan(
        &location.pathname().unwrap_or_default(),
        &location.hash().unwrap_or_default(),
    );
    match plan {
        BootPlan::InvalidLink => return Boot::ShareInvalid,
        BootPlan::Claim { id, secret } => match api::claim(&id, &secret).await {
            Ok(()) => forget_link_address(),
            Err(e) if e.status() == Some(404) => return Boot::ShareInvalid,
            Err(e) => return Boot::Failed(e.to_string()),
        },
        BootPlan::Session => {}
    }
    match api::session().await {
        Ok(session) => Boot::Ready(session),
        Err(e) if e.status() == Some(401) => Boot::AuthRequired,
        Err(e) => Boot::Failed(e.to_string()),
    }
}

#[component]
pub fn App() -> impl IntoView {
    let boot = RwSignal::new(Boot::Checking);
    spawn_local(async move {
        boot.set(run_boot().await);
    });
    move || match boot.get() {
        Boot::Checking => {
            view! { <p class="waiting" id="boot-checking">"Connecting…"</p> }.into_any()
        }
        Boot::AuthRequired => view! { <Gate><AuthRequired /></Gate> }.into_any(),
        Boot::ShareInvalid => view! { <Gate><ShareInvalid /></Gate> }.into_any(),
        Boot::Failed(message) => view! { <Gate><BootError message /></Gate> }.into_any(),
        Boot::Ready(session) => view! { <Dashboard session /> }.into_any(),
    }
}

/// One host's sections; on a hub, under the host's header (the route names the host).
#[component]
fn Detail(route: ReadSignal<crate::route::Route>, now: ReadSignal<f64>) -> impl IntoView {
    let store = use_store();
    let has_data = move || store.latest.with(Option::is_some);
    let hub_host = Memo::new(move |_| {
        store
            .many_hosts
            .get()
            .then(|| route.with(|r| r.host().map(str::to_owned)))
            .flatten()
    });
    view! {
        {move || hub_host.get().map(|name| view! { <HostHead name now /> })}
        <crate::views::replay::ReplayBar />
        <crate::views::history::RewindBar />
        <VerdictBanner />
        <Notices now />
        <Show
            when=has_data
            fallback=|| view! { <p class="waiting">"Waiting for the first frame…"</p> }
        >
            <crate::views::jobs::JobsSection />
            <GpuSection />
            <TreeSection />
            <SuggestionsSection />
            <ChartsSection />
            <HostPanel />
            <MountsSection />
            <BlockSection />
        </Show>
    }
}

/// The short screen around an access message: the brand and the message, nothing else.
#[component]
fn Gate(children: Children) -> impl IntoView {
    view! {
        <header class="topbar">
            <h1 class="brand">"vramio"</h1>
        </header>
        <main class="page gate-page">{children()}</main>
    }
}

#[component]
fn Dashboard(session: SessionInfo) -> impl IntoView {
    let store = Store::new();
    provide_context(store);
    provide_context(session.clone());
    provide_context(crate::views::status::Replaying(RwSignal::new(false)));
    let history = crate::history::History::new(!session.live_only);
    provide_context(history);
    let route = use_route();
    let routed_host = move || route.with(|r| r.host().map(str::to_owned));
    store.select(route.with_untracked(|r| r.host().map(str::to_owned)));
    Effect::new(move |_| store.select(routed_host()));
    // Another host: live again, and not rewound.
    Effect::new(move |prev: Option<Option<String>>| {
        let now = store.current_host.get();
        if prev.is_some_and(|p| p != now) {
            store.rewind(None);
            history.show(now.clone(), crate::history::Range::Live);
        }
        now
    });
    let feed = use_live_feed(session.role, route);
    let now = use_clock();
    let share_open = RwSignal::new(false);
    let overview = Memo::new(move |_| store.many_hosts.get() && route.with(|r| r.host().is_none()));
    let admin = session.role == Role::Admin;
    let access = match session.role {
        Role::Admin => view! { <ShareButton open=share_open /> }.into_any(),
        Role::Viewer => view! { <ViewerBadge session now /> }.into_any(),
    };
    let ended = move || {
        feed.ended.get().map(|end| match end {
            FeedEnd::Share(end) => view! { <ShareEnded end /> }.into_any(),
            FeedEnd::AuthGone => view! { <AuthRequired /> }.into_any(),
        })
    };
    view! {
        <header class="topbar">
            <h1 class="brand">"vramio"</h1>
            <HostNav route />
            <ConnBadge state=feed.state />
            {access}
        </header>
        {admin.then(|| view! { <ShareDialog open=share_open now /> })}
        <main class="page" class:stopped=move || feed.ended.with(Option::is_some)>
            {ended}
            <Show
                when=move || overview.get()
                fallback=move || view! { <Detail route now /> }
            >
                <Notices now />
                <Overview now />
            </Show>
        </main>
        <Footer now />
    }
}
