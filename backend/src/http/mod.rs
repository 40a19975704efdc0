//! What browsers and scripts meet: the routes ([`app::app`]), one WebSocket [`session`] per
//! viewer, the [`same_origin`] checks and the embedded page ([`assets`]).

pub mod app;
pub mod assets;
pub mod same_origin;
pub mod session;

pub use app::{AppState, app};
