//! Read-only share links (docs/security.md#1-the-model-in-short): records `{id, label,
//! show_users, created, expires, host, live_only}` HMAC-SHA256-signed with a key of the state
//! directory (`share-key`) and written atomically to `shares.json`, so links survive restarts and
//! an edited record is caught.
//!
//! A link is `BASE/s/<id>#<secret>`, where the secret is the HMAC of the id: nothing secret is
//! stored, the admin list can still copy a link, and rotating the key ([`Shares::rotate`]) ends every
//! link at once. A store that cannot be read or verified is never rewritten: sharing stays off, with
//! the reason, until a person fixes or removes the file.

mod store;

use super::state_dir::{StateDir, StateDirError};
use super::token::hex;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use shared::access::{CreateShare, ShareInfo, validate_create};
use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};
use store::{Key, Record, STORE_VERSION, StoreFile, load};
use subtle::ConstantTimeEq;
use tokio::sync::watch;

pub const STORE_FILE: &str = "shares.json";
pub const KEY_FILE: &str = "share-key";
/// Random bytes in an id: 128 bits, 22 characters of base64url.
const ID_BYTES: usize = 16;
pub const ID_CHARS: usize = 22;
/// Characters of a secret (32 bytes of HMAC in base64url).
pub const SECRET_CHARS: usize = 43;
/// Most links alive at once.
pub const MAX_SHARES: usize = 1000;

/// What a share link lets its viewer see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub id: String,
    pub label: Option<String>,
    pub show_users: bool,
    pub expires_ms: u64,
    /// The one host the link shows (every host when `None`).
    pub host: Option<String>,
    /// Live data only: the stored history is refused.
    pub live_only: bool,
}

/// Where a link stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    Active(Grant),
    Expired,
    /// Revoked, or never existed.
    Gone,
}

