//! Collecting this host's state: [`sources`] read NVML, /proc and statvfs behind one trait each;
//! readers that can hang run behind a [`deadline`]; the [`sampler`] makes one `shared::Frame` per
//! tick from them, paced by the [`ticker`].

pub mod deadline;
pub mod sampler;
pub mod sources;
pub mod ticker;
