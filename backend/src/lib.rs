//! vramio's backend: samples this host (or watches other hosts) and serves the live dashboard.
//!
//! The folders are the stages a frame passes through, in order, so a reader can trace one by
//! folder names:
//! - [`collect`]: the sources (NVML, /proc, statvfs) behind one trait each, the readers that can
//!   hang behind a deadline, and the sampler that turns one tick of them into a `shared::Frame`,
//!   paced by one [`collect::ticker`] for every command that samples;
//! - [`peers`]: beside `collect` for a hub: the links to other vramio instances (SSH running
//!   `vramio stream`, WebSocket to `vramio serve`), each feeding its host's feed;
//! - [`host_feed`]: the one place frames go next, one [`host_feed::HostFeed`] per host: sequence
//!   numbers, one encoding per frame, the history ring, the fan-out to viewers, the diagnoser
//!   that turns the recent window into a verdict, and the [`host_feed::fleet`] of every host
//!   served with its overview summaries (`vramio hub` is the command that serves many);
//! - [`http`]: what a browser or script meets: the routes ([`http::app`]), auth and same-origin
//!   checks, share links, the WebSocket sessions (one host or many), the listeners and the
//!   embedded page, and `/metrics`;
//! - [`metrics`]: beside `http`, the Prometheus exposition of what the hubs hold (the latest
//!   frame and diagnosis of every host), computed at scrape time;
//! - [`access`]: who may see what: the state directory, the admin token, share links and the
//!   server file the CLI finds a running server by (its HTTP side is `http::auth`);
//! - [`cli`]: the commands a person runs (`serve`, `hub`, `stream`, `check`, `record`, `url`,
//!   `share`) and their flags;
//! - [`ingest`]: beside `collect` for replay and imports: importers of users' logs
//!   (`nvidia-smi`, `iostat`, `df`) into samples;
//! - [`ndjson`]: the recording file format that `record` writes and `check --from` reads.
//!
//! `main.rs` only parses flags, sets up logging and hands over to [`cli`].

pub mod access;
pub mod cli;
pub mod collect;
pub mod history;
pub mod host_feed;
pub mod http;
pub mod ingest;
pub mod metrics;
pub mod ndjson;
pub mod peers;
