//! Share links of a running `vramio serve`, used from outside: create one with
//! `vramio share create`, claim its view cookie as the page does, GET with the server's own
//! `Host`, and open `/ws` as a viewer. Include after `vramio_bin` and `ws_viewer` with
//! `#[path = "common/share_link.rs"] mod share_link;`.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use super::vramio_bin::{Resp, Server, http, run};
use super::ws_viewer::ws_over;
use tokio_tungstenite::WebSocketStream;

/// GET `path` from `s` with its own `Host` and `extra` headers.
pub async fn get(s: &Server, path: &str, extra: &[(&str, &str)]) -> Resp {
    let mut headers = vec![("host", s.authority())];
    headers.extend_from_slice(extra);
    http(s.authority(), "GET", path, &headers, "").await
}

/// A share link from `vramio share create ARGS`: `(link, id, secret)`.
pub fn create_share(state: &str, s: &Server, args: &[&str]) -> (String, String, String) {
    let mut all = vec!["share", "create"];
    all.extend_from_slice(args);
    all.extend(["--state-dir", state]);
    let r = run(&all);
    assert!(r.ok(), "share create: {r:?}");
    let link = r.last_line().to_owned();
    let rest = link
        .strip_prefix(&format!("{}/s/", s.base()))
        .unwrap_or_else(|| panic!("the last line is not a link of {}: {link}", s.base()));
    let (id, secret) = rest.split_once('#').expect("BASE/s/<id>#<secret>");
    assert_eq!((id.len(), secret.len()), (22, 43), "{link}");
    (link.clone(), id.to_owned(), secret.to_owned())
}

/// `POST /api/claim` from the server's own origin; the view cookie (`name=value`).
pub async fn claim(s: &Server, id: &str, secret: &str) -> String {
    let origin = s.base().to_owned();
    let body = serde_json::json!({ "id": id, "secret": secret }).to_string();
    let headers = [
        ("host", s.authority()),
        ("origin", origin.as_str()),
        ("content-type", "application/json"),
    ];
    let r = http(s.authority(), "POST", "/api/claim", &headers, &body).await;
    assert_eq!(r.status, 204, "claim: {}", r.text());
    let set = r.header("set-cookie").expect("a view cookie").to_owned();
    let name = format!("vramio-{}-view=", s.port());
    assert!(set.starts_with(&name), "{set}");
    assert!(
        set.contains("; HttpOnly") && set.contains("; SameSite=Strict"),
        "{set}"
    );
    set.split(';').next().unwrap_or("").to_owned()
}

pub async fn ws(s: &Server, headers: &[(&str, &str)]) -> WebSocketStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(s.authority())
        .await
        .expect("connect");
    ws_over(tcp, &format!("ws://{}/ws", s.authority()), headers).await
}

/// `POST /api/claim` from the server's own origin, whatever the answer.
pub async fn claim_status(s: &Server, id: &str, secret: &str) -> Resp {
    let body = serde_json::json!({ "id": id, "secret": secret }).to_string();
    let origin = s.base().to_owned();
    let headers = [("host", s.authority()), ("origin", origin.as_str())];
    http(s.authority(), "POST", "/api/claim", &headers, &body).await
}
