//! The history a `serve` keeps of its own host (docs/history.md): every series its charts draw,
//! the verdict segments and events, in an embedded redb file under the state directory, in
//! three tiers (1 s, 1 min, 1 h).
//!
//! Data flows one way: the sampler thread's [`Sink`] -> a bounded channel -> the writer thread
//! ([`writer`]) -> the [`Store`]. Readers (`GET /api/history`) read the store from any thread;
//! redb gives them a consistent snapshot while the writer commits.

pub mod block;
pub mod chunk;
mod events;
pub mod frames;
pub mod read;
mod seal;
mod sink;
mod store;
pub mod tables;
mod view;
mod writer;

pub use read::{Answer, Piece, Segment, SeriesPoints, Wanted};
pub use sink::Sink;
pub use store::{Batch, FILE, SetAside, Store, StoreError};
pub use tables::{item_key, push_sample};
pub use view::{Viewer, parse_only, without_findings, without_jobs};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;

/// `--history-max`'s default.
pub const DEFAULT_MAX_BYTES: u64 = 256_000_000;
/// Messages the channel holds before the sink drops samples: a message carries a 10 s window
/// of them, so 32 hold five minutes at 1 Hz with room for shapes and verdicts.
const QUEUE: usize = 32;

/// What the writer has done, for `/metrics` and the page.
#[derive(Debug, Default)]
pub struct Counters {
    /// Batches committed.
    pub commits: AtomicU64,
    /// Commits refused by a full disk.
    pub full: AtomicU64,
    /// Commits that failed otherwise.
    pub failed: AtomicU64,
    /// Samples or rows dropped (the queue was full, or writing was paused too long).
    pub dropped: AtomicU64,
}

/// The state the writer and the readers share.
pub struct Shared {
    dir: PathBuf,
    max_bytes: u64,
    store: RwLock<Option<Store>>,
    paused: Mutex<Option<String>>,
    set_aside: Option<SetAside>,
    counters: Arc<Counters>,
    /// When the file was last compacted, or weighed against its data and found fine, and the
    /// data's time then (seconds).
    compacted: Mutex<Option<(std::time::Instant, u64)>>,
}

impl Shared {
    fn with_store<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let guard = self.store.read().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some(store) => f(store),
            None => Err(StoreError::Db(redb::Error::DatabaseClosed)),
        }
    }

    fn set_paused(&self, why: Option<String>) {
        *self.paused.lock().unwrap_or_else(PoisonError::into_inner) = why;
    }

    /// Closes the file and opens it again (after an I/O error redb wants that); when it cannot
    /// be opened now, the next try does it.
    fn reopen(&self) {
        let mut guard = self.store.write().unwrap_or_else(PoisonError::into_inner);
        *guard = None;
        // Never set aside here: an I/O error now says nothing about the file.
        match Store::open_file(&self.dir.join(FILE)) {
            Ok(store) => *guard = Some(store),
            Err(e) => tracing::debug!(error = %e, "history: cannot open the file yet"),
        }
    }

    /// After a seal: over `--history-max`, drops the oldest data (finest tier first) and
    /// compacts until the file is under it; otherwise compacts, at most once a day, a file that
    /// has grown past twice its data (redb grows its file by regions and reuses freed pages,
    /// but returns them only when compacted).
    fn hold_cap(&self, now_s: u64) {
        let Ok(file) = self.with_store(|s| Ok(s.disk_bytes())) else {
            return;
        };
        if file > self.max_bytes {
            let mut target = self.max_bytes / 10 * 7;
            for _ in 0..4 {
                match self.with_store(|s| s.trim(target)) {
                    Ok(dropped) => tracing::info!(
                        dropped,
                        max_bytes = self.max_bytes,
                        "history: the oldest data dropped to stay under --history-max"
                    ),
                    Err(e) => return tracing::warn!(error = %e, "history: cannot drop old data"),
                }
                self.compact(now_s);
                let file = self.with_store(|s| Ok(s.disk_bytes())).unwrap_or(0);
                if file <= self.max_bytes {
                    return;
                }
                target = target / 10 * 7;
            }
            return;
        }
        // A day of wall time, or of data time (an import goes faster than the clock).
        let due = self
            .compacted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none_or(|(at, data_s)| {
                at.elapsed() >= COMPACT_AT_MOST_EVERY
                    || now_s.saturating_sub(data_s) >= COMPACT_AT_MOST_EVERY.as_secs()
            });
        if !due {
            return;
        }
        // Weighing the data walks the whole file: once a day, not at every hourly seal.
        *self
            .compacted
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((std::time::Instant::now(), now_s));
        let Ok(live) = self.with_store(|s| s.live_bytes()) else {
            return;
        };
        if file > 2 * live + COMPACT_SLACK {
            self.compact(now_s);
        }
    }

    fn compact(&self, now_s: u64) {
        *self
            .compacted
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((std::time::Instant::now(), now_s));
        let mut guard = self.store.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(store) = guard.as_mut()
            && let Err(e) = store.compact()
        {
            tracing::warn!(error = %e, "history: compaction put off; tried again later");
        }
    }
}

/// A file is compacted at most this often (unless over `--history-max`)...
const COMPACT_AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// ... and only once it holds this much more than twice its data.
const COMPACT_SLACK: u64 = 32 << 20;

