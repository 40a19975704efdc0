//! `vramio record --out FILE [--duration D]`: sample this host and write each frame as one NDJSON
//! line (flushed per line), until the duration is over or SIGINT/SIGTERM.

use crate::collect::sampler::{Sampler, SamplerConfig};
use crate::collect::sources::Sources;
use crate::collect::ticker::{Stop, Ticker};
use crate::ndjson::write_frame;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub struct RecordOptions {
    pub out: PathBuf,
    pub duration: Option<Duration>,
    pub interval: Duration,
    pub nvml_lib: Option<PathBuf>,
    pub host: String,
}

/// Records until done; returns how many frames were written.
pub fn run(opts: RecordOptions, stop: Arc<Stop>) -> anyhow::Result<u64> {
    let file = create(&opts.out)?;
    let mut out = std::io::BufWriter::new(file);
    let mut sampler = Sampler::new(
        Sources::system_default(opts.nvml_lib.clone()),
        SamplerConfig {
            host: opts.host.clone(),
            interval: opts.interval,
        },
    )
    .context("cannot start the sampler")?;
    let mut ticker = Ticker::new(opts.interval, stop);
    let mut written = 0u64;
    // Ticks at 0, 1, ... intervals up to and including the duration's end, or until stopped.
    while ticker.tick(opts.duration).is_some() {
        let mut frame = sampler.tick();
        written += 1;
        frame.seq = written;
        write_frame(&mut out, &frame)
            .with_context(|| format!("cannot write to {}", opts.out.display()))?;
    }
    Ok(written)
}

fn create(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))
}
