//! A projection tag for a card or row ("memory full in ~12 min", "full in ~40 min"), shown when
//! the current diagnosis forecasts that `subject` fills up. Reads `Store::diagnosis`.

use crate::diag::{projection_for, wire_id};
use crate::store::use_store;
use leptos::prelude::*;
use shared::diagnosis::ProjectionKind;
use shared::diagnosis::words::projection_text;

#[component]
pub fn ProjectionTag(kind: ProjectionKind, #[prop(into)] subject: String) -> impl IntoView {
    let store = use_store();
    let key = subject.clone();
    let seconds = Memo::new(move |_| {
        store.diagnosis.with(|d| {
            d.as_ref()
                .and_then(|d| projection_for(&d.projections, kind, &key))
                .map(|p| p.seconds)
        })
    });
    move || {
        seconds.get().map(|s| {
            view! {
                <span
                    class="projection"
                    data-testid="projection"
                    data-kind=wire_id(&kind)
                    data-subject=subject.clone()
                    data-seconds=format!("{s:.0}")
                    title="At the current growth rate (robust trend over the window)"
                >
                    {projection_text(kind, s)}
                </span>
            }
        })
    }
}
