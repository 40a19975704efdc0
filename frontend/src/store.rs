//! The store: the page's only writer of live data, provided to every view by context.
//!
//! The feed hook (`feed.rs`) hands it decoded `ServerMsg`s through [`Store::apply`]; views read the
//! memos and read-only signals it exposes. Per host (keyed by the name in each message's `host`,
//! never by the hostname inside a frame) it keeps the latest frame and a bounded history of chart
//! samples ([`crate::model::Hosts`]), deduplicated by seq, the latest diagnosis the server sent (the
//! page never computes one) and, on a hub, the latest `summary` for the overview.

use crate::model::{Accepted, FrameRef, HostData, HostStatus, Hosts, Sample, SummaryRef};
use leptos::prelude::*;
use shared::diagnosis::Diagnosis;
use shared::window::Ring;
use shared::{ErrorCode, PROTOCOL_VERSION, ServerMsg};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What `hello` said about the server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerInfo {
    pub protocol: u32,
    pub version: String,
    pub hosts: Vec<String>,
    pub interval_ms: u64,
}

impl ServerInfo {
    /// Whether this page understands the server's messages.
    pub fn compatible(&self) -> bool {
        self.protocol == PROTOCOL_VERSION
    }
}

/// Something the user should know about the stream itself (not about a host's data).
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// The page fell behind and the server skipped frames (summed while shown).
    Lagged { skipped: u64 },
    /// The server refused one of our messages.
    Server { code: ErrorCode, message: String },
    /// A server message this page could not decode.
    Decode(String),
}

/// Notices kept at once; older ones drop off.
const MAX_NOTICES: usize = 4;

/// Adds `notice`, folding a new `Lagged` into a shown one and keeping at most [`MAX_NOTICES`].
pub fn add_notice(notices: &mut Vec<Notice>, notice: Notice) {
    if let Notice::Lagged { skipped } = notice
        && let Some(Notice::Lagged { skipped: shown }) = notices
            .iter_mut()
            .find(|n| matches!(n, Notice::Lagged { .. }))
    {
        *shown = shown.saturating_add(skipped);
        return;
    }
    notices.push(notice);
    if notices.len() > MAX_NOTICES {
        notices.remove(0);
    }
}

/// Frames further apart than this many intervals are drawn with a gap between them.
pub fn max_gap_ms(interval_ms: u64) -> u64 {
    interval_ms.max(1).saturating_mul(3)
}

/// A stored moment the page shows instead of the live one (a rewind, docs/history.md#rewind).
#[derive(Clone, Debug, PartialEq)]
pub struct Rewound {
    pub host: String,
    pub t_ms: u64,
    /// The width of a stored point there: 1000, or 60000 where only minutes are kept.
    pub step_ms: u64,
    pub frame: FrameRef,
    pub diagnosis: Arc<Diagnosis>,
}

/// Cheap to copy: every field is an arena handle.
#[derive(Clone, Copy)]
pub struct Store {
    hosts: RwSignal<Hosts>,
    server: RwSignal<Option<ServerInfo>>,
    notices: RwSignal<Vec<Notice>>,
    selected: RwSignal<Option<String>>,
    /// The latest `diagnosis` message per host.
    diagnoses: RwSignal<BTreeMap<String, Arc<Diagnosis>>>,
    /// The stored moment shown instead of the live one, while the page is rewound.
    rewound: RwSignal<Option<Rewound>>,
    /// The latest `summary` message per host (a hub's overview), one signal per host so a summary
    /// notifies only its own card (and the card order); the map itself changes only when a host
    /// is first named.
    summaries: RwSignal<BTreeMap<String, ArcRwSignal<Option<SummaryRef>>>>,
    /// Every host known, by name.
    pub host_names: Memo<Vec<String>>,
    /// Whether the server serves several hosts (`hello` named more than one: a hub, or `serve
    /// --peer`): the page then has an overview and one detail per host.
    pub many_hosts: Memo<bool>,
    /// The host the page shows. One host: that one. A hub: the selected one, if the server has it.
    pub current_host: Memo<Option<String>>,
    /// The current host's newest frame.
    pub latest: Memo<Option<FrameRef>>,
    /// Browser time (ms since the epoch) when that frame arrived.
    pub received_at_ms: Memo<Option<f64>>,
    /// The current host's last `host_status`.
    pub host_status: Memo<Option<HostStatus>>,
    /// The sampling interval in force (newest frame, else `hello`, else 1 s).
    pub interval_ms: Memo<u64>,
    /// The current host's latest diagnosis (none until the server sends one).
    pub diagnosis: Memo<Option<Arc<Diagnosis>>>,
}

