//! Every route under every kind of credential, through `app()` with `oneshot` (issue 7): none, a
//! bad token, `?token=`, a bearer token, the admin cookie, a share cookie, an expired share and a
//! revoked share. Also: every bad link gets the same 404 bytes.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use shared::Frame;
use shared::access::CreateShare;
use std::time::Duration;
use tower::ServiceExt;
use vramio::access::shares::Shares;
use vramio::access::state_dir::StateDir;
use vramio::access::token::Token;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::auth::{Auth, now_ms};
use vramio::http::same_origin::HostPolicy;
use vramio::http::{AppState, app};

const TOKEN: &str = "5f1d3c0a9b8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817060504";
const HOST: &str = "127.0.0.1:7575";
const ORIGIN: &str = "http://127.0.0.1:7575";

struct Fixture {
    state: AppState,
    /// `id.secret` of an active, an expired and a revoked link.
    active: (String, String),
    expired: (String, String),
    revoked: (String, String),
    /// An active link made `--live-only`.
    live: (String, String),
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn split(url: &str) -> (String, String) {
    let (_, rest) = url.rsplit_once("/s/").expect("/s/");
    let (id, secret) = rest.split_once('#').expect("#");
    (id.to_owned(), secret.to_owned())
}

fn fixture() -> Fixture {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = std::env::temp_dir().join(format!("vramio-auth-routes-{}-{n}", std::process::id()));
    let dir = StateDir::open(Some(&root)).expect("state dir");
    let shares = Shares::open(dir);
    let now = now_ms();
    let base = "http://127.0.0.1:7575";
    let mk_with = |at: u64, secs: u64, live_only: bool| {
        split(
            &shares
                .create(
                    &CreateShare {
                        expires_s: Some(secs),
                        label: Some("t".into()),
                        show_users: false,
                        host: None,
                        live_only,
                    },
                    at,
                    base,
                )
                .expect("create")
                .url,
        )
    };
    let mk = |at: u64, secs: u64| mk_with(at, secs, false);
    let live = mk_with(now, 3600, true);
    let active = mk(now, 3600);
    let expired = mk(now - 10_000, 1);
    let revoked = mk(now, 3600);
    assert!(shares.revoke(&revoked.0, now).expect("revoke"));
    let hub = HostFeed::new(
        "testhost",
        Duration::from_secs(1),
        HostFeedConfig::for_interval(Duration::from_secs(1)),
    );
    hub.publish(Frame::empty("testhost", 0, 10, 1000))
        .expect("publish");
    let auth = Auth::new(
        Some(Token::from_trusted(TOKEN)),
        shares,
        false,
        HostPolicy::loopback_only(),
        None,
    );
    Fixture {
        state: AppState::new(hub, auth),
        active,
        expired,
        revoked,
        live,
        _dir: TempDir(root),
    }
}

#[derive(Clone, Copy, Debug)]
enum Cred {
    None,
    BadToken,
    QueryToken,
    Bearer,
    AdminCookie,
    ShareCookie,
    ExpiredShare,
    RevokedShare,
    /// Not in [`CREDS`]: the table's routes answer it as [`Cred::ShareCookie`] but for the
    /// history.
    LiveOnlyShare,
}

const CREDS: [Cred; 8] = [
    Cred::None,
    Cred::BadToken,
    Cred::QueryToken,
    Cred::Bearer,
    Cred::AdminCookie,
    Cred::ShareCookie,
    Cred::ExpiredShare,
    Cred::RevokedShare,
];

async fn send(
    f: &Fixture,
    method: Method,
    path: &str,
    cred: Cred,
    body: Option<&str>,
) -> (StatusCode, Vec<u8>, axum::http::HeaderMap) {
    let path = match cred {
        Cred::QueryToken => {
            let sep = if path.contains('?') { '&' } else { '?' };
            format!("{path}{sep}token={TOKEN}")
        }
        _ => path.to_owned(),
    };
    let mut req = Request::builder()
        .method(method.clone())
        .uri(&path)
        .header(header::HOST, HOST);
    // A browser sends Origin with every request but a plain GET; scripts send none.
    let browser = matches!(
        cred,
        Cred::AdminCookie
            | Cred::ShareCookie
            | Cred::ExpiredShare
            | Cred::RevokedShare
            | Cred::LiveOnlyShare
    );
    if browser && (method != Method::GET || path.starts_with("/ws")) {
        req = req.header(header::ORIGIN, ORIGIN);
    }
    if path.starts_with("/ws") {
        req = req
            .header(header::UPGRADE, "websocket")
            .header(header::CONNECTION, "upgrade")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
    }
    let cookie = |(id, secret): &(String, String)| format!("vramio-7575-view={id}.{secret}");
    req = match cred {
        Cred::BadToken => req.header(header::AUTHORIZATION, format!("Bearer {}", "0".repeat(64))),
        Cred::Bearer => req.header(header::AUTHORIZATION, format!("Bearer {TOKEN}")),
        Cred::AdminCookie => req.header(header::COOKIE, format!("vramio-7575={TOKEN}")),
        Cred::ShareCookie => req.header(header::COOKIE, cookie(&f.active)),
        Cred::ExpiredShare => req.header(header::COOKIE, cookie(&f.expired)),
        Cred::RevokedShare => req.header(header::COOKIE, cookie(&f.revoked)),
        Cred::LiveOnlyShare => req.header(header::COOKIE, cookie(&f.live)),
        Cred::None | Cred::QueryToken => req,
    };
    if body.is_some() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let resp = app(f.state.clone())
        .oneshot(
            req.body(Body::from(body.unwrap_or_default().to_owned()))
                .expect("request"),
        )
        .await
        .expect("infallible");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, bytes.to_vec(), headers)
}

