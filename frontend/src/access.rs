//! The page's access decisions as pure functions: what the boot does for a given address (claim a
//! share link, or just ask who we are), the "expires in" wording, the Share dialog's expiry
//! choices, and why a viewer's feed ended. The fetch glue is `api.rs`; the screens are
//! `views/access.rs` and `views/share.rs`.

use shared::ErrorCode;
use shared::access::DEFAULT_SHARE_SECS;
use shared::diagnosis::words::duration_text;

/// What the boot does before the feed starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BootPlan {
    /// A share link with its secret: trade it for a view cookie (`POST /api/claim`) first.
    Claim { id: String, secret: String },
    /// A share link address that cannot work (no secret in the fragment, or a malformed path).
    InvalidLink,
    /// Anything else: ask the server who this browser is (`GET /api/session`).
    Session,
}

/// The id in a share-link path `/s/<id>`; `None` for any other path.
pub fn share_id(path: &str) -> Option<&str> {
    path.strip_prefix("/s/")
}

/// The secret in a fragment `#<secret>` (as `location.hash` gives it); `None` when empty.
pub fn fragment_secret(hash: &str) -> Option<&str> {
    Some(hash.strip_prefix('#').unwrap_or(hash)).filter(|s| !s.is_empty())
}

/// The boot's first step for the page at `path` with fragment `hash`. An id is one non-empty path
/// segment; a share path that is not (`/s/`, `/s/a/b`) is invalid, like one without a secret.
/// The server checks the id and secret themselves.
pub fn boot_plan(path: &str, hash: &str) -> BootPlan {
    let Some(id) = share_id(path) else {
        return BootPlan::Session;
    };
    match fragment_secret(hash) {
        Some(secret) if !id.is_empty() && !id.contains('/') => BootPlan::Claim {
            id: id.to_owned(),
            secret: secret.to_owned(),
        },
        _ => BootPlan::InvalidLink,
    }
}

/// `expires in 23 h` for a link ending at `expires_ms`, seen at browser time `now_ms`; `expired`
/// once that has passed (the server ends the link on its own clock; this is only the label).
pub fn expires_in(expires_ms: u64, now_ms: f64) -> String {
    let left_s = (expires_ms as f64 - now_ms) / 1000.0;
    if left_s.is_nan() || left_s < 1.0 {
        "expired".to_owned()
    } else {
        format!("expires in {}", duration_text(left_s.floor()))
    }
}

/// The Share dialog's expiry choices: seconds and words. One of them is [`DEFAULT_SHARE_SECS`].
pub const EXPIRY_CHOICES: [(u64, &str); 4] = [
    (3600, "1 hour"),
    (DEFAULT_SHARE_SECS, "24 hours"),
    (7 * 24 * 3600, "7 days"),
    (30 * 24 * 3600, "30 days"),
];

/// The expiry the dialog sends for the `<select>` value `value`: a known choice, else the default.
pub fn expiry_choice(value: &str) -> u64 {
    value
        .parse::<u64>()
        .ok()
        .filter(|v| EXPIRY_CHOICES.iter().any(|(s, _)| s == v))
        .unwrap_or(DEFAULT_SHARE_SECS)
}

/// The label the dialog sends: trimmed, and absent when blank.
pub fn label_value(raw: &str) -> Option<String> {
    Some(raw.trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
}

/// Why a share viewer's page stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareEnd {
    /// The admin revoked the link (`share_revoked` on the socket).
    Revoked,
    /// The link's time ran out (`share_expired` on the socket).
    Expired,
    /// The credentials stopped working without the server saying why (a 401 after a close).
    Ended,
}

impl ShareEnd {
    /// The `data-reason` value browser tests look for.
    pub fn as_attr(self) -> &'static str {
        match self {
            ShareEnd::Revoked => "revoked",
            ShareEnd::Expired => "expired",
            ShareEnd::Ended => "ended",
        }
    }

    pub fn sentence(self) -> &'static str {
        match self {
            ShareEnd::Revoked => "This link was revoked.",
            ShareEnd::Expired => "This link has expired.",
            ShareEnd::Ended => "This link has ended.",
        }
    }
}

/// The end a server error code announces, for the codes that end a share viewer's feed.
pub fn share_end(code: ErrorCode) -> Option<ShareEnd> {
    match code {
        ErrorCode::ShareRevoked => Some(ShareEnd::Revoked),
        ErrorCode::ShareExpired => Some(ShareEnd::Expired),
        _ => None,
    }
}

