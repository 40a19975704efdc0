//! A share-link viewer's lease: what the link lets it see, and the moment the link ends
//! (revoked, or past its expiry), which ends the session.

use super::Ended;
use crate::access::shares::{Grant, Shares, Standing};
use crate::http::auth::now_ms;
use std::time::Duration;

/// What a share-link viewer was let in with, and where to look whether it still holds.
#[derive(Clone)]
pub struct ViewLease {
    pub grant: Grant,
    pub shares: Shares,
}

impl ViewLease {
    /// Resolves when the link ends: `ShareExpired` at its expiry, `ShareRevoked` once revoked.
    pub async fn ended(&self) -> Ended {
        let mut changes = self.shares.watch();
        let left = Duration::from_millis(self.grant.expires_ms.saturating_sub(now_ms()));
        let expiry = tokio::time::sleep(left);
        tokio::pin!(expiry);
        loop {
            tokio::select! {
                () = &mut expiry => return Ended::ShareExpired,
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ended::ShareRevoked;
                    }
                    match self.shares.standing(&self.grant.id, now_ms()) {
                        Standing::Active(_) => {}
                        Standing::Expired => return Ended::ShareExpired,
                        Standing::Gone => return Ended::ShareRevoked,
                    }
                }
            }
        }
    }
}

/// A lease's end, or never without one.
pub async fn lease_ended(lease: Option<&ViewLease>) -> Ended {
    match lease {
        Some(l) => l.ended().await,
        None => std::future::pending().await,
    }
}
