//! `vramio record --out FILE [--duration D]`: sample this host and write each frame as one NDJSON
//! line (flushed per line), until the duration is over or SIGINT/SIGTERM.

use crate::recording::write_frame;
use crate::sampler::{Sampler, SamplerConfig, Stop};
use crate::sources::Sources;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    let start = Instant::now();
    let mut written = 0u64;
    loop {
        let mut frame = sampler.tick();
        written += 1;
        frame.seq = written;
        write_frame(&mut out, &frame)
            .with_context(|| format!("cannot write to {}", opts.out.display()))?;
        let next = start + opts.interval * u32::try_from(written).unwrap_or(u32::MAX);
        if opts
            .duration
            .is_some_and(|d| next.duration_since(start) > d)
        {
            break;
        }
        if stop.sleep_until(next) {
            break;
        }
    }
    Ok(written)
}

fn create(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))
}
