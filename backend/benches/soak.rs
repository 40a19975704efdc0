//! The hub over time (a soak): a release `vramio hub` watching 16 simulated peers on loopback
//! (one 8-GPU frame per second each) with 100 real WebSocket viewers, while peers are killed and
//! restarted at random and a share link is revoked and made again. Every 10 s it prints the hub's
//! RSS, open fds and threads (from /proc), the viewers it holds (`/api/health`), the hosts up, the
//! frames its history rings hold, and how far behind each kind of viewer is; at the end, whether
//! each quantity levelled off (the last third of the samples against the middle third; printed to
//! read, not checked: a 10-minute run ends before the rings are full), and the checks. Exits 1
//! when a check fails.
//!
//! The viewers: 40 fast (one connection, every message read at once: they must lose no frame),
//! 30 slow (a sleep of 50, 100 or 200 ms after every message, on a 16 KiB receive buffer: they
//! fall behind the hub's channel and catch up by backfill; the hub must not drop them, since they
//! read all along), 29 that leave every 2 to 6 s and resume each host with `subscribe { since }`
//! (no gap allowed), and 1 on a share link that is revoked (close 4403 within 5 s) and made again
//! every 15 to 40 s. Every 5 to 15 s a peer up for 15 s at least is killed; it comes back on its
//! port after 0.5 to 12 s (one time in seven 25 to 45 s) with a new `instance`, and must be `up`
//! in `/api/health` within the bound its downtime gives the hub's backoff
//! (`soak_peers::reconnect_bound`). Kills go on to the end; the outages in flight then finish.
//!
//! "Frames behind" is, per viewer, the largest over the hosts of the hub's newest seq (from
//! `/api/snapshot`, read just before) minus the newest seq the viewer has received: every frame
//! the viewer has yet to get wherever it waits (the hub's channel, the session's queue, the
//! sockets, the client), in frames, comparable with the channel's 64 and the ring's 900.
//!
//! `cargo bench -p vramio --bench soak`: 10 minutes (`VRAMIO_SOAK_SECS`, default 600; an hour:
//! `VRAMIO_SOAK_SECS=3600`; under 3 minutes too few peers are killed to judge). `VRAMIO_SOAK_SEED`
//! (default 1) replays the same chaos; `VRAMIO_SOAK_PEERS` (16) and `VRAMIO_SOAK_VIEWERS` (100)
//! size it; `VRAMIO_SOAK_SLOW_RCVBUF` sets the slow viewers' receive buffer (0: the kernel's);
//! `VRAMIO_BENCH_HUB_LOG` the hub's log filter (`warn,vramio::http::app=debug` logs why each
//! session ended). Everything runs on 127.0.0.1 (ports from the kernel) with its state in a temp
//! dir, removed at the end.

#[path = "common/sim_peers.rs"]
mod sim_peers;
#[path = "common/soak_checks.rs"]
mod soak_checks;
#[path = "common/soak_http.rs"]
mod soak_http;
#[path = "common/soak_peers.rs"]
mod soak_peers;
#[path = "common/soak_report.rs"]
mod soak_report;
#[path = "common/soak_rng.rs"]
mod soak_rng;
#[path = "common/soak_share.rs"]
mod soak_share;
#[path = "common/soak_viewers.rs"]
mod soak_viewers;

use soak_http::{Api, HealthWatch};
use soak_peers::Peers;
use soak_report::{Sample, behind_of};
use soak_rng::Rng;
use soak_viewers::{Kind, Viewer};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The slow viewers' socket receive buffer (`VRAMIO_SOAK_SLOW_RCVBUF`; 0 for the kernel's
/// autotuned default, which lets megabytes of backlog sit in the sockets instead of in the hub's
/// sessions): small, so their backlog reaches the hub's sessions, which lag and catch up by
/// backfill.
const SLOW_RCVBUF: u64 = 16 * 1024;
/// The slow viewers' sleeps after each message, in turn.
const SLOW_DELAYS_MS: [u64; 3] = [50, 100, 200];

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Config {
    secs: u64,
    seed: u64,
    peers: usize,
    viewers: usize,
    /// The slow viewers' socket receive buffer (`None`: the kernel's default, autotuned).
    slow_rcvbuf: Option<u32>,
}

