//! `vramio replay FILE... [--speed X]`: the dashboard served from recordings or imported logs,
//! with the same auth and listeners as `serve`, their frames played into the first host's hub at
//! the chosen speed and diagnosed as they arrive.

use super::flags::ReplayArgs;
use super::serve::{self, Local};
use crate::ingest::{self, ImportOptions};
use anyhow::Context;

pub fn run(mut args: ReplayArgs, thresholds: shared::diagnosis::Thresholds) -> anyhow::Result<()> {
    let opts = ImportOptions {
        files: args.files.clone(),
        format: args.logs.format.clone(),
        tuning: args.logs.tuning(),
        step_ms: u64::try_from(args.serve.sampling.interval.as_millis()).unwrap_or(u64::MAX),
        host: args
            .serve
            .name
            .clone()
            .unwrap_or_else(|| super::import::host_of(&args.files)),
    };
    let mut frames = Vec::new();
    let notes = ingest::import(&opts, |f| frames.push(f)).context("cannot read the inputs")?;
    for n in &notes {
        eprintln!("vramio replay: {n}");
    }
    let (Some(first), Some(last)) = (frames.first(), frames.last()) else {
        anyhow::bail!("nothing to replay: no frames in the inputs");
    };
    eprintln!(
        "vramio replay: {} frames, {:.0} s of {}, at {}",
        frames.len(),
        last.t_ms.saturating_sub(first.t_ms) as f64 / 1000.0,
        first.host,
        args.speed
    );
    // The host's liveness follows the recording's own step.
    if let Some(ms) = frames
        .first()
        .map(|f| f.interval_ms)
        .filter(|ms| *ms >= 100)
    {
        args.serve.sampling.interval = std::time::Duration::from_millis(ms);
    }
    let replay = crate::ingest::player::Replay::new(frames, args.speed);
    replay
        .spawn_timeline(
            thresholds.clone(),
            crate::host_feed::diagnoser::DEFAULT_WINDOW,
        )
        .context("cannot start the verdict timeline")?;
    serve::run(args.serve, Vec::new(), Local::Play(replay), thresholds)
}
