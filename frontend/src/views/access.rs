//! The access screens: what the page shows instead of the dashboard when it has no credentials
//! (`#auth-required`), for a bad share link (`#share-invalid`) or when the boot could not reach
//! the server (`#boot-error`); the banner over a share viewer's stopped page (`#share-ended`); and
//! the viewer's badge in the top bar (`#viewer-badge`). Fed by `App`'s boot and the feed's end.

use crate::access::{SHARE_INVALID, ShareEnd, expires_in};
use leptos::prelude::*;
use shared::access::{SessionInfo, UNAUTHORIZED_HINT};

/// No credentials: how to get the link.
#[component]
pub fn AuthRequired() -> impl IntoView {
    view! {
        <section id="auth-required" class="gate" role="alert">
            <h2>"This vramio needs its link"</h2>
            // The hint verbatim (the server's 401 says the same), so tests can look for it whole.
            <p>"To see this page, "{UNAUTHORIZED_HINT}"."</p>
        </section>
    }
}

/// A share link that cannot be used (a refused claim, a link without its secret).
#[component]
pub fn ShareInvalid() -> impl IntoView {
    view! {
        <section id="share-invalid" class="gate" role="alert">
            <h2>"Link not valid"</h2>
            <p>{SHARE_INVALID}</p>
        </section>
    }
}

/// The boot's calls got no usable answer (the server is down or restarting).
#[component]
pub fn BootError(message: String) -> impl IntoView {
    view! {
        <section id="boot-error" class="gate" role="alert">
            <h2>"vramio could not be reached"</h2>
            <p>{message}</p>
            <button type="button" on:click=|_| {
                let _ = window().location().reload();
            }>"Reload"</button>
        </section>
    }
}

/// Over a share viewer's page once the link ended; the last data stays below, greyed.
#[component]
pub fn ShareEnded(end: ShareEnd) -> impl IntoView {
    view! {
        <section id="share-ended" class="notice bad share-ended" data-reason=end.as_attr() role="alert">
            <strong>{end.sentence()}</strong>
            " The readings below stopped updating."
        </section>
    }
}

/// The badge's words: `read-only view · LABEL · live only · expires in 23 h`.
pub fn viewer_text(session: &SessionInfo, now_ms: f64) -> String {
    let mut parts = vec!["read-only view".to_owned()];
    parts.extend(session.label.clone().filter(|l| !l.is_empty()));
    if session.live_only {
        parts.push("live only".to_owned());
    }
    parts.extend(session.expires_ms.map(|e| expires_in(e, now_ms)));
    parts.join(" · ")
}

/// A share viewer's badge in the top bar.
#[component]
pub fn ViewerBadge(session: SessionInfo, now: ReadSignal<f64>) -> impl IntoView {
    view! {
        <span id="viewer-badge" class="viewer-badge" title="Opened from a read-only share link">
            {move || viewer_text(&session, now.get())}
        </span>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::access::Role;

    #[test]
    fn the_viewer_badge_names_label_and_expiry() {
        let now = 1_000_000.0;
        let session = SessionInfo {
            role: Role::Viewer,
            show_users: false,
            expires_ms: Some(1_000_000 + 23 * 3_600_000 + 60_000),
            label: Some("for the infra team".into()),
            host: None,
            live_only: false,
        };
        assert_eq!(
            viewer_text(&session, now),
            "read-only view · for the infra team · expires in 23 h"
        );
        let live = SessionInfo {
            live_only: true,
            ..session.clone()
        };
        assert_eq!(
            viewer_text(&live, now),
            "read-only view · for the infra team · live only · expires in 23 h"
        );
        let bare = SessionInfo {
            label: None,
            expires_ms: None,
            ..session
        };
        assert_eq!(viewer_text(&bare, now), "read-only view");
    }
}
