//! Who may see what (docs/security.md#1-the-model-in-short): the [`state_dir`] that keeps vramio's secrets, the admin
//! [`token`], read-only [`shares`] links, and the [`server_file`] through which `vramio url` and
//! `vramio share` find the running server. The HTTP side of it is `http::auth`.

pub mod server_file;
pub mod shares;
pub mod state_dir;
pub mod token;
