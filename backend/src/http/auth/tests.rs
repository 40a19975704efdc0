//! `Auth::decide` over every kind of credential and origin.

use super::*;
use crate::access::state_dir::StateDir;
use axum::http::HeaderValue;
use shared::access::CreateShare;

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn auth_with_shares() -> (Auth, std::path::PathBuf) {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("random");
    let root = std::env::temp_dir().join(format!("vramio-auth-{}", u64::from_le_bytes(b)));
    let dir = StateDir::open(Some(&root)).expect("dir");
    let auth = Auth::new(
        Some(Token::from_trusted(TOKEN)),
        Shares::open(dir),
        false,
        HostPolicy::loopback_only(),
        None,
    );
    (auth, root)
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).expect("header"));
    }
    h
}

fn get(auth: &Auth, query: Option<&str>, pairs: &[(&'static str, &str)]) -> Decision {
    auth.decide(&Method::GET, query, &headers(pairs))
}

#[test]
fn bearer_query_and_cookie_credentials() {
    let (auth, root) = auth_with_shares();
    let host = ("host", "localhost:7575");
    assert_eq!(get(&auth, None, &[host]), Decision::Pass(None));
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(
        get(&auth, None, &[host, ("authorization", &bearer)]),
        Decision::Pass(Some(Access::Admin))
    );
    assert_eq!(
        get(&auth, None, &[host, ("authorization", "Bearer nope")]),
        Decision::BadCredential("bad bearer token")
    );
    assert_eq!(
        get(
            &auth,
            None,
            &[host, ("authorization", "Basic Zm9vOmJhcg==")]
        ),
        Decision::BadCredential("bad bearer token")
    );
    assert_eq!(
        get(&auth, Some(&format!("a=1&token={TOKEN}")), &[host]),
        Decision::SetAdminCookie {
            port: "7575".into()
        }
    );
    assert_eq!(
        get(&auth, Some("token=wrong"), &[host]),
        Decision::BadCredential("bad ?token=")
    );
    let cookie = format!("other=1; vramio-7575={TOKEN}");
    assert_eq!(
        get(&auth, None, &[host, ("cookie", &cookie)]),
        Decision::Pass(Some(Access::Admin))
    );
    // Another port's cookie is another server's.
    let cookie = format!("vramio-8888={TOKEN}");
    assert_eq!(
        get(&auth, None, &[host, ("cookie", &cookie)]),
        Decision::Pass(None)
    );
    // A stale cookie is no credential, and the page still loads.
    assert_eq!(
        get(&auth, None, &[host, ("cookie", "vramio-7575=old")]),
        Decision::Pass(None)
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn cookies_need_our_origin_where_browsers_send_one() {
    let (auth, root) = auth_with_shares();
    let cookie = format!("vramio-7575={TOKEN}");
    let base = [
        ("host", "127.0.0.1:7575"),
        ("cookie", cookie.as_str()),
        ("upgrade", "websocket"),
    ];
    assert_eq!(
        get(&auth, None, &base),
        Decision::Pass(None),
        "no Origin: no cookie"
    );
    let mut same = base.to_vec();
    same.push(("origin", "http://127.0.0.1:7575"));
    assert_eq!(get(&auth, None, &same), Decision::Pass(Some(Access::Admin)));
    let mut other_port = base.to_vec();
    other_port.push(("origin", "http://127.0.0.1:8888"));
    assert!(matches!(
        get(&auth, None, &other_port),
        Decision::Refuse(StatusCode::FORBIDDEN, _)
    ));
    let post = auth.decide(&Method::POST, None, &headers(&base[..2]));
    assert_eq!(
        post,
        Decision::Pass(None),
        "a POST without Origin gets no cookie access"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn hosts_and_missing_host() {
    let (auth, root) = auth_with_shares();
    assert!(matches!(
        get(&auth, None, &[]),
        Decision::Refuse(StatusCode::BAD_REQUEST, _)
    ));
    assert!(matches!(
        get(&auth, None, &[("host", "evil.example:7575")]),
        Decision::Refuse(StatusCode::FORBIDDEN, _)
    ));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn view_cookies_grant_a_viewer_until_revoked() {
    let (auth, root) = auth_with_shares();
    let info = auth
        .shares()
        .create(&CreateShare::default(), now_ms(), "http://localhost:7575")
        .expect("creates");
    let (id, secret) = info
        .url
        .rsplit_once("/s/")
        .and_then(|(_, r)| r.split_once('#'))
        .expect("id#secret");
    let cookie = format!("vramio-7575-view={id}.{secret}");
    let h = [("host", "localhost:7575"), ("cookie", cookie.as_str())];
    let Decision::Pass(Some(Access::Viewer(grant))) = get(&auth, None, &h) else {
        panic!("a viewer");
    };
    assert!(!grant.show_users);
    auth.shares().revoke(id, now_ms()).expect("revokes");
    assert_eq!(get(&auth, None, &h), Decision::Pass(None));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_redirect_keeps_other_parameters() {
    assert_eq!(query_without_token("token=x"), "");
    assert_eq!(query_without_token("a=1&token=x&b=2"), "a=1&b=2");
    assert_eq!(query_token("a=1&token=abc"), Some("abc"));
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn refused_credentials_warn_once_per_interval_and_never_print_them() {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let log = FailureLog::default();
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..1000 {
            log.record("bad bearer token", "/api/snapshot");
        }
    });
    let text =
        String::from_utf8_lossy(&out.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
    assert_eq!(text.matches("refused requests").count(), 1, "{text}");
    assert!(text.contains("bad bearer token"));
    assert!(!text.contains(TOKEN));
}
