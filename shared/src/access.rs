//! The access API's wire types (docs/security.md#1-the-model-in-short): who a request is (`/api/session`), share-link
//! records as the admin API lists them, and the request that creates one. Both the server and the
//! page use these, so the Share dialog and `vramio share` speak the same JSON.

use serde::{Deserialize, Serialize};

/// Longest a share link may live: 30 days.
pub const MAX_SHARE_SECS: u64 = 30 * 24 * 3600;
/// What a share link lives when no expiry is given: 24 hours.
pub const DEFAULT_SHARE_SECS: u64 = 24 * 3600;
/// Longest label a share link may carry, in bytes.
pub const MAX_LABEL_BYTES: usize = 200;

/// What a request may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The token holder: everything, including the Share dialog and the admin API.
    Admin,
    /// A share-link viewer: the live page, read-only.
    Viewer,
}

/// `GET /api/session`: who this browser is. Answered 401 (with an [`ApiError`]) without
/// credentials.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub role: Role,
    /// Whether user names are shown (always for admins; as the link says for viewers).
    pub show_users: bool,
    /// For a viewer: when the link ends (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<u64>,
    /// For a viewer: the link's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// For a viewer of a hub's link made for one host: that host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// For a viewer whose link shows live data only: no stored history (no ranges, rewinds,
    /// exports or whole runs).
    #[serde(default, skip_serializing_if = "is_false")]
    pub live_only: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `POST /api/claim`: the page trades a link's secret (from the URL fragment) for a view cookie.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    pub secret: String,
}

/// `POST /api/shares`: create a share link.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateShare {
    /// Lifetime in seconds, 1 to [`MAX_SHARE_SECS`]; [`DEFAULT_SHARE_SECS`] when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Whether the viewer sees user names.
    #[serde(default)]
    pub show_users: bool,
    /// On a hub: the one host the link shows (every host when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Whether the viewer sees live data only: none of the stored history.
    #[serde(default, skip_serializing_if = "is_false")]
    pub live_only: bool,
}

/// One active share link as the admin API shows it (`GET /api/shares`, and the answer to a
/// create). `url` holds the secret: only admins ever see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareInfo {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub show_users: bool,
    pub created_ms: u64,
    pub expires_ms: u64,
    /// The one host the link shows, on a hub (every host when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Whether the link shows live data only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub live_only: bool,
    /// `BASE/s/<id>#<secret>`.
    pub url: String,
}

/// `GET /api/shares`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareList {
    pub shares: Vec<ShareInfo>,
}

/// The body of every API error: a stable id and a sentence for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    pub error: String,
    pub message: String,
}

/// The sentence the page and the 401 answers show to a browser without credentials.
pub const UNAUTHORIZED_HINT: &str =
    "open the link vramio printed, or run `vramio url` on the server";

/// Checks a create request: the lifetime within 1 s ..= 30 days, a label of printable text within
/// [`MAX_LABEL_BYTES`]. Returns the lifetime in seconds.
pub fn validate_create(req: &CreateShare) -> Result<u64, String> {
    let secs = req.expires_s.unwrap_or(DEFAULT_SHARE_SECS);
    if secs == 0 {
        return Err("a share link must live at least one second".into());
    }
    if secs > MAX_SHARE_SECS {
        return Err(format!(
            "a share link lives at most 30 days ({MAX_SHARE_SECS} s); {secs} s asked"
        ));
    }
    if let Some(label) = &req.label {
        if label.len() > MAX_LABEL_BYTES {
            return Err(format!(
                "the label is {} bytes; at most {MAX_LABEL_BYTES}",
                label.len()
            ));
        }
        if label.chars().any(char::is_control) {
            return Err("the label holds control characters".into());
        }
    }
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_defaults_to_a_day_and_caps_at_thirty() {
        assert_eq!(
            validate_create(&CreateShare::default()),
            Ok(DEFAULT_SHARE_SECS)
        );
        let long = CreateShare {
            expires_s: Some(MAX_SHARE_SECS + 1),
            ..CreateShare::default()
        };
        assert!(validate_create(&long).is_err_and(|e| e.contains("30 days")));
        let zero = CreateShare {
            expires_s: Some(0),
            ..CreateShare::default()
        };
        assert!(validate_create(&zero).is_err());
        let bad_label = CreateShare {
            label: Some("a\u{1b}[31m".into()),
            ..CreateShare::default()
        };
        assert!(validate_create(&bad_label).is_err_and(|e| e.contains("control")));
    }

    #[test]
    fn session_info_is_compact_json() {
        let admin = SessionInfo {
            role: Role::Admin,
            show_users: true,
            expires_ms: None,
            label: None,
            host: None,
            live_only: false,
        };
        assert_eq!(
            serde_json::to_string(&admin).unwrap_or_default(),
            r#"{"role":"admin","show_users":true}"#
        );
        let live = SessionInfo {
            role: Role::Viewer,
            show_users: false,
            live_only: true,
            ..admin
        };
        assert_eq!(
            serde_json::to_string(&live).unwrap_or_default(),
            r#"{"role":"viewer","show_users":false,"live_only":true}"#
        );
    }
}
