//! The soak's peers and their chaos: simulated peers on loopback ports that stay theirs, killed
//! and restarted at random (seeded), each start with a new `hello` instance so the hub starts the
//! host over; and, per outage, how long the hub took to have the host `up` again against the
//! longest its reconnect backoff (`vramio::peers::life`) allows.

use super::sim_peers::{SimPeer, serve};
use super::soak_http::HealthWatch;
use super::soak_rng::Rng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use vramio::peers::life::{HEALTHY_AFTER, backoff};

/// Added to the backoff bound: the failed attempts' own time, the hello, and the health poll
/// that sees the host up (every 250 ms), on a machine busy with other work.
pub const BACK_SLACK: Duration = Duration::from_secs(3);
/// A victim must have been up this long, so its link counted as healthy and the hub's backoff
/// starts again from its first step when it is killed (`HEALTHY_AFTER` plus a margin).
const UP_BEFORE_KILL: Duration = HEALTHY_AFTER.saturating_add(Duration::from_secs(5));
/// How long past its bound an outage still waits, to tell "late" from "never".
const LATE_WAIT: Duration = Duration::from_secs(60);

/// One peer's place: its port and name stay, its starts come and go.
pub struct Slot {
    pub addr: SocketAddr,
    /// The hub's name for the host: `127.0.0.1:PORT`.
    pub name: String,
    task: Mutex<Option<JoinHandle<()>>>,
    starts: AtomicU64,
    hellos: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
    /// `sent` when this start began: the hub holds only this start's frames (a new `instance`
    /// starts the host over).
    sent_at_start: AtomicU64,
    /// Since when the hub has had this start up; `None` while it is out.
    up_since: Mutex<Option<Instant>>,
}

pub struct Peers {
    pub slots: Vec<Arc<Slot>>,
}

/// One kill and what followed.
#[derive(Debug)]
pub struct Outage {
    pub peer: String,
    /// From the kill until it listened again.
    pub down: Duration,
    /// From listening again until the hub had it `up`; `None`: not within `bound` + 60 s.
    pub back: Option<Duration>,
    /// The longest `back` the hub's backoff allows ([`reconnect_bound`] + [`BACK_SLACK`]).
    pub bound: Duration,
    /// Whether a health poll saw the host anything but `up` while it was out.
    pub seen_out: bool,
    /// A restart that failed (its port taken).
    pub error: Option<String>,
}

impl Peers {
    /// `n` peers on free loopback ports, streaming.
    pub async fn start(n: usize) -> Peers {
        let mut slots = Vec::with_capacity(n);
        for _ in 0..n {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind a peer's port");
            let addr = listener.local_addr().expect("peer address");
            let slot = Arc::new(Slot {
                addr,
                name: addr.to_string(),
                task: Mutex::new(None),
                starts: AtomicU64::new(0),
                hellos: Arc::default(),
                sent: Arc::default(),
                sent_at_start: AtomicU64::new(0),
                up_since: Mutex::new(None),
            });
            slot.spawn(listener);
            slots.push(slot);
        }
        Peers { slots }
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.slots.iter().map(|s| s.addr).collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.slots.iter().map(|s| s.name.clone()).collect()
    }

    pub fn mark_all_up(&self, at: Instant) {
        for s in &self.slots {
            *s.up_since.lock().expect("slot lock") = Some(at);
        }
    }

    /// Starts of all peers together (the first ones included).
    pub fn starts(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.starts.load(Ordering::Relaxed))
            .sum()
    }

    pub fn frames_sent(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.sent.load(Ordering::Relaxed))
            .sum()
    }

    /// Frames the hub holds, as the peers count them: per host, those of its current start, at
    /// most `ring` ([`ring_frames`]).
    pub fn held_frames(&self, ring: usize) -> u64 {
        self.slots
            .iter()
            .map(|s| {
                let this_start = s
                    .sent
                    .load(Ordering::Relaxed)
                    .saturating_sub(s.sent_at_start.load(Ordering::Relaxed));
                this_start.min(ring as u64)
            })
            .sum()
    }

    /// Stops every peer.
    pub fn stop(&self) {
        for s in &self.slots {
            s.kill();
        }
    }
}

impl Slot {
    fn spawn(&self, listener: tokio::net::TcpListener) {
        let start = self.starts.fetch_add(1, Ordering::Relaxed);
        self.sent_at_start
            .store(self.sent.load(Ordering::Relaxed), Ordering::Relaxed);
        let me = SimPeer {
            name: format!("sim-{}", self.addr.port()),
            instance: format!("soak-{}-start-{start}", self.addr.port()),
            sent: self.sent.clone(),
            hellos: self.hellos.clone(),
        };
        *self.task.lock().expect("slot lock") = Some(tokio::spawn(serve(listener, me)));
    }

