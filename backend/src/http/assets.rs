//! The frontend bundle (`frontend/dist`, written by `cargo xtask`), embedded into the binary, and
//! sent as built: compressed at build time, named by content (docs/performance.md#first-load).
//!
//! Release builds carry the files inside the binary (one file to copy to a GPU server); debug
//! builds read them from disk, so a rebuilt bundle shows without recompiling the backend. Without
//! a bundle the server still answers `/` with a page that says how to build it.
//!
//! xtask writes `NAME.br` (brotli 11) and `NAME.gz` (gzip 9) beside each file: the answer is the
//! smallest one the browser's `Accept-Encoding` allows, with `Content-Encoding` and `Vary`, so
//! the server compresses nothing for its own page. The wasm, the scripts and the CSS carry their
//! content hash in their names and may be kept for a year; `index.html` is revalidated on each load.

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

/// Marks an answer of the bundle, sent as stored: the app's compression layer leaves it alone
/// (http/app.rs), so no byte of the page is compressed at run time.
#[derive(Clone, Copy, Debug)]
pub struct SentAsBuilt;

/// The encodings xtask stores, best first, with the suffix of their files.
const ENCODINGS: [(&str, &str); 2] = [("br", ".br"), ("gzip", ".gz")];

/// Hex digits of the content hash in a hashed name (xtask/src/page.rs).
const HASH_LEN: usize = 16;

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
    if Bundle::get(path).is_none() {
        return if path == "index.html" {
            Html(NO_BUNDLE_PAGE).into_response()
        } else {
            (StatusCode::NOT_FOUND, "not found\n").into_response()
        };
    }
    let (stored, encoding) = stored_for(path, headers, |p| Bundle::get(p).is_some());
    let Some(file) = Bundle::get(&stored) else {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    };
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    let variants = ENCODINGS
        .iter()
        .any(|(_, suffix)| Bundle::get(&format!("{path}{suffix}")).is_some());
    let mut resp = respond(
        file.data,
        &file.metadata.sha256_hash(),
        mime.as_ref(),
        headers.get(header::IF_NONE_MATCH),
    );
    resp.extensions_mut().insert(SentAsBuilt);
    let h = resp.headers_mut();
    if let Some(enc) = encoding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(enc));
    }
    if variants {
        h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if is_hashed(path) {
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("max-age=31536000, immutable"),
        );
    }
    resp
}

/// The stored file to send for `path` given the request's headers, and its `Content-Encoding`:
/// every `Accept-Encoding` line counts, as one list (fuzzed by `fuzz/fuzz_targets/http_auth.rs`).
pub fn stored_for(
    path: &str,
    headers: &HeaderMap,
    exists: impl Fn(&str) -> bool,
) -> (String, Option<&'static str>) {
    let accept = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    choose(path, &accept, exists)
}

/// The stored file to send for `path` and its `Content-Encoding`: the first of [`ENCODINGS`] that
/// `accept` allows and that `exists`, else the file itself.
fn choose(
    path: &str,
    accept: &str,
    exists: impl Fn(&str) -> bool,
) -> (String, Option<&'static str>) {
    for (name, suffix) in ENCODINGS {
        let stored = format!("{path}{suffix}");
        if accepts(accept, name) && exists(&stored) {
            return (stored, Some(name));
        }
    }
    (path.to_owned(), None)
}

/// Whether an `Accept-Encoding` value allows `coding` (named, or `*`, with a q-value above 0).
fn accepts(accept: &str, coding: &str) -> bool {
    let mut named = None;
    let mut star = None;
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let token = parts.next().unwrap_or("").trim();
        // A q-value that does not parse counts as 0: when in doubt, send the file plain.
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
            .map(|q| q.trim().parse::<f32>().unwrap_or(0.0))
            .next()
            .unwrap_or(1.0);
        if token.eq_ignore_ascii_case(coding) {
            named = Some(q > 0.0);
        } else if token == "*" {
            star = Some(q > 0.0);
        }
    }
    named.or(star).unwrap_or(false)
}

