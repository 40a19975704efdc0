//! `/metrics`: the latest frame and diagnosis of every host, in the Prometheus text format 0.0.4
//! (docs/architecture.md#10-prometheus-metrics-contract), written by the official `prometheus-client` crate's encoder.
//!
//! A scrape never samples. [`Scrape::of_fleet`] takes what the hubs already hold (each hub's
//! newest frame, decoded once per frame on first demand, and its latest diagnosis) and
//! [`Scrape::render`] encodes it through a `prometheus_client` [`Collector`] built for that one
//! scrape, so every family is computed at scrape time and nothing is kept between scrapes.
//!
//! A host whose data is not fresh (down, connecting, or stale: no frame for a few intervals)
//! has no series at all rather than frozen ones; in hub mode `vramio_host_up` says which hosts
//! are up, and every host's series carry a `host` label.

mod families;
pub mod jobs;
mod merge;
mod verdict;

use crate::host_feed::fleet::Fleet;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use shared::diagnosis::Diagnosis;
use shared::{Frame, HostState};
use std::sync::Arc;

pub use prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// How `/metrics` labels what it exports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// A hub: every host's series carry `host`, and `vramio_host_up` is exported.
    pub hub_mode: bool,
    /// `--metrics-users`: per-process series carry the owner's login name as `user`.
    pub show_users: bool,
}

/// One host as a scrape sees it.
#[derive(Clone, Debug)]
pub struct HostData {
    /// The name the server knows the host by (the `host` label in hub mode).
    pub name: String,
    /// The newest frame, present only while the host is up.
    pub frame: Option<Arc<Frame>>,
    /// The newest diagnosis, present only while the host is up.
    pub diagnosis: Option<Arc<Diagnosis>>,
}

impl HostData {
    /// A host that is up with this frame and diagnosis.
    pub fn up(name: impl Into<String>, frame: Frame, diagnosis: Option<Diagnosis>) -> HostData {
        HostData {
            name: name.into(),
            frame: Some(Arc::new(frame)),
            diagnosis: diagnosis.map(Arc::new),
        }
    }

    /// A host that is down (or stale): it has no series.
    pub fn down(name: impl Into<String>) -> HostData {
        HostData {
            name: name.into(),
            frame: None,
            diagnosis: None,
        }
    }

    pub fn is_up(&self) -> bool {
        self.frame.is_some()
    }

    /// Without user names, also inside job and process names (`unit jupyter-…3fa9c1-singleuser
    /// .service`), for a scrape without `--metrics-users`, with the stand-ins the page's share
    /// viewers see. Copies only a frame or diagnosis that names a user.
    fn hide_users(&mut self) {
        let mut users: Vec<&str> = self.frame.iter().flat_map(|f| f.users()).collect();
        users.extend(self.diagnosis.iter().flat_map(|d| d.users()));
        if users.is_empty() {
            return;
        }
        users.sort_unstable();
        users.dedup();
        let hider = crate::host_feed::hider(users);
        if let Some(frame) = &mut self.frame {
            Arc::make_mut(frame).hide_users(&hider);
        }
        if let Some(d) = &mut self.diagnosis
            && !d.jobs.is_empty()
        {
            *d = Arc::new(d.without_users(&hider));
        }
    }
}

/// Everything one scrape encodes.
#[derive(Clone, Debug)]
pub struct Scrape {
    pub options: Options,
    pub hosts: Vec<HostData>,
    /// WebSocket viewers connected to this server now; `None` leaves the server's own families
    /// (`vramio_viewers`, `vramio_build_info`) without samples, as in a part of a larger scrape.
    pub viewers: Option<usize>,
    /// What this server's history writer has done (docs/history.md#durable); `None` without one,
    /// and in a part of a larger scrape.
    pub history: Option<crate::history::Status>,
}

/// From this many hosts on, a scrape renders each host alone, spread over the cores, and merges
/// the families: a host's frame stays in cache while all its families are written.
const PARALLEL_FROM: usize = 16;
/// At most this many threads render one scrape.
const MAX_THREADS: usize = 8;