impl Store {
    pub fn new() -> Self {
        let hosts = RwSignal::new(Hosts::default());
        let server = RwSignal::new(None::<ServerInfo>);
        let selected = RwSignal::new(None::<String>);
        let host_names = Memo::new(move |_| hosts.with(Hosts::names));
        let many_hosts =
            Memo::new(move |_| server.with(|s| s.as_ref().is_some_and(|s| s.hosts.len() > 1)));
        let current_host = Memo::new(move |_| {
            let names = host_names.get();
            let picked = selected.get().filter(|s| names.contains(s));
            if many_hosts.get() {
                picked
            } else {
                picked.or_else(|| names.into_iter().next())
            }
        });
        let rewound = RwSignal::new(None::<Rewound>);
        let rewound_here = move |c: &Option<String>| {
            rewound.with(|r| {
                r.as_ref()
                    .filter(|r| c.as_deref() == Some(r.host.as_str()))
                    .cloned()
            })
        };
        let latest = Memo::new(move |_| {
            current_host.with(|c| {
                if let Some(r) = rewound_here(c) {
                    return Some(r.frame);
                }
                c.as_ref()
                    .and_then(|c| hosts.with(|h| h.get(c).and_then(|d| d.latest().cloned())))
            })
        });
        let received_at_ms = Memo::new(move |_| {
            current_host.with(|c| {
                c.as_ref()
                    .and_then(|c| hosts.with(|h| h.get(c).and_then(|d| d.received_at_ms())))
            })
        });
        let host_status = Memo::new(move |_| {
            current_host.with(|c| {
                c.as_ref()
                    .and_then(|c| hosts.with(|h| h.get(c).and_then(|d| d.status().cloned())))
            })
        });
        let interval_ms = Memo::new(move |_| {
            latest
                .with(|f| f.as_ref().map(|f| f.interval_ms))
                .or_else(|| server.with(|s| s.as_ref().map(|s| s.interval_ms)))
                .unwrap_or(1000)
        });
        let diagnoses = RwSignal::new(BTreeMap::<String, Arc<Diagnosis>>::new());
        let diagnosis = Memo::new(move |_| {
            current_host.with(|c| {
                if let Some(r) = rewound_here(c) {
                    return Some(r.diagnosis);
                }
                c.as_ref()
                    .and_then(|c| diagnoses.with(|d| d.get(c).cloned()))
            })
        });
        Store {
            hosts,
            server,
            notices: RwSignal::new(Vec::new()),
            selected,
            diagnoses,
            rewound,
            summaries: RwSignal::new(BTreeMap::new()),
            host_names,
            many_hosts,
            current_host,
            latest,
            received_at_ms,
            host_status,
            interval_ms,
            diagnosis,
        }
    }

    /// Shows the stored moment `r` instead of the live one (`None`: back to live).
    pub fn rewind(&self, r: Option<Rewound>) {
        self.rewound.set(r);
    }

    /// The stored moment shown, while the page is rewound.
    pub fn rewound(&self) -> ReadSignal<Option<Rewound>> {
        self.rewound.read_only()
    }

    /// What `hello` said, if it came.
    pub fn server(&self) -> ReadSignal<Option<ServerInfo>> {
        self.server.read_only()
    }

    pub fn notices(&self) -> ReadSignal<Vec<Notice>> {
        self.notices.read_only()
    }

    /// Runs `f` on the current host's sample history (tracked: re-runs when a frame arrives).
    pub fn with_history<R>(&self, f: impl FnOnce(&Ring<Sample>) -> R) -> Option<R> {
        let host = self.current_host.get()?;
        self.hosts.with(|h| h.get(&host).map(|d| f(d.history())))
    }

    /// The latest summary of every host that sent one (a hub's overview).
    pub fn summary(&self, host: &str) -> Option<SummaryRef> {
        self.summaries
            .with(|m| m.get(host).map(ArcRwSignal::get))
            .flatten()
    }

    /// Runs `f` on every host known to the overview (named by `hello` or by a summary) with its
    /// latest summary, by name (tracked: re-runs with any host's summary).
    pub fn with_summaries<R>(&self, f: impl FnOnce(&[(&str, Option<SummaryRef>)]) -> R) -> R {
        self.summaries.with(|m| {
            let all: Vec<_> = m.iter().map(|(k, s)| (k.as_str(), s.get())).collect();
            f(&all)
        })
    }

    /// Makes `host` known to the overview before its first summary.
    fn ensure_summary(&self, host: &str) -> ArcRwSignal<Option<SummaryRef>> {
        if let Some(s) = self.summaries.with_untracked(|m| m.get(host).cloned()) {
            return s;
        }
        let signal = ArcRwSignal::new(None);
        self.summaries.update(|m| {
            m.insert(host.to_owned(), signal.clone());
        });
        signal
    }

    /// The seq to send in `subscribe` after a reconnect (not tracked).
    pub fn resume_seq(&self) -> Option<u64> {
        self.hosts.with_untracked(Hosts::resume_seq)
    }

    /// Per host held, the newest seq (a hub's `subscribe.since`; not tracked).
    pub fn held_seqs(&self) -> BTreeMap<String, u64> {
        self.hosts.with_untracked(Hosts::held_seqs)
    }