/// The sentence for an unusable share link (a bad claim, or a link without its secret).
pub const SHARE_INVALID: &str = "This link is not valid: it may have expired or been revoked.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_link_with_its_secret_is_claimed() {
        assert_eq!(
            boot_plan("/s/k3Jq9", "#s3cr3t"),
            BootPlan::Claim {
                id: "k3Jq9".into(),
                secret: "s3cr3t".into()
            }
        );
    }

    #[test]
    fn share_paths_without_a_usable_secret_or_id_are_invalid() {
        assert_eq!(boot_plan("/s/k3Jq9", ""), BootPlan::InvalidLink);
        assert_eq!(boot_plan("/s/k3Jq9", "#"), BootPlan::InvalidLink);
        assert_eq!(boot_plan("/s/", "#s3cr3t"), BootPlan::InvalidLink);
        assert_eq!(boot_plan("/s/a/b", "#s3cr3t"), BootPlan::InvalidLink);
    }

    #[test]
    fn other_paths_ask_for_the_session() {
        assert_eq!(boot_plan("/", ""), BootPlan::Session);
        // A fragment on the root page is not a secret, and near-miss paths are not share links.
        assert_eq!(boot_plan("/", "#s3cr3t"), BootPlan::Session);
        assert_eq!(boot_plan("/s", "#x"), BootPlan::Session);
        assert_eq!(boot_plan("/sx/abc", "#x"), BootPlan::Session);
        assert_eq!(boot_plan("/api/s/abc", "#x"), BootPlan::Session);
    }

    #[test]
    fn fragments_lose_their_hash() {
        assert_eq!(fragment_secret("#abc"), Some("abc"));
        assert_eq!(fragment_secret("abc"), Some("abc"));
        assert_eq!(fragment_secret("#"), None);
        assert_eq!(fragment_secret(""), None);
    }

    #[test]
    fn expiry_reads_in_one_unit() {
        let now = 1_000_000.0;
        let at = |s: f64| (now + s * 1000.0) as u64;
        // A day-long link just created reads as one.
        assert_eq!(expires_in(at(24.0 * 3600.0 - 0.2), now), "expires in 24 h");
        assert_eq!(expires_in(at(23.0 * 3600.0 + 10.0), now), "expires in 23 h");
        assert_eq!(expires_in(at(45.0), now), "expires in 45 s");
        assert_eq!(expires_in(at(12.0 * 60.0), now), "expires in 12 min");
        assert_eq!(expires_in(at(7.0 * 86_400.0), now), "expires in 7 d");
        assert_eq!(expires_in(at(0.5), now), "expired");
        assert_eq!(expires_in(0, now), "expired");
    }

    #[test]
    fn expiry_choices_hold_the_default_and_the_maximum() {
        assert!(EXPIRY_CHOICES.iter().any(|(s, _)| *s == DEFAULT_SHARE_SECS));
        assert_eq!(
            EXPIRY_CHOICES.iter().map(|c| c.0).max(),
            Some(shared::access::MAX_SHARE_SECS)
        );
        assert_eq!(expiry_choice("3600"), 3600);
        assert_eq!(expiry_choice("2592000"), 2_592_000);
        // Anything else (a tampered select) falls back to the default, not to a strange lifetime.
        assert_eq!(expiry_choice("5"), DEFAULT_SHARE_SECS);
        assert_eq!(expiry_choice(""), DEFAULT_SHARE_SECS);
    }

    #[test]
    fn blank_labels_are_absent() {
        assert_eq!(label_value("  "), None);
        assert_eq!(label_value(" for Ana "), Some("for Ana".into()));
    }

    #[test]
    fn only_share_codes_end_the_feed() {
        assert_eq!(share_end(ErrorCode::ShareRevoked), Some(ShareEnd::Revoked));
        assert_eq!(share_end(ErrorCode::ShareExpired), Some(ShareEnd::Expired));
        assert_eq!(share_end(ErrorCode::BadMessage), None);
        assert_eq!(ShareEnd::Revoked.as_attr(), "revoked");
        assert_eq!(ShareEnd::Expired.sentence(), "This link has expired.");
        assert_eq!(ShareEnd::Ended.as_attr(), "ended");
    }
}