#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    #[error("sharing is off: {0}")]
    Off(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{MAX_SHARES} share links are active; revoke some first")]
    TooMany,
    #[error("cannot save the share links: {0}")]
    Write(#[from] StateDirError),
    #[error("no randomness from the OS: {0}")]
    Random(String),
    #[error("the share store's worker thread failed: {0}")]
    Worker(String),
}

/// Whether `id` has the shape of an id this server makes (22 base64url characters). Checked
/// before any lookup, so hostile ids (huge, `../`, `:id`) never reach the store.
pub fn well_formed_id(id: &str) -> bool {
    id.len() == ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether a `share-key` and a `shares.json` holding these bytes (`None`: no such file) would
/// open: the number of verified links, or why sharing would be off. [`Shares::open`]'s checks
/// without a directory, for the fuzz target.
pub fn check_files(key: Option<&[u8]>, store: Option<&[u8]>) -> Result<usize, String> {
    let (key_path, store_path) = (
        std::path::Path::new(KEY_FILE),
        std::path::Path::new(STORE_FILE),
    );
    store::check(key, store, key_path, store_path).map(|(_, records)| records.len())
}

enum Inner {
    Off {
        reason: String,
    },
    On {
        key: Key,
        records: BTreeMap<String, Record>,
    },
}

impl Inner {
    /// The key and records, or why the store is off.
    fn on(&self) -> Result<(&Key, &BTreeMap<String, Record>), ShareError> {
        match self {
            Inner::On { key, records } => Ok((key, records)),
            Inner::Off { reason } => Err(ShareError::Off(reason.clone())),
        }
    }

    fn on_mut(&mut self) -> Result<(&mut Key, &mut BTreeMap<String, Record>), ShareError> {
        match self {
            Inner::On { key, records } => Ok((key, records)),
            Inner::Off { reason } => Err(ShareError::Off(reason.clone())),
        }
    }
}

/// The share links of one server; cheap to clone.
#[derive(Clone)]
pub struct Shares {
    dir: Option<StateDir>,
    inner: Arc<RwLock<Inner>>,
    /// Bumped on every revocation, so live viewer sessions look again.
    changes: Arc<watch::Sender<u64>>,
}

impl Shares {
    /// Opens the store in `dir`. Never fails: a damaged store turns sharing off, with
    /// [`Shares::off_reason`] naming the file and the problem.
    pub fn open(dir: StateDir) -> Shares {
        let inner = match load(&dir) {
            Ok((key, records)) => Inner::On { key, records },
            Err(reason) => Inner::Off { reason },
        };
        Shares {
            dir: Some(dir),
            inner: Arc::new(RwLock::new(inner)),
            changes: Arc::new(watch::channel(0).0),
        }
    }

    /// Sharing switched off for `reason` (auth off, or no state directory).
    pub fn off(reason: impl Into<String>) -> Shares {
        Shares {
            dir: None,
            inner: Arc::new(RwLock::new(Inner::Off {
                reason: reason.into(),
            })),
            changes: Arc::new(watch::channel(0).0),
        }
    }

    /// Why sharing is off, if it is.
    pub fn off_reason(&self) -> Option<String> {
        match &*self.read() {
            Inner::Off { reason } => Some(reason.clone()),
            Inner::On { .. } => None,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notified whenever a link is revoked (or all are).
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Creates a link; `base` is the URL it starts with (no trailing slash).
    pub fn create(
        &self,
        req: &CreateShare,
        now_ms: u64,
        base: &str,
    ) -> Result<ShareInfo, ShareError> {
        let secs = validate_create(req).map_err(ShareError::Invalid)?;
        let mut raw = [0u8; ID_BYTES];
        getrandom::fill(&mut raw).map_err(|e| ShareError::Random(e.to_string()))?;
        let id = URL_SAFE_NO_PAD.encode(raw);
        let mut guard = self.write();
        let (key, records) = guard.on_mut()?;
        let mut next: BTreeMap<String, Record> = self
            .on_disk(key)?
            .into_iter()
            .filter(|(_, r)| r.expires_ms > now_ms)
            .collect();
        if next.len() >= MAX_SHARES {
            return Err(ShareError::TooMany);
        }
        let mut record = Record {
            id: id.clone(),
            label: req.label.clone().filter(|l| !l.trim().is_empty()),
            show_users: req.show_users,
            created_ms: now_ms,
            expires_ms: now_ms.saturating_add(secs.saturating_mul(1000)),
            host: req.host.clone(),
            live_only: req.live_only,
            sig: String::new(),
        };
        record.sig = key.sign(&record);
        next.insert(id.clone(), record.clone());
        self.save(&next)?;
        *records = next;
        Ok(info(key, &record, base))
    }

    /// Active links, soonest to expire first.
    pub fn list(&self, now_ms: u64, base: &str) -> Result<Vec<ShareInfo>, ShareError> {
        let guard = self.read();
        let (key, records) = guard.on()?;
        let mut out: Vec<ShareInfo> = records
            .values()
            .filter(|r| r.expires_ms > now_ms)
            .map(|r| info(key, r, base))
            .collect();
        out.sort_by_key(|s| (s.expires_ms, s.id.clone()));
        Ok(out)
    }

    /// Revokes `id`; `false` when no such link is active.
    pub fn revoke(&self, id: &str, now_ms: u64) -> Result<bool, ShareError> {
        if !well_formed_id(id) {
            return Ok(false);
        }
        let mut guard = self.write();
        let (key, records) = guard.on_mut()?;
        let current = self.on_disk(key)?;
        if current.get(id).is_none_or(|r| r.expires_ms <= now_ms) {
            *records = current;
            return Ok(false);
        }
        let next: BTreeMap<String, Record> = current
            .into_iter()
            .filter(|(k, r)| k.as_str() != id && r.expires_ms > now_ms)
            .collect();
        self.save(&next)?;
        *records = next;
        drop(guard);
        self.changes.send_modify(|g| *g += 1);
        Ok(true)
    }

    /// A new key and an empty store: every link ends. Returns how many were active.
    pub fn rotate(&self, now_ms: u64) -> Result<usize, ShareError> {
        let mut guard = self.write();
        let (key, records) = guard.on_mut()?;
        let active = records.values().filter(|r| r.expires_ms > now_ms).count();
        let new_key = Key::generate()?;
        let dir = self.dir()?;
        // The empty store first: a crash between the two writes leaves no link alive.
        self.save(&BTreeMap::new())?;
        dir.write_atomic(KEY_FILE, hex(&new_key.0).as_bytes())?;
        *key = new_key;
        records.clear();
        drop(guard);
        self.changes.send_modify(|g| *g += 1);
        Ok(active)
    }

    /// Checks a link's secret (from a claim or a view cookie) in constant time.
    pub fn check(&self, id: &str, secret: &str, now_ms: u64) -> Standing {
        if !well_formed_id(id) || secret.len() != SECRET_CHARS {
            return Standing::Gone;
        }
        let guard = self.read();
        let Inner::On { key, records } = &*guard else {
            return Standing::Gone;
        };
        let Some(record) = records.get(id) else {
            return Standing::Gone;
        };
        if !bool::from(key.secret(id).as_bytes().ct_eq(secret.as_bytes())) {
            return Standing::Gone;
        }
        standing(record, now_ms)
    }

    /// Where the link `id` stands (no secret: for sessions already let in, and for `/s/<id>`).
    pub fn standing(&self, id: &str, now_ms: u64) -> Standing {
        if !well_formed_id(id) {
            return Standing::Gone;
        }
        match &*self.read() {
            Inner::On { records, .. } => records
                .get(id)
                .map_or(Standing::Gone, |r| standing(r, now_ms)),
            Inner::Off { .. } => Standing::Gone,
        }
    }

    fn dir(&self) -> Result<&StateDir, ShareError> {
        self.dir
            .as_ref()
            .ok_or_else(|| ShareError::Off("no state directory".into()))
    }

    /// The records as the store on disk holds them now: every change reads, modifies and writes
    /// the file (under the state directory's server lock, which the serving process holds), so
    /// it never writes back a memory that the file has moved past. A store that no longer
    /// verifies, or is signed with another key, is refused and never overwritten.
    fn on_disk(&self, key: &Key) -> Result<BTreeMap<String, Record>, ShareError> {
        match load(self.dir()?) {
            Ok((disk_key, records)) if bool::from(disk_key.0.ct_eq(&key.0)) => Ok(records),
            Ok(_) => Err(ShareError::Off(format!(
                "{} was replaced since this server started; restart it to use the new one \
                 (the file is kept as it is)",
                self.dir()?.file(KEY_FILE).display()
            ))),
            Err(reason) => Err(ShareError::Off(reason)),
        }
    }

    fn save(&self, records: &BTreeMap<String, Record>) -> Result<(), ShareError> {
        let file = StoreFile {
            version: STORE_VERSION,
            shares: records.values().cloned().collect(),
        };
        let mut body = serde_json::to_vec_pretty(&file).unwrap_or_default();
        body.push(b'\n');
        self.dir()?.write_atomic(STORE_FILE, &body)?;
        Ok(())
    }
}

fn standing(r: &Record, now_ms: u64) -> Standing {
    if r.expires_ms <= now_ms {
        return Standing::Expired;
    }
    Standing::Active(Grant {
        id: r.id.clone(),
        label: r.label.clone(),
        show_users: r.show_users,
        expires_ms: r.expires_ms,
        host: r.host.clone(),
        live_only: r.live_only,
    })
}

fn info(key: &Key, r: &Record, base: &str) -> ShareInfo {
    ShareInfo {
        id: r.id.clone(),
        label: r.label.clone(),
        show_users: r.show_users,
        created_ms: r.created_ms,
        expires_ms: r.expires_ms,
        host: r.host.clone(),
        live_only: r.live_only,
        url: format!("{base}/s/{}#{}", r.id, key.secret(&r.id)),
    }
}

#[cfg(test)]
mod tests;
