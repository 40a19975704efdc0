//! One importer per log format, each a push parser over lines ([`super::model::Importer`]) with
//! a `sniff` that says whether the first lines look like its format, and why not.

use super::source::FormatSpec;

/// Every format, in the order detection tries them (the most specific first).
pub const ALL: &[FormatSpec] = &[];
