//! The frontend bundle (`frontend/dist`, written by `cargo xtask`), embedded into the binary.
//!
//! Release builds carry the files inside the binary (one file to copy to a GPU server); debug
//! builds read them from disk, so a rebuilt bundle shows without recompiling the backend. Without
//! a bundle the server still answers `/` with a page that says how to build it.

use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use rust_embed::RustEmbed;

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
pub async fn serve(uri: Uri) -> Response {
    serve_path(uri.path()).await
}

/// The page itself (also at `/s/<id>`).
pub async fn serve_index() -> Response {
    serve_path("/index.html").await
}

async fn serve_path(path: &str) -> Response {
    let path = path.trim_start_matches('/');
    let path = if path.is_empty() { "index.html" } else { path };
    match Bundle::get(path) {
        Some(file) => {
            let mime = mime_guess::from_path(path).first_or_octet_stream();
            // File names carry no content hash, so browsers revalidate (cheap: 304s) rather
            // than pin an old bundle after an upgrade.
            let cache = "no-cache";
            let mut resp = (
                [(header::CONTENT_TYPE, mime.as_ref().to_owned())],
                file.data.into_owned(),
            )
                .into_response();
            resp.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
            resp
        }
        None if path == "index.html" => Html(NO_BUNDLE_PAGE).into_response(),
        None => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
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
}
