//! `/metrics`: the latest frame and diagnosis of every host, in the Prometheus text format 0.0.4
//! (DESIGN section 11), written by the official `prometheus-client` crate's encoder.
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
mod verdict;

use crate::hub::fleet::Fleet;
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
}

/// Everything one scrape encodes.
#[derive(Clone, Debug)]
pub struct Scrape {
    pub options: Options,
    pub hosts: Vec<HostData>,
    /// WebSocket viewers connected to this server now.
    pub viewers: usize,
}

impl Scrape {
    /// What `fleet`'s hubs hold now: a host's frame and diagnosis only while it is up.
    pub fn of_fleet(fleet: &Fleet, options: Options, viewers: usize) -> Scrape {
        let hosts = fleet
            .hubs()
            .iter()
            .map(|hub| {
                let (state, _, _) = hub.host_status();
                match hub.latest_frame().filter(|_| state == HostState::Up) {
                    Some(frame) => HostData {
                        name: hub.host().to_owned(),
                        frame: Some(frame),
                        diagnosis: hub.latest_diagnosis().map(|d| d.diagnosis().clone()),
                    },
                    None => HostData::down(hub.host()),
                }
            })
            .collect();
        Scrape {
            options,
            hosts,
            viewers,
        }
    }

    /// The exposition, in the text format of [`CONTENT_TYPE`].
    pub fn render(self) -> Result<String, std::fmt::Error> {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        let mut out = String::with_capacity(32 * 1024);
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
        Ok(out)
    }

    /// Hosts that are up, with their frame.
    fn up_hosts(&self) -> impl Iterator<Item = (&HostData, &Frame)> {
        self.hosts
            .iter()
            .filter_map(|h| h.frame.as_deref().map(|f| (h, f)))
    }
}

impl Collector for Scrape {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut out = families::Out::new(encoder);
        families::encode(self, &mut out)?;
        verdict::encode(self, &mut out)
    }
}

#[cfg(test)]
mod tests;
