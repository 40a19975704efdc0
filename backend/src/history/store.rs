//! [`Store`]: the history's redb file, opened (or set aside when it cannot be), written one batch
//! at a time by the writer thread and read by any thread (docs/history.md#the-store).

use super::tables::{self, FORMAT, ITEMS, META, ROWS, SEGMENTS, SHAPE_AT, SHAPES};
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, WriteTransaction};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// redb's page cache (its default is 1 GiB, which the agent's memory would grow to as the
/// history is read): reads past it come from the kernel's page cache, which the agent does not
/// hold (docs/performance.md#history).
const CACHE_BYTES: usize = 4 << 20;

/// The file's name in the history directory.
pub const FILE: &str = "history.redb";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Db(#[from] redb::Error),
    #[error("the history file {} was written by a newer vramio (format {found}, this one reads {FORMAT})", path.display())]
    Newer { path: PathBuf, found: u64 },
    #[error("the history file {} was written by an earlier build of vramio (format {found}, this one reads {FORMAT})", path.display())]
    Older { path: PathBuf, found: u64 },
    /// An answer over its limit: what to ask instead.
    #[error("the answer would be too large: {0}")]
    TooLarge(String),
}

impl StoreError {
    /// Whether the disk is full (or the quota spent): writing waits for space.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::Db(redb::Error::Io(e)) if is_full(e))
    }
}

pub fn is_full(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// What one batch commit writes.
#[derive(Debug, Default)]
pub struct Batch {
    /// New items and their base ids.
    pub items: Vec<(String, u32)>,
    /// Samples, appended to the row of their 10 s window.
    pub rows: Vec<(u64, Vec<u8>)>,
    /// Shapes that began: when (ms), their hash, and their JSON unless already stored.
    pub shapes: Vec<(u64, u64, Option<Vec<u8>>)>,
    /// Verdict segments begun or extended (start ms, JSON), replacing what was stored.
    pub segments: Vec<(u64, Vec<u8>)>,
    /// Events (ms, JSON).
    pub events: Vec<(u64, Vec<u8>)>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
            && self.rows.is_empty()
            && self.shapes.is_empty()
            && self.segments.is_empty()
            && self.events.is_empty()
    }
}

pub struct Store {
    pub(super) db: Database,
    path: PathBuf,
}

/// Why an existing file was not used, and where it went.
#[derive(Clone, Debug)]
pub struct SetAside {
    pub path: PathBuf,
    pub reason: String,
}

