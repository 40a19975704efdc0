//! The state every route shares ([`AppState`]): the hosts served, auth, the viewer slots, the
//! shutdown signal and the replay being served. A leaf of `http/`: routes import it, it imports
//! no route.

use super::auth::Auth;
use super::slots::ViewerSlots;
use crate::host_feed::HostFeed;
use crate::host_feed::fleet::Fleet;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How `/metrics` is served.
#[derive(Clone, Copy, Debug, Default)]
pub struct MetricsPolicy {
    pub options: crate::metrics::Options,
    /// `--metrics-public`: no credential needed (the server checked at start-up that it listens
    /// on loopback or a Unix socket only).
    pub public: bool,
}

/// Shared state of every route.
#[derive(Clone)]
pub struct AppState {
    /// Every host served (one for `serve`; the peers too for a hub).
    pub fleet: Fleet,
    /// Fires on shutdown: sessions send a Close frame and end.
    pub shutdown: CancellationToken,
    /// Tracks WebSocket sessions so shutdown can wait for their Close frames.
    pub sessions: TaskTracker,
    pub started: Instant,
    /// Credentials, origins and share links.
    pub auth: Auth,
    /// The WebSocket viewer slots: bounded in all, per share link, with a reserve for the admin.
    pub viewers: ViewerSlots,
    /// Who may scrape `/metrics` and how it labels hosts.
    pub metrics: MetricsPolicy,
    /// The replay being served (`vramio replay`), for `/api/replay`.
    pub replay: Option<Arc<crate::ingest::player::Replay>>,
    /// The history of the first host, which this server samples (`serve`), for `/api/history`.
    pub history: Option<crate::history::History>,
    /// The thresholds the diagnosis runs with, for a stored moment's diagnosis (a rewind).
    pub thresholds: Arc<shared::diagnosis::Thresholds>,
    /// The fleet's first peer: 1 where the first host is this server's own (`serve`,
    /// `replay`), 0 on a hub.
    pub first_peer: usize,
    /// Peers' history answers, kept a while (docs/hub.md#history).
    pub history_cache: HistoryCache,
}

/// How long a peer's history answer is reused.
pub const HISTORY_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(30);
/// What the answers kept may weigh in all ([`weight`]): a peer answers up to 12 MiB of JSON
/// (about 400,000 points, 13 MB in memory), so a cap of 16 answers alone let them hold about
/// 200 MB.
const HISTORY_CACHE_BYTES: usize = 64 << 20;
/// Answers kept at most, however small (each `put` walks them all under the lock).
const HISTORY_CACHE_ENTRIES: usize = 256;

type CacheKey = (String, u64, u64, usize);
type CacheMap = std::collections::HashMap<CacheKey, (Instant, usize, Arc<shared::stored::Answer>)>;

/// Peers' history answers by host and range (rounded to 10 s) and points, at most
/// [`HISTORY_CACHE_BYTES`] of them, the oldest going first.
#[derive(Clone, Default)]
pub struct HistoryCache(Arc<std::sync::Mutex<CacheMap>>);

/// About what `a` holds in memory: 32 bytes a point (of the vectors' capacity: JSON decoding
/// leaves room), the strings, and an estimate for the segments' findings and the events (the
/// points are nearly all of a chart's answer).
pub fn weight(a: &shared::stored::Answer) -> usize {
    let series: usize = a
        .series
        .iter()
        .map(|s| 96 + s.item.capacity() + s.metric.capacity() + s.points.capacity() * 32)
        .sum();
    let segments: usize = a
        .segments
        .iter()
        .map(|s| 64 + s.findings.len() * 1024)
        .sum();
    256 + series + segments + a.events.len() * 256 + a.tiers.len() * 24
}

impl HistoryCache {
    pub fn get(&self, key: &CacheKey) -> Option<Arc<shared::stored::Answer>> {
        let map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(key)
            .filter(|(at, _, _)| at.elapsed() < HISTORY_CACHE_TTL)
            .map(|(_, _, a)| a.clone())
    }

