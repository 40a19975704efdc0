//! The frontend bundle (`frontend/dist`, written by `cargo xtask`), embedded into the binary.
//!
//! Release builds carry the files inside the binary (one file to copy to a GPU server); debug
//! builds read them from disk, so a rebuilt bundle shows without recompiling the backend. Without
//! a bundle the server still answers `/` with a page that says how to build it.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use rust_embed::RustEmbed;
use std::borrow::Cow;

/// `allow_missing`: the folder exists only once `cargo xtask bundle` ran; the build writes
/// nothing into the source tree to make it exist.
#[derive(RustEmbed)]
#[folder = "../frontend/dist"]
#[allow_missing = true]
struct Bundle;

const NO_BUNDLE_PAGE: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>vramio: frontend not built</title></head><body style="font-family:sans-serif;max-width:40em;margin:3em auto">
<h1>vramio is running, but its page was not built</h1>
<p>This binary was compiled without the browser bundle. Build it with
<code>cargo xtask run</code> (development) or <code>cargo xtask dist</code> (release binary).
The data is already served: <a href="/api/snapshot">/api/snapshot</a>, <a href="/api/health">/api/health</a>.</p>
</body></html>"#;

/// True when the bundle was built and embedded (or, in debug builds, is on disk).
pub fn has_bundle() -> bool {
    Bundle::get("index.html").is_some()
}

/// Serves an embedded file by path; `/` is `index.html`. Unknown paths are 404.
pub async fn serve(uri: Uri, headers: HeaderMap) -> Response {
    serve_path(uri.path(), &headers)
}

/// The page itself (also at `/s/<id>`).
pub async fn serve_index(headers: HeaderMap) -> Response {
    serve_path("/index.html", &headers)
}

fn serve_path(path: &str, headers: &HeaderMap) -> Response {
    let path = path.trim_start_matches('/');
    let path = if path.is_empty() { "index.html" } else { path };
    match Bundle::get(path) {
        Some(file) => {
            let mime = mime_guess::from_path(path).first_or_octet_stream();
            respond(
                file.data,
                &file.metadata.sha256_hash(),
                mime.as_ref(),
                headers.get(header::IF_NONE_MATCH),
            )
        }
        None if path == "index.html" => Html(NO_BUNDLE_PAGE).into_response(),
        None => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

/// The file `data` (whose SHA-256 is `hash`) with a validator, or `304 Not Modified` when the
/// browser's `If-None-Match` names it. File names carry no content hash, so the page is
/// revalidated on every load (`no-cache`) rather than pinned after an upgrade; a reload then costs
/// one small 304 per file instead of the whole bundle. The tag is weak (`W/`): the same content is
/// sent gzip- or brotli-encoded as the request asks, so the bytes differ while the file does not.
/// Embedded (release) files are sent from the binary without a copy.
fn respond(
    data: Cow<'static, [u8]>,
    hash: &[u8; 32],
    mime: &str,
    if_none_match: Option<&HeaderValue>,
) -> Response {
    let tag = format!("W/\"{}\"", crate::access::token::hex(&hash[..16]));
    let matches = if_none_match
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim() == "*"
                || v.split(',')
                    .any(|t| t.trim().trim_start_matches("W/") == &tag[2..])
        });
    let mut resp = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let body = match data {
            Cow::Borrowed(b) => Bytes::from_static(b),
            Cow::Owned(v) => Bytes::from(v),
        };
        ([(header::CONTENT_TYPE, mime.to_owned())], body).into_response()
    };
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debug builds (tests) read the bundle from disk: `has_bundle` says whether `cargo xtask
    /// bundle` left one there, whether or not the folder exists.
    #[test]
    fn has_bundle_follows_the_folder_on_disk() {
        let index =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../frontend/dist/index.html");
        assert_eq!(has_bundle(), index.is_file());
    }

    /// A file is sent with a validator, and the same validator back (weak or not, alone or in a
    /// list) gets 304 without a body; another file's gets the file.
    #[tokio::test]
    async fn a_known_tag_gets_304_and_no_body() {
        use http_body_util::BodyExt;
        let data: &'static [u8] = b"(module)";
        let hash = [7u8; 32];
        let first = respond(Cow::Borrowed(data), &hash, "application/wasm", None);
        assert_eq!(first.status(), StatusCode::OK);
        let tag = first.headers()[header::ETAG].clone();
        assert!(tag.to_str().expect("ascii").starts_with("W/\""), "{tag:?}");
        assert_eq!(first.headers()[header::CACHE_CONTROL], "no-cache");
        let body = first.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(&body[..], data);
        let strong = HeaderValue::from_str(tag.to_str().expect("ascii").trim_start_matches("W/"))
            .expect("value");
        let listed = HeaderValue::from_str(&format!("\"other\", {}", tag.to_str().expect("ascii")))
            .expect("value");
        for given in [tag.clone(), strong, listed] {
            let again = respond(Cow::Borrowed(data), &hash, "application/wasm", Some(&given));
            assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{given:?}");
            assert_eq!(again.headers()[header::ETAG], tag);
            let body = again.into_body().collect().await.expect("body").to_bytes();
            assert!(body.is_empty());
        }
        let other = HeaderValue::from_static("W/\"0000\"");
        let changed = respond(Cow::Borrowed(data), &hash, "application/wasm", Some(&other));
        assert_eq!(changed.status(), StatusCode::OK);
    }
}
