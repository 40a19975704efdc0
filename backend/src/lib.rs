//! vramio's backend: samples this host and serves the live dashboard.
//!
//! The folders are the stages a frame passes through, in order, so a reader can trace one by
//! folder names:
//! - [`collect`]: the sources (NVML, /proc, statvfs) behind one trait each, the readers that can
//!   hang behind a deadline, and the sampler that turns one tick of them into a `shared::Frame`,
//!   paced by one [`collect::ticker`] for every command that samples;
//! - [`hub`]: the one place frames go next: sequence numbers, one encoding per frame, the history
//!   ring, the fan-out to viewers, and the diagnoser that turns the recent window into a verdict
//!   (later also the fleet of remote hosts);
//! - [`http`]: what a browser or script meets: the routes ([`http::app`]), the WebSocket session,
//!   the same-origin checks and the embedded page (later auth, share links, `/metrics`);
//! - [`access`]: who may see what: the state directory, the admin token, share links and the
//!   server file the CLI finds a running server by (its HTTP side is `http::auth`);
//! - [`cli`]: the commands a person runs (`serve`, `check`, `record`) and their flags;
//! - [`ndjson`]: the recording file format that `record` writes and `check --from` reads (later
//!   beside an `ingest/` stage for imports).
//!
//! `main.rs` only parses flags, sets up logging and hands over to [`cli`].

pub mod access;
pub mod cli;
pub mod collect;
pub mod http;
pub mod hub;
pub mod ndjson;
pub mod peers;
