//! The page's sections. Each reads the store from context and renders; none writes live data or
//! computes a diagnosis (the diagnosis views only present the server's, through `crate::diag`).
//! Shared bits (error lists, bars) live here.

pub mod access;
pub mod charts;
pub mod copy;
pub mod disks;
pub mod evidence;
pub mod gpu;
pub mod history;
pub mod host;
pub mod hub;
pub mod jobs;
pub mod overview;
pub mod projection;
pub mod replay;
pub mod share;
pub mod status;
pub mod suggestions;
pub mod tree;
pub mod verdict;

use leptos::prelude::*;
use shared::units::Percent;

/// Width of a bar filled to `pct` (empty when unknown), clamped to the bar.
pub fn bar_width(pct: Option<Percent>) -> String {
    format!("{:.1}%", pct.map_or(0.0, |p| p.0.clamp(0.0, 100.0)))
}

/// A thin horizontal bar filled to `pct`.
#[component]
pub fn Bar(#[prop(into)] pct: Signal<Option<Percent>>) -> impl IntoView {
    view! {
        <div class="bar">
            <div class="bar-fill" style:width=move || bar_width(pct.get())></div>
        </div>
    }
}

/// Source errors shown where they belong (a section header, a card, a row).
#[component]
pub fn Errors(#[prop(into)] list: Signal<Vec<String>>) -> impl IntoView {
    move || {
        let list = list.get();
        (!list.is_empty()).then(|| {
            view! {
                <ul class="errors" role="status">
                    {list.into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}
                </ul>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_clamped_and_empty_when_unknown() {
        assert_eq!(bar_width(None), "0.0%");
        assert_eq!(bar_width(Some(Percent(42.26))), "42.3%");
        assert_eq!(bar_width(Some(Percent(140.0))), "100.0%");
    }
}