    /// Takes one server message. `now_ms` is the browser clock.
    pub fn apply(&self, msg: ServerMsg, now_ms: f64) {
        match msg {
            ServerMsg::Hello {
                protocol,
                version,
                hosts,
                interval_ms,
                ..
            } => {
                self.hosts.update(|h| {
                    for host in &hosts {
                        h.ensure(host, interval_ms);
                    }
                });
                for host in &hosts {
                    self.ensure_summary(host);
                }
                self.server.set(Some(ServerInfo {
                    protocol,
                    version,
                    hosts,
                    interval_ms,
                }));
            }
            // Views hear of a backfill that shows something (not one still gathering a reset's
            // new history).
            ServerMsg::Backfill { host, frames } => self.hosts.maybe_update(|h| {
                let interval = frames.first().map_or(1000, |f| f.interval_ms);
                h.ensure(&host, interval);
                let mut shown = false;
                for frame in frames {
                    shown |= h.push(&host, frame, now_ms) != Accepted::Duplicate;
                }
                shown
            }),
            // An unchanged summary notifies nobody; a changed one its card and the card order.
            ServerMsg::Summary { host, summary } => {
                self.ensure_summary(&host).maybe_update(|held| {
                    let changed = held.as_ref().is_none_or(|s| *s.0 != *summary);
                    if changed {
                        *held = Some(SummaryRef(Arc::from(summary)));
                    }
                    changed
                });
            }
            ServerMsg::Frame { host, frame } => {
                // Only a frame that changes something notifies the views. A live frame ends any
                // new history still gathering.
                self.hosts.maybe_update(|h| {
                    let settled = h.get_mut(&host).is_some_and(HostData::settle_pending);
                    h.push(&host, *frame, now_ms) != Accepted::Duplicate || settled
                });
            }
            ServerMsg::HostStatus {
                host,
                state,
                last_seen_ms,
                error,
            } => self.hosts.update(|h| {
                let interval = self
                    .server
                    .with_untracked(|s| s.as_ref().map_or(1000, |s| s.interval_ms));
                h.ensure(&host, interval).set_status(HostStatus {
                    state,
                    last_seen_ms,
                    error,
                });
            }),
            ServerMsg::Diagnosis { host, diagnosis } => {
                if self.hosts.with_untracked(|h| h.get(&host).is_none()) {
                    let interval = self
                        .server
                        .with_untracked(|s| s.as_ref().map_or(1000, |s| s.interval_ms));
                    self.hosts.update(|h| {
                        h.ensure(&host, interval);
                    });
                }
                let diagnosis = Arc::new(*diagnosis);
                // An unchanged diagnosis (re-sent to show it still holds) notifies nobody.
                self.diagnoses.maybe_update(|d| {
                    let changed = d.get(&host) != Some(&diagnosis);
                    if changed {
                        d.insert(host, diagnosis);
                    }
                    changed
                });
            }
            // Nothing shows until the new history is all in (see `HostData::reset`).
            ServerMsg::Reset { host, frames } => self.hosts.update_untracked(|h| {
                if let Some(d) = h.get_mut(&host) {
                    d.reset(frames);
                }
            }),
            ServerMsg::History { host, samples } => self.hosts.maybe_update(|h| {
                let Some(d) = h.get_mut(&host) else {
                    return false;
                };
                let mut shown = false;
                for s in samples {
                    shown |= d.push_sample(s) != Accepted::Duplicate;
                }
                shown
            }),
            ServerMsg::Lagged { skipped } => self.notice(Notice::Lagged { skipped }),
            ServerMsg::Error { code, message } => self.notice(Notice::Server { code, message }),
            // The page asks its history over HTTP; these answer a hub's questions to its peers.
            ServerMsg::Pong
            | ServerMsg::HistoryAnswer { .. }
            | ServerMsg::MomentAnswer { .. }
            | ServerMsg::QueryFailed { .. } => {}
        }
    }

    /// Records a message that could not be decoded.
    pub fn decode_error(&self, message: String) {
        self.notice(Notice::Decode(message));
    }

    fn notice(&self, notice: Notice) {
        self.notices.update(|n| add_notice(n, notice));
    }

    /// Removes the notice at `i` (the user closed it).
    pub fn dismiss(&self, i: usize) {
        self.notices.update(|n| {
            if i < n.len() {
                n.remove(i);
            }
        });
    }

    /// Shows `host` (the route named it), or none (the overview).
    pub fn select(&self, host: Option<String>) {
        if self.selected.with_untracked(|s| *s != host) {
            self.selected.set(host);
        }
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

/// The store provided by `App`. Outside it (a component mounted alone), an empty store, logged.
pub fn use_store() -> Store {
    use_context::<Store>().unwrap_or_else(|| {
        leptos::logging::error!("vramio: no Store in context; showing an empty one");
        let store = Store::new();
        provide_context(store);
        store
    })
}

#[cfg(test)]
mod tests;
