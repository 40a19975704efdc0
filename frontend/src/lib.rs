//! vramio's browser app (Leptos CSR, built to wasm32 by `cargo xtask` and served at the site root).
//!
//! Data flows one way: the feed hook ([`feed::use_live_feed`]) owns the WebSocket and hands each
//! decoded `ServerMsg` to the [`store::Store`], the only writer, which keeps per host the latest frame,
//! a bounded history and the latest diagnosis; the views in [`views`] read it and render, with
//! [`chart::Chart`] drawing the time series and [`diag`] turning the server's diagnosis into words,
//! flowchart geometry and the lit path. On a hub (`hello` names several hosts) the [`route`] picks
//! the overview of every host's summary ([`overview`], `views/overview.rs`) or one host's detail,
//! and the feed subscribes to match. Pure logic (dedup, series, geometry, formatting, backoff,
//! routes, card order) is in plain functions tested natively with `cargo test -p frontend --lib`.

pub mod access;
pub mod api;
pub mod app;
pub mod chart;
pub mod clipboard;
pub mod diag;
pub mod download;
pub mod feed;
pub mod format;
pub mod history;
pub mod model;
pub mod overview;
pub mod route;
pub mod series;
pub mod store;
pub mod views;

pub use app::App;

use wasm_bindgen::prelude::wasm_bindgen;

/// Entry point run by the wasm-bindgen glue when the module loads.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}
