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
    let mut file = match &args.out {
        Some(out) => Some(Partial::create(out)?),
        None => None,
    };
    let mut history = if args.into_history {
        Some(IntoHistory::open(&args)?)
    } else {
        None
    };
    let mut frames = 0u64;
    let notes = ingest::import(&opts, |frame| {
        frames += 1;
        if let Some(f) = &mut file {
            f.write(&frame);
        }
        if let Some(h) = &mut history {
            h.diagnoser.record(frame);
        }
    });
    let loaded = history.map(IntoHistory::finish);
    let notes = match notes {
        Ok(n) => n,
        Err(e) => {
            if let Some(f) = file {
                f.abandon();
            }
            return Err(e.into());
        }
    };
    for n in &notes {
        eprintln!("vramio import: {n}");
    }
    // Nothing to write: whatever `--out` held stays as it was.
    if frames == 0 {
        if let Some(f) = file {
            f.abandon();
        }
        anyhow::bail!("no samples in {}; nothing written", list(&args.files));
    }
    if let Some(f) = file {
        let out = f.finish()?;
        println!("{frames} frames written to {}", out.display());
    }
    if let Some(dir) = loaded {
        let dir = dir?;
        println!(
            "{frames} frames loaded into the history in {}",
            dir.display()
        );
    }
    Ok(())
}

/// A recording written next to its target and renamed over it once whole: a failed import
/// leaves no half file.
struct Partial {
    out: std::path::PathBuf,
    tmp: std::path::PathBuf,
    writer: std::io::BufWriter<std::fs::File>,
    error: Option<std::io::Error>,
}

impl Partial {
    fn create(out: &std::path::Path) -> anyhow::Result<Partial> {
        let tmp = out.with_extension("ndjson.partial");
        let file = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        Ok(Partial {
            out: out.to_owned(),
            tmp,
            writer: std::io::BufWriter::new(file),
            error: None,
        })
    }

    fn write(&mut self, frame: &shared::Frame) {
        if self.error.is_none()
            && let Err(e) = ndjson::write_frame_unflushed(&mut self.writer, frame)
        {
            self.error = Some(e);
        }
    }

    fn abandon(self) {
        let _ = std::fs::remove_file(&self.tmp);
    }

    fn finish(mut self) -> anyhow::Result<std::path::PathBuf> {
        if let Some(e) = self.error.take() {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(e).with_context(|| format!("cannot write {}", self.tmp.display()));
        }
        self.writer
            .flush()
            .and_then(|()| self.writer.get_ref().sync_all())
            .with_context(|| format!("cannot write {}", self.tmp.display()))?;
        std::fs::rename(&self.tmp, &self.out)
            .with_context(|| format!("cannot write {}", self.out.display()))?;
        Ok(self.out)
    }
}

/// Logs loaded into a history (docs/history.md#import): each frame and the verdict the live
/// diagnosis would have given, through the same sink and writer as `serve`.
struct IntoHistory {
    dir: std::path::PathBuf,
    history: crate::history::History,
    diagnoser: crate::host_feed::diagnoser::Diagnoser,
}

impl IntoHistory {
    fn open(args: &ImportArgs) -> anyhow::Result<IntoHistory> {
        use crate::host_feed::diagnoser::{DEFAULT_WINDOW, DIAGNOSE_EVERY, Diagnoser};
        let dir = match &args.history_dir {
            Some(d) => d.clone(),
            None => {
                let state = crate::access::state_dir::StateDir::open(args.state_dir.as_deref())?;
                state.path().join("history")
            }
        };
        let (history, sink) = // An import never trims: the cap is the server's to hold (its --history-max).
        crate::history::History::open(&dir, u64::MAX)
            .map_err(|e| match e {
                crate::history::StoreError::Db(redb::Error::DatabaseAlreadyOpen) => anyhow::anyhow!(
                    "the history in {} is held by a running vramio serve: stop it, import, and start it again",
                    dir.display()
                ),
                e => anyhow::anyhow!("cannot open the history in {}: {e}", dir.display()),
            })?;
        let diagnoser = Diagnoser::new(shared::diagnosis::Thresholds::default(), DEFAULT_WINDOW)
            .diagnosing_every(DIAGNOSE_EVERY)
            .with_history(Some(sink.blocking()));
        Ok(IntoHistory {
            dir,
            history,
            diagnoser,
        })
    }

    /// Waits until everything is written; the directory, or why writing failed.
    fn finish(self) -> anyhow::Result<std::path::PathBuf> {
        drop(self.diagnoser);
        self.history.close();
        let s = self.history.status();
        if s.full > 0 || s.failed > 0 || s.dropped > 0 {
            anyhow::bail!(
                "the history in {} did not take every frame: {}",
                self.dir.display(),
                s.paused
                    .unwrap_or_else(|| format!("{} samples dropped", s.dropped))
            );
        }
        Ok(self.dir)
    }
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
