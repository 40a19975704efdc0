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
/// Answers kept at most.
const HISTORY_CACHE_ENTRIES: usize = 16;

type CacheKey = (String, u64, u64, usize);
type CacheMap = std::collections::HashMap<CacheKey, (Instant, Arc<shared::stored::Answer>)>;

/// Peers' history answers by host and range (rounded to 10 s) and points.
#[derive(Clone, Default)]
pub struct HistoryCache(Arc<std::sync::Mutex<CacheMap>>);

impl HistoryCache {
    pub fn get(&self, key: &CacheKey) -> Option<Arc<shared::stored::Answer>> {
        let map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(key)
            .filter(|(at, _)| at.elapsed() < HISTORY_CACHE_TTL)
            .map(|(_, a)| a.clone())
    }

    pub fn put(&self, key: CacheKey, answer: Arc<shared::stored::Answer>) {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.retain(|_, (at, _)| at.elapsed() < HISTORY_CACHE_TTL);
        if map.len() >= HISTORY_CACHE_ENTRIES {
            map.clear();
        }
        map.insert(key, (Instant::now(), answer));
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