/// What a route answers each credential, in the order of [`CREDS`].
struct Row {
    method: Method,
    path: &'static str,
    body: Option<&'static str>,
    want: [u16; 8],
}

#[tokio::test]
async fn every_route_under_every_credential() {
    let f = fixture();
    let active_link: &'static str = Box::leak(format!("/s/{}", f.active.0).into_boxed_str());
    let revoke_path: &'static str =
        Box::leak(format!("/api/shares/{}", "A".repeat(22)).into_boxed_str());
    // The WebSocket upgrade cannot complete under `oneshot` (no connection to upgrade): 426 means
    // the request got through every check to the handler.
    //              none bad  ?tok bear adm  share exp  rev
    let rows = [
        Row {
            method: Method::GET,
            path: "/",
            body: None,
            want: [200, 401, 303, 200, 200, 200, 200, 200],
        },
        Row {
            method: Method::GET,
            path: active_link,
            body: None,
            want: [200, 401, 303, 200, 200, 200, 200, 200],
        },
        Row {
            method: Method::GET,
            path: "/api/session",
            body: None,
            want: [401, 401, 303, 200, 200, 200, 401, 401],
        },
        Row {
            method: Method::GET,
            path: "/api/snapshot",
            body: None,
            want: [401, 401, 303, 200, 200, 200, 401, 401],
        },
        Row {
            method: Method::GET,
            path: "/api/health",
            body: None,
            want: [401, 401, 303, 200, 200, 200, 401, 401],
        },
        Row {
            method: Method::GET,
            path: "/api/schema",
            body: None,
            want: [401, 401, 303, 200, 200, 200, 401, 401],
        },
        // Live, not a replay.
        Row {
            method: Method::GET,
            path: "/api/replay",
            body: None,
            want: [401, 401, 303, 404, 404, 404, 401, 401],
        },
        // Only the admin steers a replay.
        Row {
            method: Method::POST,
            path: "/api/replay",
            body: Some(r#"{"playing":false}"#),
            want: [401, 401, 401, 404, 404, 403, 401, 401],
        },
        Row {
            method: Method::GET,
            path: "/api/nothing-here",
            body: None,
            want: [401, 401, 303, 404, 404, 404, 401, 401],
        },
        Row {
            method: Method::GET,
            path: "/ws",
            body: None,
            want: [401, 401, 303, 426, 426, 426, 401, 401],
        },
        Row {
            method: Method::GET,
            path: "/api/shares",
            body: None,
            want: [401, 401, 303, 200, 200, 403, 401, 401],
        },
        // A share link shows the page, not the metrics.
        Row {
            method: Method::GET,
            path: "/metrics",
            body: None,
            want: [401, 401, 303, 200, 200, 403, 401, 401],
        },
        Row {
            method: Method::POST,
            path: "/api/shares",
            body: Some(r#"{"label":"x"}"#),
            want: [401, 401, 401, 201, 201, 403, 401, 401],
        },
        Row {
            method: Method::DELETE,
            path: revoke_path,
            body: None,
            want: [401, 401, 401, 404, 404, 403, 401, 401],
        },
    ];
    let mut wrong = Vec::new();
    for row in &rows {
        for (cred, want) in CREDS.iter().zip(row.want) {
            let (status, body, headers) =
                send(&f, row.method.clone(), row.path, *cred, row.body).await;
            if status.as_u16() != want {
                wrong.push(format!(
                    "{} {} with {cred:?}: {status}, want {want}: {}",
                    row.method,
                    row.path,
                    String::from_utf8_lossy(&body)
                        .chars()
                        .take(120)
                        .collect::<String>()
                ));
            }
            if status == StatusCode::SEE_OTHER {
                let location = headers[header::LOCATION].to_str().unwrap_or_default();
                assert!(!location.contains("token"), "{location}");
                let cookie = headers[header::SET_COOKIE].to_str().unwrap_or_default();
                assert!(
                    cookie.starts_with(&format!("vramio-7575={TOKEN};"))
                        && cookie.contains("HttpOnly")
                        && cookie.contains("SameSite=Strict")
                        && !cookie.contains("Secure"),
                    "{cookie}"
                );
            }
            if status == StatusCode::UNAUTHORIZED {
                assert!(headers.contains_key(header::WWW_AUTHENTICATE));
                let text = String::from_utf8_lossy(&body);
                assert!(text.contains("vramio url"), "{text}");
                assert!(!text.contains(TOKEN), "never the token");
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn a_viewer_sees_no_user_names_and_the_session_says_viewer() {
    let f = fixture();
    let (_, body, _) = send(&f, Method::GET, "/api/session", Cred::ShareCookie, None).await;
    let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(v["role"], "viewer");
    assert_eq!(v["show_users"], false);
    assert!(v["expires_ms"].as_u64().is_some());
    let (_, body, _) = send(&f, Method::GET, "/api/session", Cred::Bearer, None).await;
    let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(v["role"], "admin");
}

/// A link made `--live-only` sees the live page and is told so, but every history route refuses
/// it by name (403), where a plain link gets as far as "no history here" (404: this server keeps
/// none).
#[tokio::test]
async fn a_live_only_link_gets_the_live_page_and_no_history() {
    let f = fixture();
    let (status, body, _) = send(&f, Method::GET, "/api/session", Cred::LiveOnlyShare, None).await;
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(v["role"], "viewer");
    assert_eq!(v["live_only"], true);
    let (_, body, _) = send(&f, Method::GET, "/api/session", Cred::ShareCookie, None).await;
    let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert!(v.get("live_only").is_none(), "absent for a plain link: {v}");
    let (status, _, _) = send(&f, Method::GET, "/api/snapshot", Cred::LiveOnlyShare, None).await;
    assert_eq!(status, StatusCode::OK, "the live snapshot");
    for path in [
        "/api/history?from_ms=1&to_ms=2",
        "/api/history/moment?t_ms=5",
        "/api/history/export?from_ms=1&to_ms=2&format=csv",
    ] {
        let (status, body, _) = send(&f, Method::GET, path, Cred::LiveOnlyShare, None).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {text}");
        assert!(text.contains("live data only"), "{path}: {text}");
    }
    let plain_read = "/api/history?from_ms=1&to_ms=2";
    let (status, _, _) = send(&f, Method::GET, plain_read, Cred::ShareCookie, None).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a plain link reaches the history"
    );

    // With a store here: the plain link reads it, and is refused only the export (it hides user
    // names, which frames hold); the live-only link still gets nothing.
    let mut f = f;
    let store = f._dir.0.join("history");
    let (history, sink) =
        vramio::history::History::open(&store, vramio::history::DEFAULT_MAX_BYTES).expect("opens");
    f.state.history = Some(history.clone());
    let (status, body, _) = send(&f, Method::GET, plain_read, Cred::ShareCookie, None).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    // `job=` is a job's key: empty, too long or with control characters it is refused by name.
    for bad in ["", "%07slurm:1", &"x".repeat(513)] {
        let path = format!("/api/history?from_ms=1&to_ms=2&job={bad}");
        let (status, body, _) = send(&f, Method::GET, &path, Cred::ShareCookie, None).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {text}");
        assert!(text.contains("job must be"), "{text}");
    }
    let with_job = format!("{plain_read}&job=slurm%3A12");
    let (status, _, _) = send(&f, Method::GET, &with_job, Cred::ShareCookie, None).await;
    assert_eq!(status, StatusCode::OK, "a job's key");
    let export = "/api/history/export?from_ms=1&to_ms=2&format=csv";
    let (status, body, _) = send(&f, Method::GET, export, Cred::ShareCookie, None).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(text.contains("hides user names"), "{text}");
    let (status, _, _) = send(&f, Method::GET, export, Cred::Bearer, None).await;
    assert_eq!(status, StatusCode::OK, "the admin exports");
    for path in ["/api/history?from_ms=1&to_ms=2", export] {
        let (status, body, _) = send(&f, Method::GET, path, Cred::LiveOnlyShare, None).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {text}");
        assert!(text.contains("live data only"), "{path}: {text}");
    }
    drop(sink);
    history.close();
}

#[tokio::test]
async fn every_bad_link_gets_the_same_404() {
    let f = fixture();
    let huge = format!("/s/{}", "A".repeat(5000));
    let paths = [
        format!("/s/{}", f.expired.0),
        format!("/s/{}", f.revoked.0),
        format!("/s/{}", "B".repeat(22)),
        "/s/..%2F..%2Fetc%2Fpasswd".to_owned(),
        "/s/:id".to_owned(),
        "/s/%ff%fe".to_owned(),
        "/s/a/b/c".to_owned(),
        "/s/".to_owned(),
        huge,
    ];
    let (status, reference, _) = send(&f, Method::GET, &paths[0], Cred::None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for p in &paths {
        let (status, body, _) = send(&f, Method::GET, p, Cred::None, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{p}");
        assert_eq!(body, reference, "{p}: byte-identical");
    }
    // A claim with a wrong secret, an expired or revoked link, or no JSON at all: the same bytes.
    let claims = [
        format!(r#"{{"id":"{}","secret":"{}"}}"#, f.active.0, "x".repeat(43)),
        format!(r#"{{"id":"{}","secret":"{}"}}"#, f.expired.0, f.expired.1),
        format!(r#"{{"id":"{}","secret":"{}"}}"#, f.revoked.0, f.revoked.1),
        "not json".to_owned(),
    ];
    for c in &claims {
        let (status, body, headers) =
            send(&f, Method::POST, "/api/claim", Cred::None, Some(c)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{c}");
        assert_eq!(body, reference, "{c}");
        assert!(!headers.contains_key(header::SET_COOKIE));
    }
    let good = format!(r#"{{"id":"{}","secret":"{}"}}"#, f.active.0, f.active.1);
    let (status, _, headers) = send(&f, Method::POST, "/api/claim", Cred::None, Some(&good)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let cookie = headers[header::SET_COOKIE].to_str().unwrap_or_default();
    assert!(
        cookie.starts_with("vramio-7575-view=") && cookie.contains("HttpOnly"),
        "{cookie}"
    );
}

#[tokio::test]
async fn cross_origin_and_foreign_hosts_are_refused() {
    let f = fixture();
    let req = |origin: &str, host: &str| {
        Request::builder()
            .method(Method::POST)
            .uri("/api/shares")
            .header(header::HOST, host)
            .header(header::ORIGIN, origin)
            .header(header::COOKIE, format!("vramio-7575={TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{}"))
            .expect("request")
    };
    for (origin, host, want) in [
        ("http://127.0.0.1:8888", HOST, 403),
        ("http://localhost:7575", HOST, 403),
        ("null", HOST, 403),
        (ORIGIN, "evil.example:7575", 403),
        (ORIGIN, HOST, 201),
    ] {
        let resp = app(f.state.clone())
            .oneshot(req(origin, host))
            .await
            .expect("infallible");
        assert_eq!(resp.status().as_u16(), want, "{origin} -> {host}");
    }
    // Bodies are bounded.
    let big = format!(r#"{{"label":"{}"}}"#, "x".repeat(100_000));
    let (status, _, _) = send(&f, Method::POST, "/api/shares", Cred::Bearer, Some(&big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn the_token_redirect_never_leaves_this_server() {
    let f = fixture();
    let (status, _, headers) = send(
        &f,
        Method::GET,
        "//evil.example/x?a=1",
        Cred::QueryToken,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/?a=1");
}
