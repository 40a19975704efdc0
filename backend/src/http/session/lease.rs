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
    /// Also at once if the link ended before this was first polled (between the request's check
    /// and the session's start): the watch sees only later changes, so its standing is read first.
    pub async fn ended(&self) -> Ended {
        let mut changes = self.shares.watch();
        if let Some(ended) = self.gone() {
            return ended;
        }
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
                    if let Some(ended) = self.gone() {
                        return ended;
                    }
                }
            }
        }
    }

    /// How the link ended, if it has.
    fn gone(&self) -> Option<Ended> {
        match self.shares.standing(&self.grant.id, now_ms()) {
            Standing::Active(_) => None,
            Standing::Expired => Some(Ended::ShareExpired),
            Standing::Gone => Some(Ended::ShareRevoked),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::state_dir::StateDir;
    use shared::access::CreateShare;

    #[tokio::test]
    async fn a_link_revoked_before_the_session_watched_ends_it_at_once() {
        let root = std::env::temp_dir().join(format!("vramio-lease-{}", std::process::id()));
        let shares = Shares::open(StateDir::open(Some(&root)).expect("state dir"));
        let info = shares
            .create(&CreateShare::default(), now_ms(), "http://x")
            .expect("a link");
        let (_, rest) = info.url.rsplit_once("/s/").expect("/s/");
        let (id, secret) = rest.split_once('#').expect("#");
        let Standing::Active(grant) = shares.check(id, secret, now_ms()) else {
            panic!("the new link holds");
        };
        let lease = ViewLease {
            grant,
            shares: shares.clone(),
        };
        // Revoked after the request was let in, before the session first looks.
        assert!(shares.revoke(id, now_ms()).expect("revoke"));
        let ended = tokio::time::timeout(Duration::from_secs(5), lease.ended())
            .await
            .expect("the session ends, not at the link's expiry");
        assert_eq!(ended, Ended::ShareRevoked);
        let _ = std::fs::remove_dir_all(&root);
    }
}