    /// Keeps `answer` unless it alone weighs more than the cache holds; the oldest answers go
    /// to make room. The key is weighed too (its `only=` is as long as a client made it).
    pub fn put(&self, key: CacheKey, answer: Arc<shared::stored::Answer>) {
        let w = weight(&answer) + key.0.len();
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.retain(|_, (at, _, _)| at.elapsed() < HISTORY_CACHE_TTL);
        map.remove(&key);
        if w > HISTORY_CACHE_BYTES {
            return;
        }
        let mut total: usize = map.values().map(|(_, w, _)| w).sum();
        while total + w > HISTORY_CACHE_BYTES || map.len() >= HISTORY_CACHE_ENTRIES {
            let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (at, _, _))| *at)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            total -= map.remove(&oldest).map_or(0, |(_, w, _)| w);
        }
        map.insert(key, (Instant::now(), w, answer));
    }

    /// What the answers kept weigh in all.
    pub fn bytes(&self) -> usize {
        let map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.values().map(|(_, w, _)| w).sum()
    }
}

impl AppState {
    /// A server of the one host `feed` that authenticates as `auth` says ([`Auth::disabled`] for
    /// none).
    pub fn new(feed: HostFeed, auth: Auth) -> Self {
        AppState::for_fleet(Fleet::single(feed), auth)
    }

    /// A server for every host of `fleet` (`vramio hub` refuses to start without one; a fleet
    /// of none answers `/api/snapshot` and `/api/health` with 404, and `/ws` with a `hello` of
    /// no host).
    pub fn for_fleet(fleet: Fleet, auth: Auth) -> Self {
        let hub_mode = fleet.len() > 1;
        AppState {
            fleet,
            shutdown: CancellationToken::new(),
            sessions: TaskTracker::new(),
            started: Instant::now(),
            auth,
            metrics: MetricsPolicy {
                options: crate::metrics::Options {
                    hub_mode,
                    show_users: false,
                },
                public: false,
            },
            viewers: ViewerSlots::default(),
            replay: None,
            history: None,
            thresholds: Arc::default(),
            first_peer: 1,
            history_cache: HistoryCache::default(),
        }
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use shared::stored::{Answer, SeriesPoints};

    fn answer(points: usize) -> Arc<Answer> {
        Arc::new(Answer {
            from_ms: 0,
            to_ms: 1,
            step_ms: 1,
            tiers: Vec::new(),
            series: vec![SeriesPoints {
                scope: shared::series::Scope::Gpu,
                item: "0".into(),
                metric: "util_pct".into(),
                unit: shared::series::Unit::Percent,
                points: vec![(0, 1.0, 1.0, 1.0); points],
            }],
            segments: Vec::new(),
            events: Vec::new(),
            notices: Vec::new(),
        })
    }

    fn key(i: u64) -> CacheKey {
        ("peer".into(), i, i + 1, 100)
    }

    /// Answers of a million points each: the cache holds two (64 MiB), the oldest going
    /// first; one bigger than the whole cache is not kept; the weight is the points'; small
    /// answers are held to a count.
    #[test]
    fn the_cache_is_held_by_bytes_and_drops_the_oldest() {
        let c = HistoryCache::default();
        let big = answer(1_000_000);
        assert!((32_000_000..33_000_000).contains(&weight(&big)));
        for i in 0..4 {
            c.put(key(i), big.clone());
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(c.bytes() <= HISTORY_CACHE_BYTES, "{}", c.bytes());
        assert!(c.get(&key(0)).is_none() && c.get(&key(1)).is_none());
        assert!(c.get(&key(2)).is_some() && c.get(&key(3)).is_some());
        c.put(key(9), answer(3_000_000));
        assert!(c.get(&key(9)).is_none(), "over the whole cache: not kept");
        assert!(c.get(&key(3)).is_some(), "and nothing evicted for it");
        // Small answers: many fit, up to the count.
        let small = answer(1000);
        for i in 10..40 {
            c.put(key(i), small.clone());
        }
        assert!((10..40).all(|i| c.get(&key(i)).is_some()));
        assert!(c.bytes() <= HISTORY_CACHE_BYTES);
        for i in 100..(100 + HISTORY_CACHE_ENTRIES as u64 + 10) {
            c.put(key(i), small.clone());
        }
        assert!(c.get(&key(100)).is_none(), "the oldest went");
        assert!(
            c.get(&key(100 + HISTORY_CACHE_ENTRIES as u64 + 9))
                .is_some()
        );
    }
}
