//! Pure helpers that turn a `shared::diagnosis::Diagnosis` into what the diagnosis views show:
//! test-hook ids and the browser's time zone ([`text`]), the flowchart's geometry ([`layout`]),
//! the lit path ([`walk`]) and the projection a card shows ([`findings`]).
//!
//! Nothing here decides or words anything: the verdict, the path, the evidence, the sentences, the
//! banner's reason and the findings' order come from `shared::diagnosis` (`words`); these
//! functions only present them. All are tested natively with `cargo test -p frontend --lib`.

pub mod findings;
pub mod layout;
pub mod text;
pub mod walk;

pub use findings::projection_for;
pub use layout::{Branch, Layout, Slot, layout};
pub use text::{answer_attr, local_tz, severity_attr, wire_id};
pub use walk::{Lit, lit};
