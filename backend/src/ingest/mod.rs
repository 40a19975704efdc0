//! The ingest stage, beside `collect`: frames from logs instead of from this host. Importers read
//! users' existing logs (`nvidia-smi` CSV, dmon, pmon and tables, `iostat -x` text and JSON,
//! `df`) line by line into [`model::Sample`]s, with bounded memory and every bad line named in
//! a [`model::Note`]; what a log lacks stays absent.

pub mod clock;
pub mod formats;
pub mod lines;
pub mod model;
