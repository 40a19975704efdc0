//! A hub's share link for one host (`share create --host`): it shows that host alone, over
//! `/api/snapshot`, `/api/health` and `/ws`; an unknown host is refused when the link is made.
//! A link made live only gets no stored history: not over HTTP, on a hub before any peer is
//! asked, and not over its WebSocket.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use shared::{Frame, ServerMsg};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tower::ServiceExt;
use vramio::access::shares::Shares;
use vramio::access::state_dir::StateDir;
use vramio::access::token::Token;
use vramio::host_feed::fleet::Fleet;
use vramio::host_feed::{HostFeed, HostFeedConfig};
use vramio::http::auth::Auth;
use vramio::http::same_origin::HostPolicy;
use vramio::http::{AppState, app};

const TOKEN: &str = "abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd";
const TICK: Duration = Duration::from_millis(100);

async fn call(
    state: &AppState,
    method: Method,
    path: &str,
    cookie: Option<&str>,
    body: &str,
) -> (StatusCode, String) {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, "127.0.0.1:7575");
    req = match cookie {
        Some(c) => req.header(header::COOKIE, c),
        None => req.header(header::AUTHORIZATION, format!("Bearer {TOKEN}")),
    };
    if !body.is_empty() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let resp = app(state.clone())
        .oneshot(req.body(Body::from(body.to_owned())).expect("request"))
        .await
        .expect("infallible");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn a_link_for_one_host_shows_only_that_host() {
    let root = std::env::temp_dir().join(format!("vramio-hub-share-{}", std::process::id()));
    let mut state = fleet_of(&root, &["ssh://a", "b:7575"]);
    // As `vramio replay REC --peer b:7575` serves it: the replayed host first.
    state.replay = Some(vramio::ingest::player::Replay::new(
        vec![Frame::empty("ssh://a", 1, 1_700_000_000_000, 100)],
        vramio::ingest::player::Speed::Max,
    ));
    let (status, body) = call(
        &state,
        Method::POST,
        "/api/shares",
        None,
        r#"{"host":"nope"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("b:7575"), "names the hosts: {body}");
    let (_, cookie) = link_for(&state, "b:7575").await;

    let (status, body) = call(&state, Method::GET, "/api/snapshot", Some(&cookie), "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("os-1") && !body.contains("os-0"), "{body}");
    // The replay is another host's: the link learns nothing of it; the admin sees it.
    let (status, body) = call(&state, Method::GET, "/api/replay", Some(&cookie), "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        !body.contains("ssh://a") && !body.contains("verdict"),
        "{body}"
    );
    let (status, _) = call(&state, Method::GET, "/api/replay", None, "").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(
        &state,
        Method::GET,
        "/api/snapshot?host=ssh://a",
        Some(&cookie),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, body) = call(&state, Method::GET, "/api/health", Some(&cookie), "").await;
    assert!(
        body.contains("b:7575") && !body.contains("ssh://a"),
        "{body}"
    );
    let (_, body) = call(&state, Method::GET, "/api/session", Some(&cookie), "").await;
    assert!(body.contains(r#""host":"b:7575""#), "{body}");

    // Over /ws: hello names the one host, and only its frames come.
    let mut ws = viewer_socket(&state, &cookie).await;
    let mut saw_backfill = false;
    for _ in 0..6 {
        let Some(Ok(Message::Text(t))) = tokio::time::timeout(Duration::from_secs(3), ws.next())
            .await
            .expect("in time")
        else {
            continue;
        };
        match serde_json::from_str::<ServerMsg>(t.as_str()).expect("message") {
            ServerMsg::Hello { hosts, .. } => assert_eq!(hosts, vec!["b:7575"]),
            ServerMsg::Backfill { host, .. } => {
                assert_eq!(host, "b:7575");
                saw_backfill = true;
                break;
            }
            ServerMsg::Summary { host, .. } => assert_eq!(host, "b:7575"),
            _ => {}
        }
    }
    assert!(saw_backfill);
    let _ = std::fs::remove_dir_all(root);
}

/// A link made for one host, opened after a restart in which that host is no longer a peer: it
/// sees nothing (the link page's 404, 404s that name no host, close 4403 on `/ws`), never the
/// rest of the fleet.
#[tokio::test]
async fn a_link_for_a_host_no_longer_served_sees_nothing() {
    let root = std::env::temp_dir().join(format!("vramio-hub-share-gone-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let before = fleet_of(&root, &["ssh://a", "gpu3:7575"]);
    let (id, cookie) = link_for(&before, "gpu3:7575").await;

    // The hub restarts with gpu3 dropped (another peer in its place).
    let after = fleet_of(&root, &["ssh://a", "other:7575"]);
    let (status, body) = call(&after, Method::GET, &format!("/s/{id}"), Some(&cookie), "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body, vramio::http::share_routes::LINK_NOT_FOUND);
    for path in ["/api/snapshot", "/api/health", "/api/snapshot?host=ssh://a"] {
        let (status, body) = call(&after, Method::GET, path, Some(&cookie), "").await;
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::FORBIDDEN,
            "{path}: {status} {body}"
        );
        for name in ["ssh://a", "other", "os-0", "os-1"] {
            assert!(!body.contains(name), "{path} names {name}: {body}");
        }
    }

    let mut ws = viewer_socket(&after, &cookie).await;
    let mut close_code = None;
    while let Some(msg) = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .expect("in time")
    {
        match msg {
            Ok(Message::Text(t)) => {
                let msg: ServerMsg = serde_json::from_str(t.as_str()).expect("message");
                assert!(
                    matches!(msg, ServerMsg::Error { .. }),
                    "sees nothing but why: {msg:?}"
                );
            }
            Ok(Message::Close(Some(f))) => {
                close_code = Some(u16::from(f.code));
                break;
            }
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) => break,
        }
    }
    assert_eq!(close_code, Some(4403));
    let _ = std::fs::remove_dir_all(root);
}

/// A live-only link on a hub asks a peer's history: 403 by name, before the peer is asked (an
/// asked peer with no link would answer 502 `peer_down`, as it does for a plain link).
#[tokio::test]
async fn a_live_only_link_gets_no_peers_history() {
    let root = std::env::temp_dir().join(format!("vramio-hub-share-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let state = fleet_of(&root, &["ssh://a", "b:7575"]);
    let live = cookie_of(&state, r#"{"live_only":true}"#).await;
    let plain = cookie_of(&state, "{}").await;
    let path = "/api/history?host=b:7575&from_ms=1&to_ms=2";
    let (status, body) = call(&state, Method::GET, path, Some(&live), "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("live data only"), "{body}");
    let (status, body) = call(&state, Method::GET, path, Some(&plain), "").await;
    assert_eq!(
        status,
        StatusCode::BAD_GATEWAY,
        "a plain link reaches the peer: {body}"
    );
    let _ = std::fs::remove_dir_all(root);
}

/// The server's own history over the WebSocket: a plain link's `history_query` is answered, a
/// live-only link's fails with the reason, and so does its `moment_query`.
#[tokio::test]
async fn a_live_only_links_socket_queries_fail() {
    let root =
        std::env::temp_dir().join(format!("vramio-hub-share-live-ws-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let mut state = fleet_of(&root, &["own"]);
    let (history, sink) =
        vramio::history::History::open(&root.join("history"), vramio::history::DEFAULT_MAX_BYTES)
            .expect("a history");
    state.history = Some(history.clone());
    let live = cookie_of(&state, r#"{"live_only":true}"#).await;
    let plain = cookie_of(&state, "{}").await;
    let range = shared::ClientMsg::HistoryQuery {
        id: 5,
        from_ms: 1,
        to_ms: 2_000,
        points: 10,
        only: None,
        findings: false,
    };
    let moment = shared::ClientMsg::MomentQuery { id: 6, t_ms: 1_000 };
    let answer = |cookie: String, q: shared::ClientMsg| {
        let state = state.clone();
        async move {
            let mut ws = viewer_socket(&state, &cookie).await;
            let text = serde_json::to_string(&q).expect("json");
            ws.send(Message::Text(text.into())).await.expect("send");
            loop {
                let msg = tokio::time::timeout(Duration::from_secs(5), ws.next())
                    .await
                    .expect("an answer in time")
                    .expect("open")
                    .expect("a message");
                if let Message::Text(t) = msg {
                    let msg: ServerMsg = serde_json::from_str(t.as_str()).expect("message");
                    if matches!(
                        msg,
                        ServerMsg::HistoryAnswer { .. }
                            | ServerMsg::MomentAnswer { .. }
                            | ServerMsg::QueryFailed { .. }
                    ) {
                        return msg;
                    }
                }
            }
        }
    };
    assert!(matches!(
        answer(plain, range.clone()).await,
        ServerMsg::HistoryAnswer { id: 5, .. }
    ));
    for q in [range, moment] {
        match answer(live.clone(), q).await {
            ServerMsg::QueryFailed { message, .. } => {
                assert!(message.contains("live data only"), "{message}")
            }
            other => panic!("a live-only link was answered: {other:?}"),
        }
    }
    drop(sink);
    history.close();
    let _ = std::fs::remove_dir_all(root);
}

/// A share link made by the admin with the create body `body`: the view cookie its page would
/// get.
async fn cookie_of(state: &AppState, body: &str) -> String {
    let (status, text) = call(state, Method::POST, "/api/shares", None, body).await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    let info: shared::access::ShareInfo = serde_json::from_str(&text).expect("share");
    let (_, rest) = info.url.rsplit_once("/s/").expect("/s/");
    let (id, secret) = rest.split_once('#').expect("#");
    format!("vramio-7575-view={id}.{secret}")
}

/// On a hub, `/api/health` and `/api/snapshot` without `?host=` answer for the whole fleet (they
/// followed the first peer, so a liveness probe flapped with that one peer).
#[tokio::test]
async fn a_hubs_health_and_snapshot_cover_every_host() {
    let hubs: Vec<HostFeed> = ["ssh://a", "b:7575"]
        .iter()
        .map(|n| {
            HostFeed::new(
                *n,
                Duration::from_secs(60),
                HostFeedConfig::for_interval(TICK),
            )
        })
        .collect();
    hubs[1]
        .publish(Frame::empty("os-1", 0, 1_700_000_000_000, 100))
        .expect("publish");
    hubs[0].set_link(shared::HostState::Down, Some("connection refused".into()));
    let auth = Auth::new(
        Some(Token::from_trusted(TOKEN)),
        Shares::off("test"),
        false,
        HostPolicy::loopback_only(),
        None,
    );
    let state = AppState::for_fleet(Fleet::new(hubs.clone()), auth);
    let (status, body) = call(&state, Method::GET, "/api/health", None, "").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the first peer down is not the hub down: {body}"
    );
    let health: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(health["status"], "degraded", "{body}");
    assert_eq!(health["hosts_up"], 1, "{body}");
    let names: Vec<&str> = health["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .filter_map(|h| h["name"].as_str())
        .collect();
    assert_eq!(names, ["ssh://a", "b:7575"]);

    let (status, body) = call(&state, Method::GET, "/api/snapshot", None, "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let snap: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert!(snap["hosts"]["ssh://a"].is_null(), "{body}");
    assert_eq!(snap["hosts"]["b:7575"]["frame"]["host"], "os-1", "{body}");
    let (status, body) = call(&state, Method::GET, "/api/snapshot?host=b:7575", None, "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.starts_with(r#"{"frame":"#), "{body}");

    hubs[1].set_link(shared::HostState::Down, Some("gone".into()));
    let (status, body) = call(&state, Method::GET, "/api/health", None, "").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains(r#""status":"down""#), "{body}");
}

/// One share link cannot take every viewer slot and lock the admin out: it has a share of them,
/// and the admin a reserve (a link could take all 1,024, and the admin got 503).
#[tokio::test]
async fn a_share_link_cannot_lock_the_admin_out() {
    let root = std::env::temp_dir().join(format!("vramio-hub-slots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let hub = HostFeed::new("h", TICK, HostFeedConfig::for_interval(TICK));
    hub.publish(Frame::empty("h", 0, 1_700_000_000_000, 100))
        .expect("publish");
    let auth = Auth::new(
        Some(Token::from_trusted(TOKEN)),
        Shares::open(StateDir::open(Some(&root)).expect("dir")),
        false,
        HostPolicy::loopback_only(),
        None,
    );
    let mut state = AppState::new(hub, auth);
    state.viewers = vramio::http::slots::ViewerSlots::new(4, 1, 2);
    let (status, body) = call(&state, Method::POST, "/api/shares", None, "{}").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let info: shared::access::ShareInfo = serde_json::from_str(&body).expect("share");
    let (_, rest) = info.url.rsplit_once("/s/").expect("/s/");
    let (id, secret) = rest.split_once('#').expect("#");
    let cookie = format!("vramio-7575-view={id}.{secret}");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = app(state.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    let open = |credential: (&'static str, String)| async move {
        let mut req = format!("ws://{addr}/ws")
            .into_client_request()
            .expect("req");
        req.headers_mut()
            .insert(credential.0, credential.1.parse().expect("header"));
        req.headers_mut()
            .insert("origin", "http://127.0.0.1:7575".parse().expect("origin"));
        req.headers_mut()
            .insert("host", "127.0.0.1:7575".parse().expect("host"));
        tokio_tungstenite::connect_async(req).await
    };
    let viewer = || ("cookie", cookie.clone());
    let admin = || ("authorization", format!("Bearer {TOKEN}"));
    let _v1 = open(viewer()).await.expect("the link's first viewer");
    let _v2 = open(viewer()).await.expect("the link's second viewer");
    match open(viewer()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 503),
        other => panic!(
            "a third viewer of one link is refused: {:?}",
            other.map(|_| ())
        ),
    }
    let _a1 = open(admin()).await.expect("the admin still gets in");
    let _a2 = open(admin()).await.expect("the admin's reserve");
    let _ = std::fs::remove_dir_all(root);
}

/// A WebSocket to `/ws` of a server of `state` on a free loopback port, with `cookie`, from the
/// page's origin.
async fn viewer_socket(
    state: &AppState,
    cookie: &str,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = app(state.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    let mut req = format!("ws://{addr}/ws")
        .into_client_request()
        .expect("req");
    req.headers_mut()
        .insert("cookie", cookie.parse().expect("cookie"));
    req.headers_mut()
        .insert("origin", "http://127.0.0.1:7575".parse().expect("origin"));
    req.headers_mut()
        .insert("host", "127.0.0.1:7575".parse().expect("host"));
    tokio_tungstenite::connect_async(req)
        .await
        .expect("the upgrade is answered")
        .0
}

/// A server of the hosts `names` (each with one frame, its OS name `os-INDEX`), its token and
/// share links in the state directory `root`.
fn fleet_of(root: &std::path::Path, names: &[&str]) -> AppState {
    let feeds: Vec<HostFeed> = names
        .iter()
        .map(|n| HostFeed::new(*n, TICK, HostFeedConfig::for_interval(TICK)))
        .collect();
    for (i, h) in feeds.iter().enumerate() {
        h.publish(Frame::empty(format!("os-{i}"), 0, 1_700_000_000_000, 100))
            .expect("publish");
    }
    let auth = Auth::new(
        Some(Token::from_trusted(TOKEN)),
        Shares::open(StateDir::open(Some(root)).expect("dir")),
        false,
        HostPolicy::loopback_only(),
        None,
    );
    AppState::for_fleet(Fleet::new(feeds), auth)
}

/// A share link for the one host `host`, made by the admin: its id, and the view cookie its page
/// would get.
async fn link_for(state: &AppState, host: &str) -> (String, String) {
    let (status, body) = call(
        state,
        Method::POST,
        "/api/shares",
        None,
        &format!(r#"{{"host":"{host}"}}"#),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let info: shared::access::ShareInfo = serde_json::from_str(&body).expect("share");
    assert_eq!(info.host.as_deref(), Some(host));
    let (_, rest) = info.url.rsplit_once("/s/").expect("/s/");
    let (id, secret) = rest.split_once('#').expect("#");
    (id.to_owned(), format!("vramio-7575-view={id}.{secret}"))
}
