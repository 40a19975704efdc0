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
use super::source::{FormatSpec, Tuning};

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
        importer: |_| boxed(nvsmi_table::importer()),
    },
    FormatSpec {
        id: "dmon",
        what: "nvidia-smi dmon",
        sniff: nvsmi_dmon::sniff,
        importer: |_| boxed(nvsmi_dmon::importer()),
    },
    FormatSpec {
        id: "pmon",
        what: "nvidia-smi pmon",
        sniff: nvsmi_pmon::sniff,
        importer: |_| boxed(nvsmi_pmon::importer()),
    },
    FormatSpec {
        id: "iostat-json",
        what: "iostat -o JSON",
        sniff: iostat_json::sniff,
        importer: |t: &Tuning| boxed(iostat_json::importer_with(!t.keep_first_report)),
    },
    FormatSpec {
        id: "iostat",
        what: "iostat (-x) text, sysstat 10 to 12",
        sniff: iostat::sniff,
        importer: |t: &Tuning| boxed(iostat::importer_with(!t.keep_first_report)),
    },
    FormatSpec {
        id: "df",
        what: "df output (-h, -B1, -k, -T, -i, -P)",
        sniff: df::sniff,
        importer: |t: &Tuning| {
            boxed(df::importer_with(if t.df_si {
                df::HumanBase::Si
            } else {
                df::HumanBase::Binary
            }))
        },
    },
    FormatSpec {
        id: "nvidia-smi-apps",
        what: "nvidia-smi --query-compute-apps CSV",
        sniff: nvsmi_apps::sniff,
        importer: |t: &Tuning| boxed(nvsmi_apps::importer_with_fields(t.fields.clone())),
    },
    FormatSpec {
        id: "nvidia-smi-csv",
        what: "nvidia-smi --query-gpu CSV",
        sniff: nvsmi_csv::sniff,
        importer: |t: &Tuning| boxed(nvsmi_csv::importer_with_fields(t.fields.clone())),
    },
];