    /// Ends this start: its listener and its connection close at once.
    pub fn kill(&self) {
        if let Some(t) = self.task.lock().expect("slot lock").take() {
            t.abort();
        }
        *self.up_since.lock().expect("slot lock") = None;
    }

    /// A new start on the same port (retried for 10 s should the port be busy).
    pub async fn restart(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(l) => {
                    self.spawn(l);
                    return Ok(());
                }
                Err(e) if Instant::now() > deadline => {
                    return Err(format!("cannot listen on {} again: {e}", self.addr));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    fn up_for(&self, now: Instant) -> Option<Duration> {
        self.up_since
            .lock()
            .expect("slot lock")
            .map(|t| now.saturating_duration_since(t))
    }
}

/// How many frames the hub keeps per peer when it has `peers` peers at a 1 s interval (as
/// `vramio hub` sizes it: one fleet budget shared, within the per-host floor and 15 minutes).
pub fn ring_frames(peers: usize) -> usize {
    let fifteen_minutes =
        vramio::host_feed::HostFeedConfig::for_interval(Duration::from_secs(1)).history_frames;
    (vramio::cli::serve::FLEET_HISTORY_FRAMES / peers.max(1))
        .clamp(vramio::cli::serve::MIN_PEER_HISTORY_FRAMES, fifteen_minutes)
}

/// The longest the hub may take to try a peer again once it listens, after it was down for
/// `down` following a healthy link. The hub's waits after the link ends are `backoff(1, j)`,
/// `backoff(2, j)`, ... (jitter `j` in 0..1, 1 s doubling to 60 s, +-20%); the attempt that finds
/// the peer back is the first after `down`, at most one longest wait after an attempt that could
/// have fallen before `down`.
pub fn reconnect_bound(down: Duration) -> Duration {
    let (mut earliest, mut latest, mut worst) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    // Attempt 0 is the link's end, at the kill.
    for failures in 1..=64u32 {
        if earliest >= down {
            break;
        }
        let longest = backoff(failures, 1.0);
        worst = worst.max((latest + longest).saturating_sub(down).min(longest));
        earliest += backoff(failures, 0.0);
        latest += longest;
    }
    worst
}

/// Kills a random peer every 5 to 15 s until `kills_until` (one up for [`UP_BEFORE_KILL`] at
/// least), keeps it down 0.5 to 12 s (one time in seven 25 to 45 s, so the backoff climbs), then
/// starts it again; returns every outage once each is over (after `stop`, no new kill).
pub async fn chaos(
    peers: Arc<Peers>,
    health: HealthWatch,
    mut rng: Rng,
    kills_until: Instant,
    stop: CancellationToken,
) -> Vec<Outage> {
    let mut outages = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(rng.secs(5.0, 15.0)) => {}
        }
        let now = Instant::now();
        if now >= kills_until {
            break;
        }
        let ready: Vec<&Arc<Slot>> = peers
            .slots
            .iter()
            .filter(|s| s.up_for(now).is_some_and(|d| d >= UP_BEFORE_KILL))
            .collect();
        if ready.is_empty() {
            continue;
        }
        let victim = ready[rng.below(ready.len())].clone();
        let down = if rng.below(7) == 0 {
            rng.secs(25.0, 45.0)
        } else {
            rng.secs(0.5, 12.0)
        };
        outages.spawn(outage(victim, down, health.clone()));
    }
    let mut done = Vec::new();
    while let Some(o) = outages.join_next().await {
        done.push(o.expect("an outage task"));
    }
    done
}

async fn outage(slot: Arc<Slot>, down: Duration, health: HealthWatch) -> Outage {
    slot.kill();
    let killed = Instant::now();
    let mut seen_out = false;
    while killed.elapsed() < down {
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen_out |= health
            .since(killed)
            .is_some_and(|h| h.hosts.get(&slot.name).is_some_and(|s| s != "up"));
    }
    let hellos = slot.hellos.load(Ordering::Relaxed);
    let restarted = slot.restart().await;
    let listening = Instant::now();
    let down = listening - killed;
    let bound = reconnect_bound(down) + BACK_SLACK;
    let mut o = Outage {
        peer: slot.name.clone(),
        down,
        back: None,
        bound,
        seen_out,
        error: restarted.err(),
    };
    if o.error.is_some() {
        return o;
    }
    let mut greeted: Option<Instant> = None;
    while listening.elapsed() < bound + LATE_WAIT {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if greeted.is_none() && slot.hellos.load(Ordering::Relaxed) > hellos {
            greeted = Some(Instant::now());
        }
        let up = greeted
            .and_then(|g| health.since(g))
            .is_some_and(|h| h.hosts.get(&slot.name).map(String::as_str) == Some("up"));
        if up {
            let now = Instant::now();
            o.back = Some(now - listening);
            *slot.up_since.lock().expect("slot lock") = Some(now);
            break;
        }
    }
    o
}
