//! One importer per log format, each a push parser over lines ([`super::model::Importer`]) with
//! a `sniff` that says whether the first lines look like its format, and why not.

pub mod nvsmi_apps;
pub mod nvsmi_csv;
pub mod nvsmi_dmon;
pub mod nvsmi_pmon;
pub mod nvsmi_table;
#[cfg(test)]
mod nvsmi_testkit;
mod nvsmi_values;
