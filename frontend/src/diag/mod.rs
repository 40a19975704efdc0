//! Pure helpers that turn a `shared::diagnosis::Diagnosis` into what the diagnosis views show:
//! words and attribute ids ([`text`]), the flowchart's geometry ([`layout`]), the lit path
//! ([`walk`]) and the order and lookup of findings and projections ([`findings`]).
//!
//! Nothing here decides anything: the verdict, the path and the evidence come from `shared`; these
//! functions only present them. All are tested natively with `cargo test -p frontend --lib`.

pub mod findings;
pub mod layout;
pub mod text;
pub mod walk;

pub use findings::{order_findings, projection_for};
pub use layout::{Branch, Layout, Slot, layout};
pub use text::{
    answer_attr, deciding_evidence, duration_text, evidence_text, projection_text, reason,
    rule_words, severity_attr, verdict_words, wire_id,
};
pub use walk::{Lit, lit};
