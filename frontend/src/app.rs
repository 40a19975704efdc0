//! `App`: creates the store, starts the live feed into it and lays out the sections: the verdict
//! banner, GPUs, the decision tree, findings and suggestions, charts, host, mounts, block devices.

use crate::feed::use_live_feed;
use crate::store::Store;
use crate::views::charts::ChartsSection;
use crate::views::disks::{BlockSection, MountsSection};
use crate::views::gpu::GpuSection;
use crate::views::host::HostPanel;
use crate::views::status::{ConnBadge, Footer, HostTabs, Notices, use_clock};
use crate::views::suggestions::SuggestionsSection;
use crate::views::tree::TreeSection;
use crate::views::verdict::VerdictBanner;
use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    let store = Store::new();
    provide_context(store);
    let conn = use_live_feed();
    let now = use_clock();
    let has_data = move || store.latest.with(Option::is_some);
    view! {
        <header class="topbar">
            <h1 class="brand">"vramio"</h1>
            <HostTabs />
            <ConnBadge state=conn />
        </header>
        <main class="page">
            <VerdictBanner />
            <Notices now />
            <Show
                when=has_data
                fallback=|| view! { <p class="waiting">"Waiting for the first frame…"</p> }
            >
                <GpuSection />
                <TreeSection />
                <SuggestionsSection />
                <ChartsSection />
                <HostPanel />
                <MountsSection />
                <BlockSection />
            </Show>
        </main>
        <Footer now />
    }
}
