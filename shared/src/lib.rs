//! The wire contract between vramio's backend and its browser frontend, plus pure logic both run.
//!
//! Data flows `sampler -> hub -> ws session -> frontend store -> views`; every stage speaks the
//! types defined here: [`Frame`] (one tick of one host), [`ServerMsg`] / [`ClientMsg`] (the `/ws`
//! protocol) and the unit newtypes in [`units`]. [`window::Ring`] is the bounded buffer both the hub
//! and the frontend store keep. No I/O here: this crate builds for native and wasm32.

pub mod access;
pub mod diagnosis;
pub mod frame;
pub mod history;
pub mod jobs;
pub mod privacy;
pub mod protocol;
pub mod replay;
pub mod rollup;
pub mod schema;
pub mod series;
pub mod stored;
pub mod summary;
pub mod units;
pub mod window;

pub use frame::{
    BlockCounters, BlockDevice, Frame, Gpu, GpuApis, GpuMemory, GpuProcess, GpuState, MemoryApi,
    MigInstance, MigSlot, Mount, MountKind, NvmlStatus, Presence, ProcessApi, Psi, Source,
    SourceCost, SourceError, SystemStats,
};
pub use jobs::{IoCounter, Job, JobDeviceIo, JobGpu, JobIo, JobKind, JobPsi};
pub use protocol::{ClientMsg, ErrorCode, HostState, PROTOCOL_VERSION, ServerMsg};
pub use summary::{DiskBrief, GpuBrief, HostSummary, JobBrief};
pub use units::{Bytes, BytesPerSec, Percent};