impl Store {
    /// Opens `dir/history.redb`, creating it (and `dir`, mode 0700) when missing. A file that
    /// cannot be opened (damaged, or from a newer vramio) is renamed `history.redb.<reason>-<unix
    /// seconds>` and a fresh one made: the reason comes back with the store.
    pub fn open(dir: &Path) -> Result<(Store, Option<SetAside>), StoreError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| StoreError::Db(e.into()))?;
        let path = dir.join(FILE);
        match Store::open_file(&path) {
            Ok(store) => Ok((store, None)),
            Err(e) if path.exists() && is_damage(&e) => {
                let (tag, reason) = match &e {
                    StoreError::Newer { .. } => ("newer", e.to_string()),
                    StoreError::Older { .. } => ("older", e.to_string()),
                    _ => (
                        "damaged",
                        format!("the history file could not be opened: {e}"),
                    ),
                };
                let aside = dir.join(format!(
                    "{FILE}.{tag}-{}",
                    crate::collect::sampler::now_ms() / 1000
                ));
                std::fs::rename(&path, &aside).map_err(|e| StoreError::Db(e.into()))?;
                let store = Store::open_file(&path)?;
                Ok((
                    store,
                    Some(SetAside {
                        path: aside,
                        reason,
                    }),
                ))
            }
            Err(e) => Err(e),
        }
    }

    /// Opens the store file at `path` as it is, for a tool that only reads it (`vramio history
    /// export`): never made (an empty file is not taken for a new store), never set aside, its
    /// format only read and its mode left. A damaged store, or one of another format, is an
    /// error that names it, and the file stays where it was (only `serve`, which writes, moves
    /// such a file aside). redb may still repair a file an unclean stop left, as a serve would
    /// at its start.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .open(path)
            .map_err(redb::Error::from)?;
        let found = {
            let r = db.begin_read().map_err(redb::Error::from)?;
            match r.open_table(META) {
                Ok(meta) => meta
                    .get("format")
                    .map_err(redb::Error::from)?
                    .map(|v| v.value()),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(redb::Error::from(e).into()),
            }
        };
        let path = path.to_owned();
        match found {
            Some(f) if f > FORMAT => Err(StoreError::Newer { path, found: f }),
            Some(f) if f < FORMAT => Err(StoreError::Older { path, found: f }),
            _ => Ok(Store { db, path }),
        }
    }

    /// Opens (or makes) the file at `path`, never setting it aside (a reopen after an I/O error).
    pub(super) fn open_file(path: &Path) -> Result<Store, StoreError> {
        use std::os::unix::fs::OpenOptionsExt;
        // Made 0600 before redb writes a byte: the history names users' jobs. One made by hand
        // or by an older build is narrowed to 0600 too.
        if path.exists() {
            use std::os::unix::fs::PermissionsExt;
            if let Ok(m) = std::fs::metadata(path)
                && m.permissions().mode() & 0o077 != 0
            {
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
            }
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| StoreError::Db(e.into()))?;
        }
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(path)
            .map_err(redb::Error::from)?;
        let store = Store {
            db,
            path: path.to_owned(),
        };
        store.check_format()?;
        Ok(store)
    }

    fn check_format(&self) -> Result<(), StoreError> {
        let w = self.db.begin_write().map_err(redb::Error::from)?;
        let found = {
            let mut meta = w.open_table(META).map_err(redb::Error::from)?;
            let found = meta
                .get("format")
                .map_err(redb::Error::from)?
                .map(|v| v.value());
            if found.is_none() {
                meta.insert("format", FORMAT).map_err(redb::Error::from)?;
            }
            found
        };
        match found {
            Some(f) if f > FORMAT => Err(StoreError::Newer {
                path: self.path.clone(),
                found: f,
            }),
            Some(f) if f < FORMAT => Err(StoreError::Older {
                path: self.path.clone(),
                found: f,
            }),
            _ => {
                w.commit().map_err(redb::Error::from)?;
                Ok(())
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every item known, with its base id.
    pub fn items(&self) -> Result<HashMap<String, u32>, StoreError> {
        let r = self.db.begin_read().map_err(redb::Error::from)?;
        let t = match r.open_table(ITEMS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(HashMap::new()),
            Err(e) => return Err(redb::Error::from(e).into()),
        };
        let mut out = HashMap::new();
        for entry in t.iter().map_err(redb::Error::from)? {
            let (k, v) = entry.map_err(redb::Error::from)?;
            out.insert(k.value().to_owned(), v.value());
        }
        Ok(out)
    }

    /// The open verdict segment's start and JSON, the newest one stored.
    pub fn last_segment(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        let r = self.db.begin_read().map_err(redb::Error::from)?;
        let t = match r.open_table(SEGMENTS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(redb::Error::from(e).into()),
        };
        let last = t.last().map_err(redb::Error::from)?;
        Ok(last.map(|(k, v)| (k.value(), v.value().to_vec())))
    }

    /// Writes `batch` in one transaction, durable when this returns.
    pub fn commit(&self, batch: &Batch) -> Result<(), StoreError> {
        let w = self.db.begin_write().map_err(redb::Error::from)?;
        write_batch(&w, batch).map_err(StoreError::Db)?;
        w.commit().map_err(redb::Error::from)?;
        Ok(())
    }

    /// The file's size on disk.
    pub fn file_bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }

    /// The bytes the file takes on disk: its blocks. redb grows a file under 4 GiB by doubling
    /// its length, and the part not written yet takes no space where the filesystem keeps holes
    /// (ext4, xfs, tmpfs), so the length would trip `--history-max` at half the data it allows.
    pub fn disk_bytes(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&self.path).map_or(0, |m| m.blocks().saturating_mul(512))
    }

    /// Each tier's blocks and their bytes (the bench, `/metrics`).
    pub fn tier_sizes(&self) -> Result<Vec<(&'static str, u64, u64)>, StoreError> {
        let r = self.db.begin_read().map_err(redb::Error::from)?;
        let mut out = Vec::new();
        for tier in super::tables::TIERS {
            let (mut blocks, mut bytes) = (0, 0);
            match r.open_table(tier.table) {
                Ok(t) => {
                    for entry in t.iter().map_err(redb::Error::from)? {
                        let (_, v) = entry.map_err(redb::Error::from)?;
                        blocks += super::chunk::unpack(v.value()).map_or(0, |b| b.len() as u64);
                        bytes += v.value().len() as u64;
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(redb::Error::from(e).into()),
            }
            out.push((tier.name, blocks, bytes));
        }
        Ok(out)
    }

    /// The bytes of every block and row the file holds.
    pub fn live_bytes(&self) -> Result<u64, StoreError> {
        let w = self.db.begin_write().map_err(redb::Error::from)?;
        let live = super::seal::stored(&w).map_err(StoreError::Db)?;
        w.abort().map_err(redb::Error::from)?;
        Ok(live)
    }

    /// Compacts the file (nothing else may use it meanwhile).
    pub fn compact(&mut self) -> Result<bool, StoreError> {
        self.db
            .compact()
            .map_err(|e| StoreError::Db(redb::Error::from(e)))
    }

    /// Rows not yet sealed (for tests and the bench).
    pub fn row_count(&self) -> Result<u64, StoreError> {
        let r = self.db.begin_read().map_err(redb::Error::from)?;
        match r.open_table(ROWS) {
            Ok(t) => Ok(t.len().map_err(redb::Error::from)?),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
            Err(e) => Err(redb::Error::from(e).into()),
        }
    }
}

/// Whether `e` says the file itself is unusable (damaged, or from a newer vramio or redb),
/// rather than that it cannot be opened now (permissions, a full disk, I/O, another process):
/// only then is it set aside.
fn is_damage(e: &StoreError) -> bool {
    match e {
        StoreError::Newer { .. } | StoreError::Older { .. } => true,
        StoreError::TooLarge(_) => false,
        StoreError::Db(e) => match e {
            redb::Error::Corrupted(_)
            | redb::Error::RepairAborted
            | redb::Error::UpgradeRequired(_) => true,
            redb::Error::Io(io) => matches!(
                io.kind(),
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
            ),
            _ => false,
        },
    }
}

fn write_batch(w: &WriteTransaction, batch: &Batch) -> Result<(), redb::Error> {
    if !batch.items.is_empty() {
        let mut items = w.open_table(ITEMS)?;
        for (key, base) in &batch.items {
            items.insert(key.as_str(), *base)?;
        }
    }
    if !batch.rows.is_empty() {
        let mut rows = w.open_table(ROWS)?;
        for (window, bytes) in &batch.rows {
            let mut row = rows
                .get(*window)?
                .map(|v| v.value().to_vec())
                .unwrap_or_default();
            row.extend_from_slice(bytes);
            rows.insert(*window, row.as_slice())?;
        }
    }
    if !batch.shapes.is_empty() {
        let mut shapes = w.open_table(SHAPES)?;
        let mut at = w.open_table(SHAPE_AT)?;
        for (t_ms, hash, json) in &batch.shapes {
            if let Some(json) = json {
                shapes.insert(*hash, json.as_slice())?;
            }
            at.insert(*t_ms, *hash)?;
        }
    }
    if !batch.segments.is_empty() {
        let mut segments = w.open_table(SEGMENTS)?;
        for (start, json) in &batch.segments {
            segments.insert(*start, json.as_slice())?;
        }
    }
    if !batch.events.is_empty() {
        let mut events = w.open_table(tables::EVENTS)?;
        for (t_ms, json) in &batch.events {
            let n = events
                .range((*t_ms, 0)..=(*t_ms, u32::MAX))?
                .next_back()
                .transpose()?
                .map_or(0, |(k, _)| k.value().1 + 1);
            events.insert((*t_ms, n), json.as_slice())?;
        }
    }
    Ok(())
}
