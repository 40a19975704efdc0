//! The share store on disk: each record HMAC-signed with the state directory's `share-key`, the
//! key itself, and the load that refuses a store it cannot verify (the reason becomes why sharing
//! is off).

use super::{KEY_FILE, STORE_FILE, ShareError, well_formed_id};
use crate::access::state_dir::StateDir;
use crate::access::token::hex;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::collections::BTreeMap;
use std::path::Path;
use subtle::ConstantTimeEq;

pub(super) const STORE_VERSION: u32 = 1;

type HmacSha256 = Hmac<Sha256>;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Record {
    pub(super) id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) label: Option<String>,
    pub(super) show_users: bool,
    pub(super) created_ms: u64,
    pub(super) expires_ms: u64,
    /// On a hub: the one host the link shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) host: Option<String>,
    /// Live data only: none of the stored history.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) live_only: bool,
    /// Hex HMAC of the fields above.
    pub(super) sig: String,
}

/// The signed part of a record, in a fixed field order.
#[derive(Serialize)]
struct Signed<'a> {
    v: u32,
    id: &'a str,
    label: &'a Option<String>,
    show_users: bool,
    created_ms: u64,
    expires_ms: u64,
    /// Absent for links of every host, so records made before it existed still verify.
    #[serde(skip_serializing_if = "Option::is_none")]
    host: &'a Option<String>,
    /// Absent unless set, for the same reason; signed, so an edit that drops it is caught.
    #[serde(skip_serializing_if = "is_false")]
    live_only: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StoreFile {
    pub(super) version: u32,
    pub(super) shares: Vec<Record>,
}

/// The HMAC key of `share-key`: signs records and derives each link's secret.
pub(super) struct Key(pub(super) [u8; 32]);

impl Key {
    pub(super) fn generate() -> Result<Key, ShareError> {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).map_err(|e| ShareError::Random(e.to_string()))?;
        Ok(Key(k))
    }

    pub(super) fn parse(bytes: &[u8]) -> Option<Key> {
        let text = std::str::from_utf8(bytes).ok()?.trim();
        if text.len() != 64 {
            return None;
        }
        let mut k = [0u8; 32];
        for (i, out) in k.iter_mut().enumerate() {
            *out = u8::from_str_radix(text.get(i * 2..i * 2 + 2)?, 16).ok()?;
        }
        Some(Key(k))
    }

    pub(super) fn mac(&self, domain: &[u8], data: &[u8]) -> [u8; 32] {
        // HMAC takes keys of any length, so this never fails.
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(domain);
        mac.update(data);
        mac.finalize().into_bytes().into()
    }

    pub(super) fn secret(&self, id: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(b"vramio share secret\0", id.as_bytes()))
    }

    pub(super) fn sign(&self, r: &Record) -> String {
        let signed = Signed {
            v: STORE_VERSION,
            id: &r.id,
            label: &r.label,
            show_users: r.show_users,
            created_ms: r.created_ms,
            expires_ms: r.expires_ms,
            host: &r.host,
            live_only: r.live_only,
        };
        let body = serde_json::to_vec(&signed).unwrap_or_default();
        hex(&self.mac(b"vramio share record\0", &body))
    }
}

/// Reads and verifies the key and the store; `Err` is the reason sharing is off.
pub(super) fn load(dir: &StateDir) -> Result<(Key, BTreeMap<String, Record>), String> {
    let store_path = dir.file(STORE_FILE);
    let key_path = dir.file(KEY_FILE);
    let off = |problem: String| {
        format!("{problem}; sharing is off until it is fixed (the file is kept as it is)")
    };
    let key_bytes = dir.read(KEY_FILE).map_err(|e| off(e.to_string()))?;
    let store = dir.read(STORE_FILE).map_err(|e| off(e.to_string()))?;
    let (key, map) = check(
        key_bytes.as_deref(),
        store.as_deref(),
        &key_path,
        &store_path,
    )
    .map_err(off)?;
    let key = match key {
        Some(k) => k,
        None => {
            let k = Key::generate().map_err(|e| off(e.to_string()))?;
            let made = dir
                .create_exclusive(KEY_FILE, hex(&k.0).as_bytes())
                .map_err(|e| off(e.to_string()))?;
            if made {
                k
            } else {
                // Another process made the key first: use that one.
                let bytes = dir
                    .read(KEY_FILE)
                    .map_err(|e| off(e.to_string()))?
                    .unwrap_or_default();
                Key::parse(&bytes)
                    .ok_or_else(|| off(format!("{} is not 64 hex digits", key_path.display())))?
            }
        }
    };
    Ok((key, map))
}

/// The key and the verified records from the bytes of `share-key` and `shares.json` (`None`:
/// the file is missing); the key is `None` only when there is none and no record needs one.
/// `Err` says what is wrong, naming the files by `key_path` and `store_path`.
pub(super) fn check(
    key_bytes: Option<&[u8]>,
    store: Option<&[u8]>,
    key_path: &Path,
    store_path: &Path,
) -> Result<(Option<Key>, BTreeMap<String, Record>), String> {
    let key = match key_bytes {
        Some(b) => Some(
            Key::parse(b).ok_or_else(|| format!("{} is not 64 hex digits", key_path.display()))?,
        ),
        None => None,
    };
    let records: Vec<Record> = match store {
        None => Vec::new(),
        Some(bytes) => {
            let file: StoreFile = serde_json::from_slice(bytes).map_err(|e| {
                format!("{} is not a vramio share store: {e}", store_path.display())
            })?;
            if file.version != STORE_VERSION {
                return Err(format!(
                    "{} is version {}; this vramio reads version {STORE_VERSION}",
                    store_path.display(),
                    file.version
                ));
            }
            file.shares
        }
    };
    let Some(key) = key else {
        if records.is_empty() {
            return Ok((None, BTreeMap::new()));
        }
        return Err(format!(
            "{} holds {} share links but {} is missing, so none can be checked",
            store_path.display(),
            records.len(),
            key_path.display()
        ));
    };
    let mut map = BTreeMap::new();
    for r in records {
        if !well_formed_id(&r.id) || !bool::from(key.sign(&r).as_bytes().ct_eq(r.sig.as_bytes())) {
            return Err(format!(
                "the record {:?} in {} carries no valid signature (edited by hand, or signed \
                 with another {KEY_FILE})",
                r.id.chars().take(40).collect::<String>(),
                store_path.display()
            ));
        }
        map.insert(r.id.clone(), r);
    }
    Ok((Some(key), map))
}
