//! The thread that feeds the first host's hub: the sampler pair of `serve` or the player of
//! `replay`, each diagnosing as frames arrive; started from the [`LocalHost`] the fleet gives and
//! stopped (joined off the async thread) at shutdown.

use super::fleet::LocalHost;
use crate::cli::flags::SamplingArgs;
use crate::collect::sampler::SamplerConfig;
use crate::collect::sources::Sources;
use crate::collect::standby;
use crate::host_feed::diagnoser::{DEFAULT_WINDOW, DIAGNOSE_EVERY, Diagnoser};
use crate::ingest::player::{self, Playing};
use anyhow::Context;
use shared::diagnosis::Thresholds;

/// The thread that feeds the first host's hub.
pub enum Feeding {
    Sampler(standby::Running),
    Player(Playing),
}

impl Feeding {
    /// Starts sampling this machine (with `--nvml-lib`, every `--interval`) or playing the
    /// replay into `local`'s hub, diagnosed against `thresholds`.
    pub fn start(
        local: LocalHost,
        thresholds: Thresholds,
        sampling: &SamplingArgs,
        history: Option<crate::history::Sink>,
    ) -> anyhow::Result<Feeding> {
        match local {
            LocalHost::Sampled(hub) => {
                let sources = Sources::system_default(sampling.nvml_lib.clone())
                    .with_job_map(sampling.job_map_dir.clone());
                let diagnoser = Diagnoser::new(thresholds, DEFAULT_WINDOW)
                    .diagnosing_every(DIAGNOSE_EVERY)
                    .with_history(history);
                let config = SamplerConfig {
                    host: hub.host().to_owned(),
                    interval: sampling.interval,
                };
                let running = standby::spawn(sources, config, hub, diagnoser)
                    .context("cannot start the sampler threads")?;
                Ok(Feeding::Sampler(running))
            }
            LocalHost::Played(hub, replay) => {
                let diagnoser = Diagnoser::new(thresholds, DEFAULT_WINDOW);
                let playing = player::spawn(replay, hub, diagnoser)
                    .context("cannot start the player thread")?;
                Ok(Feeding::Player(playing))
            }
        }
    }

    /// Stops the thread and waits for it on a blocking thread: no frame is published after this
    /// returns (a sampler stuck in NVML is not waited for).
    pub async fn stop(self) {
        let _ = tokio::task::spawn_blocking(move || match self {
            Feeding::Sampler(s) => s.stop_and_join(),
            Feeding::Player(p) => p.stop_and_join(),
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::serve::testutil::serve_args;
    use crate::host_feed::{HostFeed, HostFeedConfig};
    use crate::ingest::player::{Replay, Speed};
    use shared::Frame;
    use std::time::{Duration, Instant};

    #[tokio::test]
    async fn a_replay_is_played_into_the_hub_and_stops_cleanly() {
        let interval = Duration::from_secs(1);
        let hub = HostFeed::new("rec", interval, HostFeedConfig::for_interval(interval));
        let frames: Vec<Frame> = (0..5)
            .map(|i| Frame::empty("rec", 0, 1_700_000_000_000 + i * 1000, 1000))
            .collect();
        let replay = Replay::new(frames, Speed::Max);
        let args = serve_args(&[]);
        let feeding = Feeding::start(
            LocalHost::Played(hub.clone(), replay),
            Thresholds::default(),
            &args.sampling,
            None,
        )
        .expect("starts");
        assert!(matches!(feeding, Feeding::Player(_)));
        let deadline = Instant::now() + Duration::from_secs(10);
        while hub.history_len() < 5 {
            assert!(Instant::now() < deadline, "played {}", hub.history_len());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let last = hub.latest_frame().expect("a frame");
        assert_eq!(last.t_ms, 1_700_000_004_000);
        tokio::time::timeout(Duration::from_secs(5), feeding.stop())
            .await
            .expect("the player thread is joined");
        assert_eq!(hub.history_len(), 5, "nothing after the stop");
    }
}
