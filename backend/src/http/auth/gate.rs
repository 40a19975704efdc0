//! The gate every request passes: the [`guard`] middleware that applies [`Auth::decide`], the
//! per-route requirements ([`require_viewer`], [`require_admin`]), and the refusals they answer.

use super::{ADMIN_COOKIE_MAX_AGE_S, Access, Auth, Decision, Granted, cookie, query_without_token};
use crate::access::token::Token;
use crate::http::error::ApiCode;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

/// 401 with the hint for people; JSON for the API and `/ws`, a short page elsewhere.
pub fn unauthorized(path: &str) -> Response {
    let mut resp = if path.starts_with("/api/") || path == "/ws" {
        crate::http::error::error_response(
            StatusCode::UNAUTHORIZED,
            ApiCode::Unauthorized,
            shared::access::UNAUTHORIZED_HINT,
        )
    } else {
        (
            StatusCode::UNAUTHORIZED,
            Html(format!(
                "<!doctype html><meta charset=utf-8><title>vramio</title>\
                 <p>This link's token is not valid here: {}.</p>",
                shared::access::UNAUTHORIZED_HINT
            )),
        )
            .into_response()
    };
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"vramio\""),
    );
    resp
}

/// The middleware: refuses bad hosts, origins and credentials, turns `?token=` into a cookie,
/// and puts the request's [`Granted`] access in its extensions.
pub async fn guard(State(auth): State<Auth>, mut req: Request, next: Next) -> Response {
    let decision = auth.decide(req.method(), req.uri().query(), req.headers());
    match decision {
        Decision::Pass(access) => {
            req.extensions_mut().insert(Granted(access));
            next.run(req).await
        }
        Decision::SetAdminCookie { port } => {
            let location = location_without_token(req.uri().path(), req.uri().query());
            let token = auth.inner.token.as_ref().map_or("", Token::expose);
            let set = cookie(
                &format!("vramio-{port}"),
                token,
                ADMIN_COOKIE_MAX_AGE_S,
                auth.secure_cookies(),
            );
            let mut resp = StatusCode::SEE_OTHER.into_response();
            let h = resp.headers_mut();
            if let (Ok(loc), Ok(set)) = (
                HeaderValue::from_str(&location),
                HeaderValue::from_str(&set),
            ) {
                h.insert(header::LOCATION, loc);
                h.insert(header::SET_COOKIE, set);
                h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            }
            resp
        }
        Decision::BadCredential(what) => {
            auth.inner.failures.record(what, req.uri().path());
            unauthorized(req.uri().path())
        }
        Decision::Refuse(code, why) => (code, format!("{why}\n")).into_response(),
    }
}

/// Where a request with a good `?token=` is sent: its path, with the query less its `token`
/// parameters. Only ever a path on this site: `//host` would be a redirect to another, so such
/// a path becomes `/`.
pub fn location_without_token(path: &str, query: Option<&str>) -> String {
    // `//host` and `/\host` are read by browsers as another origin: never redirect there.
    let path = if path.starts_with("//") || path.starts_with("/\\") {
        "/"
    } else {
        path
    };
    let rest = query_without_token(query.unwrap_or(""));
    if rest.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{rest}")
    }
}

fn granted(req: &Request) -> Option<&Access> {
    req.extensions().get::<Granted>().and_then(|g| g.0.as_ref())
}

/// Route layer: any credential for the page (admin or share viewer).
pub async fn require_viewer(req: Request, next: Next) -> Response {
    match granted(&req) {
        None => unauthorized(req.uri().path()),
        Some(Access::Scrape) => scrape_only(),
        Some(Access::Admin | Access::Viewer(_)) => next.run(req).await,
    }
}

/// 403 for the scrape token anywhere but `/metrics`.
pub fn scrape_only() -> Response {
    crate::http::error::error_response(
        StatusCode::FORBIDDEN,
        ApiCode::Forbidden,
        "the scrape token reads /metrics only",
    )
}

/// Route layer: the admin token only.
pub async fn require_admin(req: Request, next: Next) -> Response {
    match granted(&req) {
        None => unauthorized(req.uri().path()),
        Some(Access::Viewer(_)) => crate::http::error::error_response(
            StatusCode::FORBIDDEN,
            ApiCode::Forbidden,
            "a share link shows the live page only",
        ),
        Some(Access::Scrape) => scrape_only(),
        Some(Access::Admin) => next.run(req).await,
    }
}

#[cfg(test)]
mod redirect_tests {
    use super::location_without_token;

    /// A path that a browser reads as another origin (`//evil`, `/\evil`) is never a redirect
    /// target.
    #[test]
    fn the_redirect_stays_on_this_origin() {
        assert_eq!(
            location_without_token("//evil.example", Some("token=x")),
            "/"
        );
        assert_eq!(
            location_without_token("/\\evil.example", Some("token=x")),
            "/"
        );
        assert_eq!(location_without_token("/a", Some("token=x&b=1")), "/a?b=1");
    }
}
