//! The copy button used by suggestions' snippets and share links: copies its text through
//! `crate::clipboard`, and where the page has no clipboard access selects the shown text instead.

use crate::clipboard::{copy_text, select_contents};
use leptos::html::Code;
use leptos::prelude::*;
use std::time::Duration;

/// How long the button says "Copied".
const COPIED_FOR: Duration = Duration::from_millis(1500);

/// What a copy button says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyState {
    Idle,
    Copied,
    /// No clipboard access: the text is selected for a manual copy.
    Manual,
}

pub fn copy_label(s: CopyState) -> &'static str {
    match s {
        CopyState::Idle => "Copy",
        CopyState::Copied => "Copied",
        CopyState::Manual => "Selected: press Ctrl+C",
    }
}

/// A button that copies `text`; `code` is the element showing it, selected when copying fails.
#[component]
pub fn CopyButton(
    text: String,
    code: NodeRef<Code>,
    class: &'static str,
    #[prop(optional)] testid: Option<&'static str>,
) -> impl IntoView {
    let state = RwSignal::new(CopyState::Idle);
    let on_click = move |_| {
        copy_text(&text, move |ok| {
            if ok {
                state.try_set(CopyState::Copied);
            } else {
                state.try_set(CopyState::Manual);
                if let Some(el) = code.get_untracked() {
                    select_contents(&el);
                }
            }
            set_timeout(
                move || {
                    state.try_set(CopyState::Idle);
                },
                COPIED_FOR,
            );
        });
    };
    view! {
        <button
            class=class
            type="button"
            data-testid=testid
            data-state=move || match state.get() {
                CopyState::Idle => "idle",
                CopyState::Copied => "copied",
                CopyState::Manual => "manual",
            }
            on:click=on_click
        >
            {move || copy_label(state.get())}
        </button>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_button_says_what_happened() {
        assert_eq!(copy_label(CopyState::Idle), "Copy");
        assert_eq!(copy_label(CopyState::Copied), "Copied");
        assert!(copy_label(CopyState::Manual).contains("Ctrl+C"));
    }
}