/// `stem.HASH.ext`: a name xtask gave from the file's content, so it never changes meaning.
fn is_hashed(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let parts: Vec<&str> = name.split('.').collect();
    let [stem, hash, ext] = parts[..] else {
        return false;
    };
    !stem.is_empty()
        && matches!(ext, "wasm" | "js" | "css")
        && hash.len() == HASH_LEN
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The file `data` (whose SHA-256 is `hash`) with a validator, or `304 Not Modified` when the
/// browser's `If-None-Match` names it. Each encoding is its own stored file with its own hash, so
/// the tag is strong; `no-cache` unless the caller marks the name as hashed. Embedded (release)
/// files are sent from the binary without a copy.
fn respond(
    data: Cow<'static, [u8]>,
    hash: &[u8; 32],
    mime: &str,
    if_none_match: Option<&HeaderValue>,
) -> Response {
    let tag = format!("\"{}\"", crate::access::token::hex(&hash[..16]));
    let matches = if_none_match
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim() == "*"
                || v.split(',')
                    .any(|t| t.trim().trim_start_matches("W/") == tag)
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

    /// A file is sent with a validator, and the same validator back (as sent or weak, alone or
    /// in a list) gets 304 without a body; another file's gets the file.
    #[tokio::test]
    async fn a_known_tag_gets_304_and_no_body() {
        use http_body_util::BodyExt;
        let data: &'static [u8] = b"(module)";
        let hash = [7u8; 32];
        let first = respond(Cow::Borrowed(data), &hash, "application/wasm", None);
        assert_eq!(first.status(), StatusCode::OK);
        let tag = first.headers()[header::ETAG].clone();
        assert!(tag.to_str().expect("ascii").starts_with('"'), "{tag:?}");
        assert_eq!(first.headers()[header::CACHE_CONTROL], "no-cache");
        let body = first.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(&body[..], data);
        let weak =
            HeaderValue::from_str(&format!("W/{}", tag.to_str().expect("ascii"))).expect("value");
        let listed = HeaderValue::from_str(&format!("\"other\", {}", tag.to_str().expect("ascii")))
            .expect("value");
        for given in [tag.clone(), weak, listed] {
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

    /// The browser's preferences pick the stored file: brotli first, then gzip, never a coding
    /// it refused with q=0, and the plain file when nothing stored fits.
    #[test]
    fn the_encoding_follows_accept_encoding_and_what_is_stored() {
        // (Accept-Encoding, only the .gz is stored, the file sent, its Content-Encoding)
        let cases = [
            ("gzip, deflate, br, zstd", false, "a.wasm.br", Some("br")),
            ("gzip, deflate", false, "a.wasm.gz", Some("gzip")),
            ("br;q=0, gzip", false, "a.wasm.gz", Some("gzip")),
            ("BR ; q=0.5", false, "a.wasm.br", Some("br")),
            ("*", false, "a.wasm.br", Some("br")),
            ("*;q=0, identity", false, "a.wasm", None),
            ("br, gzip;q=0", true, "a.wasm", None),
            ("br, gzip", true, "a.wasm.gz", Some("gzip")),
            ("", false, "a.wasm", None),
            ("br;q=, gzip;q=0x", false, "a.wasm", None),
            ("br;q=NaN, gzip;q=-1", false, "a.wasm", None),
        ];
        for (accept, only_gz, stored, enc) in cases {
            let got = choose("a.wasm", accept, |p| !only_gz || p.ends_with(".gz"));
            assert_eq!(got, (stored.to_owned(), enc), "{accept:?}");
        }
    }

    #[test]
    fn only_content_named_files_are_kept_for_a_year() {
        assert!(is_hashed("vramio_bg.0123456789abcdef.wasm"));
        assert!(is_hashed("/style.fedcba9876543210.css"));
        assert!(!is_hashed("index.html"));
        assert!(!is_hashed("vramio_bg.wasm"));
        assert!(
            !is_hashed("style.0123456789ABCDEF.css"),
            "xtask writes lowercase"
        );
        assert!(!is_hashed("style.0123456789abcde.css"), "15 digits");
        assert!(
            !is_hashed("x.0123456789abcdef.wasm.br"),
            "the stored copies are not asked for"
        );
        assert!(!is_hashed("0123456789abcdef.html"));
    }
}
