//! Collecting this host's state: [`sources`] read NVML, /proc and statvfs behind one trait each;
//! readers that can hang run behind a [`deadline`]; the [`sampler`] makes one `shared::Frame` per
//! tick from them, paced by the [`ticker`]; in `serve`, the [`standby`]'s two threads run it, one
//! reading NVML itself and one standing by to take a hung tick over.

pub mod deadline;
pub mod sampler;
pub mod sources;
pub mod standby;
pub mod ticker;
