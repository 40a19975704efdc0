//! The host panel: CPU, iowait, RAM, page cache, dirty/writeback, swap and PSI of the current host's
//! latest frame, with the system source's errors. Reads `Store::latest`.

use super::{Bar, Errors};
use crate::format::{DASH, opt_bytes, opt_pct, section_errors};
use crate::store::use_store;
use leptos::prelude::*;
use shared::units::{Bytes, Percent};
use shared::{Psi, Source, SystemStats};

/// `some 3.2% · full 1.0%` for one PSI resource.
pub fn psi_text(psi: &Psi) -> String {
    format!(
        "some {} · full {}",
        opt_pct(Some(psi.some_avg10)),
        opt_pct(psi.full_avg10)
    )
}

/// Share of RAM in use (total minus available); unknown without `MemAvailable`.
pub fn ram_used_pct(s: &SystemStats) -> Option<Percent> {
    let (available, total) = (s.mem_available_bytes?, s.mem_total_bytes?);
    Bytes(total.0.saturating_sub(available.0)).percent_of(total)
}

#[component]
pub fn HostPanel() -> impl IntoView {
    let store = use_store();
    let sys = Memo::new(move |_| {
        store
            .latest
            .with(|f| f.as_ref().and_then(|f| f.system.clone()))
    });
    let errors = Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .map(|f| section_errors(&f.errors, Source::System, &[]))
                .unwrap_or_default()
        })
    });
    let text = move |f: fn(&SystemStats) -> String| {
        move || sys.with(|s| s.as_ref().map_or_else(|| DASH.to_owned(), f))
    };
    let ram_pct = Signal::derive(move || sys.with(|s| s.as_ref().and_then(ram_used_pct)));
    let psi = move |f: fn(&SystemStats) -> Option<Psi>, label: &'static str| {
        move || {
            sys.with(|s| s.as_ref().and_then(f)).map(|p| {
                view! {
                    <div>
                        <dt>{label}</dt>
                        <dd>{psi_text(&p)}</dd>
                    </div>
                }
            })
        }
    };
    view! {
        <section class="section" aria-labelledby="host-h" data-testid="host-panel">
            <h2 id="host-h">"Host"</h2>
            <Errors list=errors />
            <Show when=move || sys.with(Option::is_none)>
                <p class="empty">"Host statistics unavailable."</p>
            </Show>
            <dl class="stats host-stats">
                <div>
                    <dt>"CPU"</dt>
                    <dd>
                        {text(|s| opt_pct(s.cpu_pct))}
                        <span class="small">{text(|s| s.cpu_count.map(|c| format!(" of {c} cores")).unwrap_or_default())}</span>
                    </dd>
                </div>
                <div>
                    <dt>"iowait"</dt>
                    <dd>{text(|s| opt_pct(s.iowait_pct))}</dd>
                </div>
                <div class="wide">
                    <dt>"RAM available / total"</dt>
                    <dd>
                        {text(|s| format!("{} / {}", opt_bytes(s.mem_available_bytes), opt_bytes(s.mem_total_bytes)))}
                        <Bar pct=ram_pct />
                    </dd>
                </div>
                <div>
                    <dt>"Page cache"</dt>
                    <dd>{text(|s| opt_bytes(s.page_cache_bytes))}</dd>
                </div>
                <div>
                    <dt>"Dirty / writeback"</dt>
                    <dd>{text(|s| format!("{} / {}", opt_bytes(s.dirty_bytes), opt_bytes(s.writeback_bytes)))}</dd>
                </div>
                <div>
                    <dt>"Swap used / total"</dt>
                    <dd>{text(|s| format!("{} / {}", opt_bytes(s.swap_used_bytes), opt_bytes(s.swap_total_bytes)))}</dd>
                </div>
                {psi(|s| s.psi_io, "PSI io (avg10)")}
                {psi(|s| s.psi_memory, "PSI memory (avg10)")}
            </dl>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ram_share_needs_mem_available() {
        let mut s = SystemStats {
            mem_total_bytes: Some(Bytes(1000)),
            ..SystemStats::default()
        };
        assert_eq!(ram_used_pct(&s), None);
        s.mem_available_bytes = Some(Bytes(250));
        assert_eq!(ram_used_pct(&s), Some(Percent(75.0)));
    }

    #[test]
    fn psi_shows_missing_full_as_dash() {
        let p = Psi {
            some_avg10: Percent(3.24),
            full_avg10: None,
            some_total_us: None,
        };
        assert_eq!(psi_text(&p), "some 3.2% · full —");
    }
}