impl Scrape {
    /// What `fleet`'s hubs hold now: a host's frame and diagnosis only while it is up.
    pub fn of_fleet(fleet: &Fleet, options: Options, viewers: usize) -> Scrape {
        let host = |hub: &crate::host_feed::HostFeed| {
            let (state, _, _) = hub.host_status();
            match hub.latest_frame().filter(|_| state == HostState::Up) {
                Some(frame) => HostData {
                    name: hub.host().to_owned(),
                    frame: Some(frame),
                    diagnosis: hub.latest_diagnosis().map(|d| d.diagnosis().clone()),
                },
                None => HostData::down(hub.host()),
            }
        };
        // Decoding each host's newest frame is most of a large hub's scrape: on every core too.
        let hosts = if fleet.len() < PARALLEL_FROM {
            fleet.hubs().iter().map(host).collect()
        } else {
            let per_thread = fleet.len().div_ceil(threads());
            std::thread::scope(|scope| {
                let workers: Vec<_> = fleet
                    .hubs()
                    .chunks(per_thread)
                    .map(|chunk| scope.spawn(move || chunk.iter().map(host).collect::<Vec<_>>()))
                    .collect();
                workers
                    .into_iter()
                    .zip(fleet.hubs().chunks(per_thread))
                    .flat_map(|(w, chunk)| {
                        // A worker that panicked leaves its hosts down rather than the scrape.
                        w.join().unwrap_or_else(|_| {
                            chunk.iter().map(|h| HostData::down(h.host())).collect()
                        })
                    })
                    .collect()
            })
        };
        Scrape {
            options,
            hosts,
            viewers: Some(viewers),
            history: None,
        }
    }

    /// The exposition, in the text format of [`CONTENT_TYPE`]. Many hosts are rendered one by
    /// one in parallel and merged family by family, which gives the same bytes as
    /// [`Scrape::render_whole`].
    pub fn render(self) -> Result<String, std::fmt::Error> {
        if self.hosts.len() < PARALLEL_FROM {
            return self.render_whole();
        }
        let per_thread = self.hosts.len().div_ceil(threads());
        let options = self.options;
        let alone = |h: &HostData| {
            Scrape {
                options,
                hosts: vec![h.clone()],
                viewers: None,
                history: None,
            }
            .render_whole()
        };
        let rendered: Vec<Result<Vec<String>, std::fmt::Error>> = std::thread::scope(|scope| {
            let workers: Vec<_> = self
                .hosts
                .chunks(per_thread)
                .map(|chunk| scope.spawn(move || chunk.iter().map(alone).collect()))
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or(Err(std::fmt::Error)))
                .collect()
        });
        let mut parts = Vec::with_capacity(self.hosts.len() + 1);
        for texts in rendered {
            parts.extend(texts?);
        }
        parts.push(
            Scrape {
                options,
                hosts: Vec::new(),
                viewers: self.viewers,
                history: self.history,
            }
            .render_whole()?,
        );
        merge::families(&parts)
    }

    /// The exposition, every family over every host in turn.
    pub fn render_whole(mut self) -> Result<String, std::fmt::Error> {
        if !self.options.show_users {
            self.hosts.iter_mut().for_each(HostData::hide_users);
        }
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        let mut out = String::with_capacity(32 * 1024);
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
        Ok(out)
    }

    /// Hosts that are up, with their frame.
    pub(super) fn up_hosts(&self) -> impl Iterator<Item = (&HostData, &Frame)> {
        self.hosts
            .iter()
            .filter_map(|h| h.frame.as_deref().map(|f| (h, f)))
    }
}

/// Threads a large scrape uses.
fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, MAX_THREADS)
}

impl Collector for Scrape {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut out = families::Out::new(encoder);
        families::encode(self, &mut out)?;
        jobs::encode(self, &mut out)?;
        verdict::encode(self, &mut out)
    }
}

#[cfg(test)]
mod tests;
