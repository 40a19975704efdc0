//! `vramio import FILE... --out run.ndjson`: logs merged by time into a recording, written frame
//! by frame (memory stays bounded whatever the logs' size), with every note on stderr.

use super::flags::ImportArgs;
use crate::ingest::{self, ImportOptions};
use crate::ndjson;
use anyhow::Context;
use std::io::Write;

pub fn run(args: ImportArgs) -> anyhow::Result<()> {
    let host = args.name.clone().unwrap_or_else(|| host_of(&args.files));
    let opts = ImportOptions {
        files: args.files.clone(),
        format: args.logs.format.clone(),
        tuning: args.logs.tuning(),
        step_ms: u64::try_from(args.interval.as_millis()).unwrap_or(u64::MAX),
        host,
    };
    // Written next to the target, then renamed over it: a failed import leaves no half file.
    let tmp = args.out.with_extension("ndjson.partial");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let mut frames = 0u64;
    let mut write_error = None;
    let notes = ingest::import(&opts, |frame| {
        if write_error.is_none() {
            match ndjson::write_frame_unflushed(&mut out, &frame) {
                Ok(()) => frames += 1,
                Err(e) => write_error = Some(e),
            }
        }
    });
    let notes = match notes {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.into());
        }
    };
    if let Some(e) = write_error {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", tmp.display()));
    }
    for n in &notes {
        eprintln!("vramio import: {n}");
    }
    // Nothing to write: whatever `--out` held stays as it was.
    if frames == 0 {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!(
            "no samples in {}; {} left as it was",
            list(&args.files),
            args.out.display()
        );
    }
    out.flush()
        .and_then(|()| out.get_ref().sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &args.out)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    println!("{frames} frames written to {}", args.out.display());
    Ok(())
}

/// The first file's name without its extension, as the host of imported frames.
pub fn host_of(files: &[std::path::PathBuf]) -> String {
    files
        .first()
        .and_then(|p| p.file_stem())
        .map_or_else(|| "imported".into(), |s| s.to_string_lossy().into_owned())
}

fn list(files: &[std::path::PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
