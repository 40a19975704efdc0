//! What browsers and scripts meet: the routes ([`app::app`]), the credential and origin checks
//! ([`auth`], [`same_origin`]), the share-link routes ([`share_routes`]), `/api/snapshot` and
//! `/api/health` ([`status_routes`]), `/api/replay` ([`replay_route`]), the `/ws` upgrade
//! ([`ws_route`]), `/metrics` ([`metrics_route`]), one WebSocket [`session`] per viewer (of one
//! host or several), the embedded page ([`assets`]) and the listeners ([`listen`]: TCP, TLS, a
//! Unix socket).

pub mod app;
pub mod assets;
pub mod auth;
pub mod error;
mod history_route;
pub mod listen;
pub mod metrics_route;
pub mod pinned;
mod replay_route;
pub mod same_origin;
pub mod session;
pub mod share_routes;
pub mod slots;
pub mod state;
pub mod status_routes;
pub mod ws_route;

pub use app::app;
pub use state::AppState;
