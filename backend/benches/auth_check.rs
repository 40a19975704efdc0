//! The auth check per request (docs/performance.md#targets: <= 2 us): `Auth::decide` on the headers a
//! browser or script really sends, for the admin cookie, a bearer token, a share link's view
//! cookie (one HMAC), and a request without credentials.
//!
//! `cargo bench -p vramio --bench auth_check`.

use axum::http::{HeaderMap, HeaderValue, Method};
use criterion::{Criterion, criterion_group, criterion_main};
use shared::access::CreateShare;
use std::hint::black_box;
use vramio::access::shares::Shares;
use vramio::access::state_dir::StateDir;
use vramio::access::token::Token;
use vramio::http::auth::{Auth, now_ms};
use vramio::http::same_origin::HostPolicy;

const TOKEN: &str = "8d5e0c1f7a2b4e6d9c3f1a0b8e7d6c5b4a392817f6e5d4c3b2a1908f7e6d5c4b";

fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).expect("header"));
    }
    h
}

fn bench(c: &mut Criterion) {
    let root = std::env::temp_dir().join(format!("vramio-bench-auth-{}", std::process::id()));
    let shares = Shares::open(StateDir::open(Some(&root)).expect("state dir"));
    let link = shares
        .create(&CreateShare::default(), now_ms(), "http://127.0.0.1:7575")
        .expect("share");
    let (_, rest) = link.url.rsplit_once("/s/").expect("/s/");
    let (id, secret) = rest.split_once('#').expect("#");
    let auth = Auth::new(
        Some(Token::from_trusted(TOKEN)),
        shares,
        false,
        HostPolicy::loopback_only(),
        None,
    );
    let browser = |cookie: String| {
        headers(&[
            ("host", "127.0.0.1:7575".into()),
            (
                "user-agent",
                "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0".into(),
            ),
            ("accept", "application/json".into()),
            ("cookie", cookie),
        ])
    };
    let cases = [
        (
            "admin cookie",
            browser(format!("_ga=GA1.1.1; vramio-7575={TOKEN}")),
        ),
        (
            "bearer",
            headers(&[
                ("host", "127.0.0.1:7575".into()),
                ("authorization", format!("Bearer {TOKEN}")),
            ]),
        ),
        (
            "view cookie",
            browser(format!("vramio-7575-view={id}.{secret}")),
        ),
        ("none", headers(&[("host", "127.0.0.1:7575".into())])),
    ];
    let mut group = c.benchmark_group("auth_check");
    for (name, h) in &cases {
        group.bench_function(*name, |b| {
            b.iter(|| black_box(auth.decide(&Method::GET, black_box(None), black_box(h))));
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(root);
}

criterion_group!(benches, bench);
criterion_main!(benches);
