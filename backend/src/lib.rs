//! vramio's backend: samples this host and serves the live dashboard.
//!
//! Data flows one way: [`sources`] (NVML, /proc) are read by the [`sampler`] on its own threads,
//! each tick becomes a `shared::Frame` published to the [`hub`] (latest frame, history ring, one
//! encoding shared by every viewer), the [`diagnoser`] turns the recent window into a verdict, and
//! each WebSocket [`session`] streams both to a browser.
//! [`routes::app`] builds the whole HTTP surface; `main.rs` only parses flags, binds and serves.

pub mod assets;
pub mod check;
pub mod cli;
pub mod config;
pub mod diagnoser;
pub mod guard;
pub mod hub;
pub mod record;
pub mod recording;
pub mod report;
pub mod routes;
pub mod sampler;
pub mod session;
pub mod sources;
pub mod worker;
