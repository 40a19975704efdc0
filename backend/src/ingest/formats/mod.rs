//! One importer per log format, each a push parser over lines ([`super::model::Importer`]) with
//! a `sniff` that says whether the first lines look like its format, and why not.

pub mod df;
mod df_layout;
#[cfg(test)]
mod hostile;
pub mod iostat;
pub mod iostat_json;
pub mod nvsmi_apps;
pub mod nvsmi_csv;
pub mod nvsmi_dmon;
pub mod nvsmi_pmon;
pub mod nvsmi_table;
#[cfg(test)]
mod nvsmi_testkit;
mod nvsmi_values;
mod sysstat;

use super::model::Importer;
use super::source::FormatSpec;

fn boxed<I: Importer + 'static>(i: I) -> Box<dyn Importer> {
    Box::new(i)
}

/// Every format, in the order detection tries them (the most specific first: the table and the
/// `#`-headed dmon/pmon before the CSVs, compute-apps before `--query-gpu`).
pub const ALL: &[FormatSpec] = &[
    FormatSpec {
        id: "nvidia-smi",
        what: "the default nvidia-smi table, one snapshot or many",
        sniff: nvsmi_table::sniff,
        importer: || boxed(nvsmi_table::importer()),
    },
    FormatSpec {
        id: "dmon",
        what: "nvidia-smi dmon",
        sniff: nvsmi_dmon::sniff,
        importer: || boxed(nvsmi_dmon::importer()),
    },
    FormatSpec {
        id: "pmon",
        what: "nvidia-smi pmon",
        sniff: nvsmi_pmon::sniff,
        importer: || boxed(nvsmi_pmon::importer()),
    },
    FormatSpec {
        id: "iostat-json",
        what: "iostat -o JSON",
        sniff: iostat_json::sniff,
        importer: || boxed(iostat_json::importer()),
    },
    FormatSpec {
        id: "iostat",
        what: "iostat (-x) text, sysstat 10 to 12",
        sniff: iostat::sniff,
        importer: || boxed(iostat::importer()),
    },
    FormatSpec {
        id: "df",
        what: "df output (-h, -B1, -k, -T, -i, -P)",
        sniff: df::sniff,
        importer: || boxed(df::importer()),
    },
    FormatSpec {
        id: "nvidia-smi-apps",
        what: "nvidia-smi --query-compute-apps CSV",
        sniff: nvsmi_apps::sniff,
        importer: || boxed(nvsmi_apps::importer()),
    },
    FormatSpec {
        id: "nvidia-smi-csv",
        what: "nvidia-smi --query-gpu CSV",
        sniff: nvsmi_csv::sniff,
        importer: || boxed(nvsmi_csv::importer()),
    },
];