/// What the page and `/metrics` say about the history.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Status {
    pub dir: PathBuf,
    /// The file's size.
    pub bytes: u64,
    pub max_bytes: u64,
    /// Why writing is paused, while it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<String>,
    /// A file that could not be opened at start and was moved aside: where to, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_aside: Option<String>,
    pub commits: u64,
    pub full: u64,
    pub failed: u64,
    pub dropped: u64,
}

pub use shared::stored::Moment;

/// An export's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// One column per series, one row per point time.
    Csv,
    /// Frames, one JSON per line, as `vramio record` writes them.
    Ndjson,
}

/// An open history: its readers' handle (clone it freely) and, until [`History::close`], its
/// writer thread.
#[derive(Clone)]
pub struct History {
    shared: Arc<Shared>,
    writer: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl History {
    /// Opens (or makes) the history in `dir` and starts its writer; the [`Sink`] feeds it. A file
    /// that cannot be opened is set aside (named in [`Status::set_aside`]) and a fresh one made.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<(History, Sink), StoreError> {
        let (store, set_aside) = Store::open(dir)?;
        if let Some(a) = &set_aside {
            tracing::error!(moved_to = %a.path.display(), reason = %a.reason, "history: the file could not be opened and was set aside; a fresh one is kept from now on");
        }
        let known = store.items()?;
        let counters = Arc::new(Counters::default());
        let shared = Arc::new(Shared {
            dir: dir.to_owned(),
            max_bytes,
            store: RwLock::new(Some(store)),
            paused: Mutex::new(None),
            set_aside,
            counters: counters.clone(),
            compacted: Mutex::new(None),
        });
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let for_writer = shared.clone();
        let handle = std::thread::Builder::new()
            .name("vramio-history".into())
            .spawn(move || writer::run(for_writer, rx))
            .map_err(|e| StoreError::Db(e.into()))?;
        let history = History {
            shared,
            writer: Arc::new(Mutex::new(Some(handle))),
        };
        Ok((history, Sink::new(tx, known, counters)))
    }

    /// Every series in `[from_ms, to_ms)` at about `points` points, with the segments and events.
    pub fn read(&self, from_ms: u64, to_ms: u64, points: usize) -> Result<Answer, StoreError> {
        self.shared.with_store(|s| s.read(from_ms, to_ms, points))
    }

    /// [`History::read`] of the series `wanted` takes (`only=`, `job=`), the segments'
    /// findings only with `findings`.
    pub fn read_only(
        &self,
        from_ms: u64,
        to_ms: u64,
        points: usize,
        wanted: Wanted<'_>,
        findings: bool,
    ) -> Result<Answer, StoreError> {
        self.shared
            .with_store(|s| s.read_only(from_ms, to_ms, points, wanted, findings))
    }

    /// The page at a stored moment: the frame there and the diagnosis of the window up to it,
    /// at the finest resolution kept (1 s for two days, then minutes). `None` before anything
    /// was stored.
    pub fn moment(
        &self,
        t_ms: u64,
        thresholds: &shared::diagnosis::Thresholds,
    ) -> Result<Option<Moment>, StoreError> {
        self.shared.with_store(|s| {
            let window = crate::host_feed::diagnoser::DEFAULT_WINDOW.as_millis() as u64;
            let (mut frames, mut step) =
                frames::frames(s, t_ms.saturating_sub(window), t_ms.saturating_add(1), 3600)?;
            if step > 1000 {
                // Minutes: the last five points, so a trend still shows.
                (frames, step) =
                    frames::frames(s, t_ms.saturating_sub(5 * step), t_ms.saturating_add(1), 5)?;
            }
            let Some(frame) = frames.last().cloned() else {
                return Ok(None);
            };
            let diagnosis = shared::diagnosis::diagnose(&frames, thresholds, None);
            Ok(Some(Moment {
                t_ms: frame.t_ms,
                step_ms: step,
                frame,
                diagnosis,
            }))
        })
    }

    /// `[from_ms, to_ms)` as CSV or NDJSON frames ([`frames::csv`], [`frames::ndjson`]).
    pub fn export(&self, from_ms: u64, to_ms: u64, format: Format) -> Result<String, StoreError> {
        self.shared.with_store(|s| match format {
            Format::Csv => frames::csv(s, from_ms, to_ms),
            Format::Ndjson => frames::ndjson(s, from_ms, to_ms),
        })
    }

    /// The users the stored shapes of `[from_ms, to_ms)` name.
    pub fn users(&self, from_ms: u64, to_ms: u64) -> Vec<String> {
        self.shared
            .with_store(|s| s.users(from_ms, to_ms))
            .unwrap_or_default()
    }

    pub fn status(&self) -> Status {
        let c = &self.shared.counters;
        Status {
            dir: self.shared.dir.clone(),
            bytes: self.shared.with_store(|s| Ok(s.disk_bytes())).unwrap_or(0),
            max_bytes: self.shared.max_bytes,
            paused: self
                .shared
                .paused
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            set_aside: self
                .shared
                .set_aside
                .as_ref()
                .map(|a| format!("{} ({})", a.path.display(), a.reason)),
            commits: c.commits.load(Ordering::Relaxed),
            full: c.full.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
        }
    }

    /// Waits for the writer to commit what it holds and end; its [`Sink`] must be gone (the
    /// sampler stopped) for it to end.
    pub fn close(&self) {
        let handle = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
