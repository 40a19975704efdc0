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

/// What to do with an `--out` that exists already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Refuse (the default: a recording is never lost by accident).
    Refuse,
    /// `--force`: replace it.
    Replace,
    /// `--append`: add to its end.
    Append,
}

pub struct RecordOptions {
    pub out: PathBuf,
    pub existing: Existing,
    pub duration: Option<Duration>,
    pub interval: Duration,
    pub nvml_lib: Option<PathBuf>,
    pub job_map_dir: Option<PathBuf>,
    pub host: String,
}

/// Records until done; returns how many frames were written.
pub fn run(opts: RecordOptions, stop: Arc<Stop>) -> anyhow::Result<u64> {
    let file = create(&opts.out, opts.existing)?;
    let mut out = std::io::BufWriter::new(file);
    let mut sampler = Sampler::new(
        Sources::system_default(opts.nvml_lib.clone()).with_job_map(opts.job_map_dir.clone()),
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

/// Opens `path` for writing as `existing` says; an existing file without `--force` or
/// `--append` is an error that says both.
fn create(path: &Path, existing: Existing) -> anyhow::Result<std::fs::File> {
    let mut open = std::fs::OpenOptions::new();
    match existing {
        Existing::Refuse => open.write(true).create_new(true),
        Existing::Replace => open.write(true).create(true).truncate(true),
        Existing::Append => open.append(true).create(true),
    };
    let mut file = open.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "{} exists: give --force to replace it or --append to add to it",
                path.display()
            )
        } else {
            anyhow::Error::new(e).context(format!("cannot create {}", path.display()))
        }
    })?;
    if existing == Existing::Append {
        end_cut_off_line(path, &mut file)
            .with_context(|| format!("cannot append to {}", path.display()))?;
    }
    Ok(file)
}

/// Ends a last line that was cut off (a recorder killed mid-line, a disk that filled up) with
/// a newline, so the fragment stays one bad line of its own and the first appended frame is
/// whole instead of glued onto it. A file this user may only write (not read) is left as it is.
fn end_cut_off_line(path: &Path, file: &mut std::fs::File) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let Some(last_at) = len.checked_sub(1) else {
        return Ok(());
    };
    let Ok(reader) = std::fs::File::open(path) else {
        return Ok(());
    };
    let mut last = [0u8; 1];
    reader.read_exact_at(&mut last, last_at)?;
    if last != *b"\n" {
        file.write_all(b"\n")?;
    }
    Ok(())
}
