//! The Share dialog (admins only): create a read-only link (label, expiry, whether user names
//! show), copy it, and list, copy and revoke the active ones. Talks to `/api/shares` through
//! `crate::api`; opened by the top bar's Share button, closed by its close button or Escape. The
//! dialog is only in the page while open.

use super::copy::CopyButton;
use crate::access::{EXPIRY_CHOICES, expires_in, expiry_choice, label_value};
use crate::api;
use leptos::ev;
use leptos::html::{Code, Input};
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::access::{CreateShare, DEFAULT_SHARE_SECS, ShareInfo};

/// The top bar's button that opens the dialog.
#[component]
pub fn ShareButton(open: RwSignal<bool>) -> impl IntoView {
    view! {
        <button
            id="share-open"
            class="share-open"
            type="button"
            aria-haspopup="dialog"
            aria-expanded=move || open.get().to_string()
            on:click=move |_| open.set(true)
        >
            "Share"
        </button>
    }
}

/// The dialog, in the page while `open`.
#[component]
pub fn ShareDialog(open: RwSignal<bool>, now: ReadSignal<f64>) -> impl IntoView {
    view! {
        <Show when=move || open.get()>
            <ShareDialogBody open now />
        </Show>
    }
}

#[component]
fn ShareDialogBody(open: RwSignal<bool>, now: ReadSignal<f64>) -> impl IntoView {
    let label = RwSignal::new(String::new());
    let expires = RwSignal::new(DEFAULT_SHARE_SECS.to_string());
    let show_users = RwSignal::new(false);
    let live_only = RwSignal::new(false);
    let shares = RwSignal::new(Vec::<ShareInfo>::new());
    let new_url = RwSignal::new(None::<String>);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let label_input = NodeRef::<Input>::new();
    let new_code = NodeRef::<Code>::new();

    // The dialog's signals go when it closes; answers that come later use `try_*` and do nothing.
    let refresh = move || {
        spawn_local(async move {
            match api::list_shares().await {
                Ok(list) => {
                    shares.try_set(list);
                }
                Err(e) => {
                    error.try_set(Some(e.to_string()));
                }
            }
        });
    };
    refresh();

    let close = move || open.set(false);
    let esc = window_event_listener(ev::keydown, move |e| {
        if e.key() == "Escape" {
            close();
        }
    });
    on_cleanup(move || esc.remove());
    Effect::new(move |_| {
        if let Some(el) = label_input.get() {
            let _ = el.focus();
        }
    });

    let store = crate::store::use_store();
    // The current host's page preselects it; the overview shares every host.
    let host_choice = RwSignal::new(String::new());
    let create = move |_| {
        if busy.get_untracked() {
            return;
        }
        let req = CreateShare {
            expires_s: Some(expiry_choice(&expires.get_untracked())),
            label: label_value(&label.get_untracked()),
            show_users: show_users.get_untracked(),
            // On a hub: every host, or the one chosen.
            host: Some(host_choice.get_untracked()).filter(|h| !h.is_empty()),
            live_only: live_only.get_untracked(),
        };
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            match api::create_share(&req).await {
                Ok(info) => {
                    new_url.try_set(Some(info.url));
                    label.try_set(String::new());
                    refresh();
                }
                Err(e) => {
                    error.try_set(Some(e.to_string()));
                }
            }
            busy.try_set(false);
        });
    };
    let revoke = move |id: String| {
        error.set(None);
        spawn_local(async move {
            match api::revoke_share(&id).await {
                // Already gone (revoked elsewhere, expired): the refreshed list shows it.
                Ok(()) | Err(api::ApiFailure::Refused { status: 404, .. }) => {}
                Err(e) => {
                    error.try_set(Some(e.to_string()));
                }
            }
            refresh();
        });
    };

    view! {
        <div class="modal-backdrop" on:click=move |_| close()></div>
        <div id="share-dialog" class="share-dialog" role="dialog" aria-modal="true" aria-labelledby="share-title">
            <header class="share-head">
                <h2 id="share-title">"Share a read-only view"</h2>
                <button id="share-close" class="dismiss" type="button" aria-label="Close" on:click=move |_| close()>
                    "×"
                </button>
            </header>
            <div class="share-form">
                <label>
                    "Label"
                    <input id="share-label" type="text" maxlength="200" placeholder="who it is for" node_ref=label_input bind:value=label />
                </label>
                <label>
                    "Expires after"
                    <select id="share-expires" on:change=move |e| expires.set(event_target_value(&e))>
                        {EXPIRY_CHOICES
                            .iter()
                            .map(|(secs, words)| {
                                view! {
                                    <option value=secs.to_string() selected=*secs == DEFAULT_SHARE_SECS>
                                        {*words}
                                    </option>
                                }
                            })
                            .collect_view()}
                    </select>
                </label>
                <Show when=move || store.many_hosts.get()>
                    <label>
                        "Shows"
                        <select id="share-host" on:change=move |e| host_choice.set(event_target_value(&e))>
                            <option value="" selected=true>"every host"</option>
                            {move || {
                                store
                                    .host_names
                                    .get()
                                    .into_iter()
                                    .map(|h| view! { <option value=h.clone()>{h.clone()}</option> })
                                    .collect_view()
                            }}
                        </select>
                    </label>
                </Show>
                <label class="check">
                    <input id="share-show-users" type="checkbox" bind:checked=show_users />
                    "show user names"
                </label>
                <label class="check" title="No stored history: no ranges, rewinds, exports or whole runs">
                    <input id="share-live-only" type="checkbox" bind:checked=live_only />
                    "live data only"
                </label>
                <button id="share-create" class="primary" type="button" disabled=move || busy.get() on:click=create>
                    "Create link"
                </button>
            </div>
            <p id="share-error" class="share-error" role="alert" hidden=move || error.with(Option::is_none)>
                {move || error.get()}
            </p>
            {move || {
                new_url
                    .get()
                    .map(|url| {
                        view! {
                            <div class="share-new">
                                <code id="share-new-url" node_ref=new_code>{url.clone()}</code>
                                <CopyButton text=url code=new_code class="share-new-copy" />
                            </div>
                        }
                    })
            }}
            <h3>"Active links"</h3>
            <p class="muted" hidden=move || shares.with(|s| !s.is_empty())>"None yet."</p>
            <ul id="share-list" class="share-list">
                <For each=move || shares.get() key=|s| (s.id.clone(), s.expires_ms) let:share>
                    <ShareItem share now revoke />
                </For>
            </ul>
        </div>
    }
}

#[component]
fn ShareItem(
    share: ShareInfo,
    now: ReadSignal<f64>,
    revoke: impl Fn(String) + Copy + 'static,
) -> impl IntoView {
    let code = NodeRef::<Code>::new();
    let id = share.id.clone();
    let expires_ms = share.expires_ms;
    view! {
        <li data-share-id=share.id.clone()>
            <span class="share-item-label">{share.label.clone().unwrap_or_else(|| "(no label)".to_owned())}</span>
            <span class="share-item-expiry">{move || expires_in(expires_ms, now.get())}</span>
            {share.show_users.then(|| view! { <span class="share-item-users">"shows user names"</span> })}
            {share.host.clone().map(|h| view! { <span class="share-item-host">{format!("only {h}")}</span> })}
            {share.live_only.then(|| view! { <span class="share-item-live">"live data only"</span> })}
            <code class="share-item-url" node_ref=code>{share.url.clone()}</code>
            <CopyButton text=share.url code class="share-copy" />
            <button class="share-revoke" type="button" on:click=move |_| revoke(id.clone())>
                "Revoke"
            </button>
        </li>
    }
}
