//! One importer per log format, each a push parser over lines ([`super::model::Importer`]) with
//! a `sniff` that says whether the first lines look like its format, and why not.

pub mod df;
mod df_layout;
#[cfg(test)]
mod hostile;
pub mod iostat;
pub mod iostat_json;
mod sysstat;