fn main() {
    let cfg = Config {
        secs: env_or("VRAMIO_SOAK_SECS", 600),
        seed: env_or("VRAMIO_SOAK_SEED", 1),
        peers: env_or("VRAMIO_SOAK_PEERS", 16).max(1) as usize,
        viewers: env_or("VRAMIO_SOAK_VIEWERS", 100).max(4) as usize,
        slow_rcvbuf: match env_or("VRAMIO_SOAK_SLOW_RCVBUF", SLOW_RCVBUF) {
            0 => None,
            n => Some(u32::try_from(n).unwrap_or(u32::MAX)),
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = std::env::temp_dir().join(format!("vramio-soak-{}", std::process::id()));
    let peers = Arc::new(runtime.block_on(Peers::start(cfg.peers)));
    let (hub, url) = sim_peers::start_hub(&peers.addrs(), &dir);
    let api = Api::from_url(&url);
    let ok = runtime.block_on(soak(&cfg, peers.clone(), api, hub.0.id()));
    peers.stop();
    drop(hub);
    runtime.shutdown_timeout(Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
    if !ok {
        std::process::exit(1);
    }
}

async fn soak(cfg: &Config, peers: Arc<Peers>, api: Api, pid: u32) -> bool {
    let frame = serde_json::to_string(&sim_peers::frame_template()).map_or(0, |f| f.len());
    println!(
        "soak: vramio hub (pid {pid}) at {}, {} peers x 8 GPUs ({frame} B frames) at 1 Hz, {} \
         viewers, {} s, seed {}",
        api.authority, cfg.peers, cfg.viewers, cfg.secs, cfg.seed
    );
    let names = peers.names();
    if let Err(e) = all_up(&api, &names, Duration::from_secs(60)).await {
        println!("FAIL the hub never had every peer up: {e}");
        return false;
    }
    let t0 = Instant::now();
    peers.mark_all_up(t0);
    let stop = CancellationToken::new();
    let health_stop = CancellationToken::new();
    let health = HealthWatch::start(api.clone(), Duration::from_millis(250), health_stop.clone());
    let mut rng = Rng::new(cfg.seed);

    let (viewers, mut tasks) = start_viewers(cfg, &api, &mut rng, &stop);
    let share_viewer = Arc::new(Viewer::new(Kind::Share, viewers.len()));
    let share = tokio::spawn(soak_share::run(
        api.clone(),
        share_viewer.clone(),
        names.clone(),
        rng.fork(),
        stop.clone(),
    ));
    let end = t0 + Duration::from_secs(cfg.secs);
    let chaos = tokio::spawn(soak_peers::chaos(
        peers.clone(),
        health.clone(),
        rng.fork(),
        end,
        stop.clone(),
    ));
    let mut all_viewers = viewers;
    all_viewers.push(share_viewer);

    let ring = soak_peers::ring_frames(cfg.peers);
    soak_report::print_header();
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval_at((t0 + SAMPLE_EVERY).into(), SAMPLE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    while Instant::now() + Duration::from_millis(500) < end {
        tick.tick().await;
        let mut s = sample(t0, pid, &api, &health, &all_viewers).await;
        s.held_frames = peers.held_frames(ring);
        soak_report::print_row(&s);
        samples.push(s);
    }

    stop.cancel();
    while tokio::time::timeout(Duration::from_secs(10), tasks.join_next())
        .await
        .is_ok_and(|t| t.is_some())
    {}
    let cycles = share.await.expect("the share-link task");
    let outages = chaos.await.expect("the chaos task");
    let last = wait_all_up(&api, &names, Duration::from_secs(30)).await;
    health_stop.cancel();

    println!(
        "\n{} frames sent by {} peer starts ({} first starts, the rest restarts)",
        peers.frames_sent(),
        peers.starts(),
        names.len()
    );
    soak_report::levelling(&samples);
    let mut checks = soak_checks::viewers(&all_viewers);
    checks.extend(soak_checks::outages(&outages));
    checks.extend(soak_checks::shares(&cycles));
    checks.push(soak_checks::final_health(last.as_ref(), &names));
    soak_report::print_checks(&checks)
}

/// The fast, slow and reconnecting viewers (all but the share link's), started.
fn start_viewers(
    cfg: &Config,
    api: &Api,
    rng: &mut Rng,
    stop: &CancellationToken,
) -> (Vec<Arc<Viewer>>, tokio::task::JoinSet<()>) {
    let n = cfg.viewers - 1;
    let fast = n * 40 / 99;
    let slow = n * 30 / 99;
    let mut viewers = Vec::with_capacity(n);
    let mut tasks = tokio::task::JoinSet::new();
    for id in 0..n {
        let kind = match id {
            i if i < fast => Kind::Fast,
            i if i < fast + slow => Kind::Slow,
            _ => Kind::Reconnecting,
        };
        let v = Arc::new(Viewer::new(kind, id));
        let (api, v2, stop) = (api.clone(), v.clone(), stop.clone());
        match kind {
            Kind::Fast => tasks.spawn(soak_viewers::fast(api, v2, stop)),
            Kind::Slow => {
                let delay = Duration::from_millis(SLOW_DELAYS_MS[id % SLOW_DELAYS_MS.len()]);
                tasks.spawn(soak_viewers::slow(api, v2, delay, cfg.slow_rcvbuf, stop))
            }
            _ => tasks.spawn(soak_viewers::reconnecting(api, v2, rng.fork(), stop)),
        };
        viewers.push(v);
    }
    (viewers, tasks)
}

async fn sample(
    t0: Instant,
    pid: u32,
    api: &Api,
    health: &HealthWatch,
    viewers: &[Arc<Viewer>],
) -> Sample {
    let newest = api.newest_seqs().await.unwrap_or_default();
    let behind = [Kind::Fast, Kind::Slow, Kind::Reconnecting, Kind::Share]
        .into_iter()
        .map(|k| (k, behind_of(viewers, k, &newest)))
        .collect();
    let (rss_kib, fds, threads) =
        tokio::task::spawn_blocking(move || soak_report::proc_figures(pid))
            .await
            .expect("reading /proc");
    let h = health.latest().unwrap_or_default();
    Sample {
        t_s: t0.elapsed().as_secs_f64(),
        rss_kib,
        fds,
        threads,
        hub_viewers: h.viewers,
        hosts_up: h.hosts.values().filter(|s| *s == "up").count(),
        held_frames: 0,
        behind,
    }
}

/// Waits until `/api/health` has every host in `names` up.
async fn all_up(api: &Api, names: &[String], within: Duration) -> Result<(), String> {
    match wait_all_up(api, names, within).await {
        Some(h)
            if names
                .iter()
                .all(|n| h.hosts.get(n).map(String::as_str) == Some("up")) =>
        {
            Ok(())
        }
        Some(h) => Err(format!("{:?}", h.hosts)),
        None => Err("no answer from /api/health".into()),
    }
}

/// Polls `/api/health` until every host in `names` is up or `within` passed; the last answer.
async fn wait_all_up(api: &Api, names: &[String], within: Duration) -> Option<soak_http::Health> {
    let deadline = Instant::now() + within;
    let mut last = None;
    while Instant::now() < deadline {
        if let Ok(h) = api.health().await {
            let up = names
                .iter()
                .all(|n| h.hosts.get(n).map(String::as_str) == Some("up"));
            last = Some(h);
            if up {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    last
}
