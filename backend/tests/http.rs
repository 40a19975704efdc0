//! HTTP routes through `app()` with `oneshot`: snapshot, health, schema, static files, errors,
//! security headers and compression.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use shared::Frame;
use std::time::Duration;
use tower::ServiceExt;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::{AppState, app};

fn state() -> AppState {
    let hub = HostFeed::new(
        "testhost",
        Duration::from_secs(1),
        HostFeedConfig::for_interval(Duration::from_secs(1)),
    );
    AppState::new(hub, vramio::http::auth::Auth::disabled())
}

async fn get(state: &AppState, path: &str, headers: &[(&str, &str)]) -> axum::response::Response {
    let mut req = Request::get(path);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req = req.header("host", "localhost:7575");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    app(state.clone())
        .oneshot(req.body(Body::empty()).expect("request"))
        .await
        .expect("infallible")
}

async fn body(resp: axum::response::Response) -> Vec<u8> {
    resp.into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec()
}

fn content_type(resp: &axum::response::Response) -> String {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn snapshot_is_503_before_the_first_frame_then_the_latest_frame() {
    let st = state();
    let resp = get(&st, "/api/snapshot", &[]).await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    let err: serde_json::Value = serde_json::from_slice(&body(resp).await).expect("json error");
    assert_eq!(err["error"], "no_frame_yet");

    st.fleet.hubs()[0]
        .publish(Frame::empty("testhost", 0, 10, 1000))
        .expect("publish");
    st.fleet.hubs()[0]
        .publish(Frame::empty("testhost", 0, 20, 1000))
        .expect("publish");
    let resp = get(&st, "/api/snapshot", &[]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(content_type(&resp), "application/json");
    let snap: serde_json::Value = serde_json::from_slice(&body(resp).await).expect("json");
    let frame: Frame = serde_json::from_value(snap["frame"].clone()).expect("a frame");
    assert_eq!(
        (frame.seq, frame.t_ms, frame.host.as_str()),
        (2, 20, "testhost")
    );
    assert!(snap.get("diagnosis").is_none(), "no diagnosis made yet");

    let d = shared::diagnosis::diagnose(&[frame], &Default::default(), None);
    st.fleet.hubs()[0]
        .publish_diagnosis(2, &d)
        .expect("publish diagnosis");
    let resp = get(&st, "/api/snapshot", &[]).await;
    let snap: serde_json::Value = serde_json::from_slice(&body(resp).await).expect("json");
    let back: shared::diagnosis::Diagnosis =
        serde_json::from_value(snap["diagnosis"].clone()).expect("the diagnosis");
    assert_eq!(back, d);
    assert_eq!(snap["frame"]["seq"], 2);
}

#[tokio::test]
async fn health_reports_down_then_up() {
    let st = state();
    let resp = get(&st, "/api/health", &[]).await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    st.fleet.hubs()[0]
        .publish(Frame::empty("testhost", 0, 10, 1000))
        .expect("publish");
    let resp = get(&st, "/api/health", &[]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let h: serde_json::Value = serde_json::from_slice(&body(resp).await).expect("json");
    assert_eq!(h["status"], "up");
    assert_eq!(h["last_seq"], 1);
    assert_eq!(h["protocol"], shared::PROTOCOL_VERSION);
}

#[tokio::test]
async fn schema_is_served_and_compressed_on_request() {
    let st = state();
    let plain = get(&st, "/api/schema", &[]).await;
    assert_eq!(plain.status(), StatusCode::OK);
    let plain_len = body(plain).await.len();
    let gz = get(&st, "/api/schema", &[("accept-encoding", "gzip")]).await;
    assert_eq!(
        gz.headers()
            .get(header::CONTENT_ENCODING)
            .map(|v| v.as_bytes()),
        Some(&b"gzip"[..])
    );
    let gz_len = body(gz).await.len();
    assert!(gz_len * 3 < plain_len, "gzip {gz_len} vs plain {plain_len}");
}

/// What Chromium and Firefox accept gets zstd: as small as brotli 4 on the API's JSON and
/// several times faster to write (docs/performance.md#history). Decoded, it is the plain answer.
#[tokio::test]
async fn a_browser_gets_zstd_and_it_decodes_to_the_plain_answer() {
    let st = state();
    let plain = body(get(&st, "/api/schema", &[]).await).await;
    for (accept, coding) in [
        ("gzip, deflate, br, zstd", Some("zstd")),
        ("gzip, deflate, br", Some("br")),
        ("gzip, deflate, br, zstd;q=0", Some("br")),
        ("identity", None),
    ] {
        let resp = get(&st, "/api/schema", &[("accept-encoding", accept)]).await;
        let got = resp
            .headers()
            .get(header::CONTENT_ENCODING)
            .map(|v| v.to_str().expect("ascii").to_owned());
        assert_eq!(got.as_deref(), coding, "{accept}");
        let bytes = body(resp).await;
        if coding == Some("zstd") {
            assert!(
                bytes.len() * 3 < plain.len(),
                "zstd {} vs plain {}",
                bytes.len(),
                plain.len()
            );
            let decoded = zstd::stream::decode_all(&bytes[..]).expect("a whole zstd frame");
            assert_eq!(decoded, plain, "zstd decodes to the plain answer");
        }
    }
}

#[tokio::test]
async fn unknown_paths_are_404() {
    let st = state();
    let resp = get(&st, "/api/nope", &[]).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let err: serde_json::Value = serde_json::from_slice(&body(resp).await).expect("json");
    assert_eq!(err["error"], "not_found");
    let resp = get(&st, "/no-such-file.js", &[]).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_page_is_html_with_security_headers() {
    let st = state();
    let resp = get(&st, "/", &[]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        content_type(&resp).starts_with("text/html"),
        "{}",
        content_type(&resp)
    );
    let h = resp.headers();
    assert_eq!(
        h.get("x-frame-options").map(|v| v.as_bytes()),
        Some(&b"DENY"[..])
    );
    assert_eq!(
        h.get("referrer-policy").map(|v| v.as_bytes()),
        Some(&b"no-referrer"[..])
    );
    let csp = h
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"));
    assert!(
        h.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none(),
        "no CORS"
    );
}

/// The bundle's files as `cargo xtask bundle` left them, by extension: (served name, path).
fn bundle_files() -> Vec<(String, std::path::PathBuf)> {
    if !vramio::http::assets::has_bundle() {
        panic!("frontend/dist has no bundle: run `cargo xtask bundle` (cargo xtask test does)");
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../frontend/dist");
    let mut files: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(&dir)
        .expect("frontend/dist")
        .map(|e| e.expect("entry").path())
        .filter(|p| !matches!(p.extension().and_then(|e| e.to_str()), Some("br" | "gz")))
        .map(|p| {
            (
                p.file_name().expect("name").to_string_lossy().into_owned(),
                p,
            )
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn bundle_files_have_their_content_types() {
    let st = state();
    let files = bundle_files();
    for (ext, want) in [
        (".wasm", "application/wasm"),
        (".js", "text/javascript"),
        (".css", "text/css"),
        (".html", "text/html"),
    ] {
        let (name, _) = files
            .iter()
            .find(|(n, _)| n.ends_with(ext))
            .unwrap_or_else(|| panic!("no {ext} file in the bundle: {files:?}"));
        let resp = get(&st, &format!("/{name}"), &[]).await;
        assert_eq!(resp.status(), StatusCode::OK, "{name}");
        assert!(
            content_type(&resp).starts_with(want),
            "{name}: {}",
            content_type(&resp)
        );
    }
}

fn has(path: &std::path::Path, suffix: &str) -> bool {
    std::path::PathBuf::from(format!("{}{suffix}", path.display())).is_file()
}

/// Each file is sent as xtask stored it: the brotli or gzip copy, byte for byte, as
/// `Accept-Encoding` allows (nothing is compressed at run time), else the file itself; named by
/// content, it may be kept for a year, while `index.html` is revalidated.
#[tokio::test]
async fn bundle_files_are_sent_as_compressed_at_build() {
    let st = state();
    for (name, path) in bundle_files() {
        let raw = std::fs::read(&path).expect("read");
        let url = if name == "index.html" {
            "/".to_owned()
        } else {
            format!("/{name}")
        };
        for (accept, suffix, coding) in [
            ("gzip, deflate, br, zstd", ".br", Some("br")),
            ("gzip, deflate", ".gz", Some("gzip")),
            ("identity", "", None),
        ] {
            let stored = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
            let resp = get(&st, &url, &[("accept-encoding", accept)]).await;
            assert_eq!(resp.status(), StatusCode::OK, "{name} {accept}");
            let h = resp.headers().clone();
            let enc = h
                .get(header::CONTENT_ENCODING)
                .and_then(|v| v.to_str().ok());
            let cache = h.get(header::CACHE_CONTROL).and_then(|v| v.to_str().ok());
            let got = body(resp).await;
            if stored.is_file() {
                assert_eq!(enc, coding, "{name} {accept}");
                assert_eq!(
                    got,
                    std::fs::read(&stored).expect("stored"),
                    "{name} {accept}"
                );
                assert_eq!(
                    h.get(header::VARY).map(|v| v.as_bytes()),
                    Some(&b"accept-encoding"[..]),
                    "{name}"
                );
            } else if suffix == ".br" && has(&path, ".gz") {
                // No brotli copy (it was not smaller): the gzip one.
                assert_eq!(enc, Some("gzip"), "{name} {accept}");
                assert_eq!(
                    got,
                    std::fs::read(format!("{}.gz", path.display())).expect("gz")
                );
            } else {
                assert_eq!(enc, None, "{name} {accept}: no stored copy, so sent plain");
                assert_eq!(got, raw, "{name} {accept}");
            }
            if name == "index.html" {
                assert_eq!(cache, Some("no-cache"), "{name}");
            } else {
                assert_eq!(cache, Some("max-age=31536000, immutable"), "{name}");
            }
        }
        if name.ends_with(".wasm") {
            assert!(has(&path, ".br"), "the wasm has a brotli copy");
        }
    }
}

#[tokio::test]
async fn dns_rebinding_and_cross_site_websockets_are_refused() {
    let st = state();
    let ok = get(&st, "/api/schema", &[("host", "localhost:7575")]).await;
    assert_eq!(ok.status(), StatusCode::OK);
    let rebound = get(&st, "/api/schema", &[("host", "attacker.example:7575")]).await;
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN);
    let cross = get(
        &st,
        "/ws",
        &[
            ("host", "127.0.0.1:7575"),
            ("origin", "https://attacker.example"),
            ("connection", "upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ],
    )
    .await;
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_server_of_no_host_answers_404_naming_none() {
    let st = AppState::for_fleet(
        vramio::host_feed::fleet::Fleet::new(Vec::new()),
        vramio::http::auth::Auth::disabled(),
    );
    for path in ["/api/snapshot", "/api/health"] {
        let resp = get(&st, path, &[]).await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{path}");
        let err: serde_json::Value = serde_json::from_slice(&body(resp).await).expect("json");
        assert_eq!(err["error"], "unknown_host", "{path}");
        assert!(!err.to_string().contains("none"), "no made-up host: {err}");
    }
}
