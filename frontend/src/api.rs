//! The page's calls to the access API (`/api/session`, `/api/claim`, `/api/shares`,
//! docs/security.md): thin `fetch` wrappers that return the decoded answer or an [`ApiFailure`]. Same-origin
//! requests with the browser's cookies (the default `credentials: same-origin`); the cookies are
//! HttpOnly, so the page never sees them.

use serde::Serialize;
use serde::de::DeserializeOwned;
use shared::access::{ApiError, Claim, CreateShare, SessionInfo, ShareInfo, ShareList};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Headers, Request, RequestInit, Response};

/// Why a call did not give what it asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiFailure {
    /// The request never got an answer (the server is down or restarting, or the network is).
    #[error("vramio did not answer ({0})")]
    Network(String),
    /// The server answered with an error status; `message` is its `ApiError` sentence.
    #[error("{message}")]
    Refused { status: u16, message: String },
    /// A success status with a body that is not what the contract says.
    #[error("vramio's answer could not be read: {0}")]
    Decode(String),
}

impl ApiFailure {
    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiFailure::Refused { status, .. } => Some(*status),
            ApiFailure::Network(_) | ApiFailure::Decode(_) => None,
        }
    }
}

/// The failure for an error answer: the server's `ApiError` message when the body is one, else
/// the bare status (a proxy's page, an empty body).
pub fn refusal(status: u16, body: &str) -> ApiFailure {
    let message = serde_json::from_str::<ApiError>(body)
        .ok()
        .map(|e| e.message)
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| format!("vramio answered HTTP {status}"));
    ApiFailure::Refused { status, message }
}

/// A status and the body text.
struct Answer {
    status: u16,
    body: String,
}

fn js_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| {
            e.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

async fn call(method: &str, path: &str, json: Option<String>) -> Result<Answer, ApiFailure> {
    let net = |e: JsValue| ApiFailure::Network(js_text(&e));
    let init = RequestInit::new();
    init.set_method(method);
    if let Some(json) = json {
        let headers = Headers::new().map_err(net)?;
        headers
            .append("Content-Type", "application/json")
            .map_err(net)?;
        init.set_headers(&headers);
        init.set_body(&JsValue::from_str(&json));
    }
    let request = Request::new_with_str_and_init(path, &init).map_err(net)?;
    let window = web_sys::window().ok_or_else(|| ApiFailure::Network("no window".to_owned()))?;
    let response: Response = JsFuture::from(window.fetch_with_request(&request))
        .await
        .map_err(net)?
        .dyn_into()
        .map_err(net)?;
    let body = match response.text() {
        Ok(p) => JsFuture::from(p)
            .await
            .map_err(net)?
            .as_string()
            .unwrap_or_default(),
        Err(e) => return Err(net(e)),
    };
    Ok(Answer {
        status: response.status(),
        body,
    })
}

/// The answer when `status` is `want`, else the failure.
fn expect(answer: Answer, want: u16) -> Result<String, ApiFailure> {
    if answer.status == want {
        Ok(answer.body)
    } else {
        Err(refusal(answer.status, &answer.body))
    }
}

fn decode<T: DeserializeOwned>(body: &str) -> Result<T, ApiFailure> {
    serde_json::from_str(body).map_err(|e| ApiFailure::Decode(e.to_string()))
}

fn encode<T: Serialize>(value: &T) -> Result<String, ApiFailure> {
    serde_json::to_string(value).map_err(|e| ApiFailure::Decode(e.to_string()))
}

/// `GET /api/session`: who this browser is; a 401 without credentials.
pub async fn session() -> Result<SessionInfo, ApiFailure> {
    decode(&expect(call("GET", "/api/session", None).await?, 200)?)
}

/// `POST /api/claim`: trades a link's secret for a view cookie; a 404 for any bad link.
pub async fn claim(id: &str, secret: &str) -> Result<(), ApiFailure> {
    let body = encode(&Claim {
        id: id.to_owned(),
        secret: secret.to_owned(),
    })?;
    expect(call("POST", "/api/claim", Some(body)).await?, 204).map(drop)
}

/// `GET /api/shares`: the active links (admin only).
pub async fn list_shares() -> Result<Vec<ShareInfo>, ApiFailure> {
    let list: ShareList = decode(&expect(call("GET", "/api/shares", None).await?, 200)?)?;
    Ok(list.shares)
}

/// `POST /api/shares`: creates a link (admin only).
pub async fn create_share(req: &CreateShare) -> Result<ShareInfo, ApiFailure> {
    let answer = call("POST", "/api/shares", Some(encode(req)?)).await?;
    decode(&expect(answer, 201)?)
}

/// `GET /api/replay`: the replay's span, position and verdict timeline (404 on a live server).
pub async fn replay() -> Result<shared::replay::ReplayInfo, ApiFailure> {
    decode(&expect(call("GET", "/api/replay", None).await?, 200)?)
}

/// `POST /api/replay`: pauses or plays the replay and sets its speed (admin only).
pub async fn steer_replay(
    control: &shared::replay::ReplayControl,
) -> Result<shared::replay::ReplayInfo, ApiFailure> {
    let answer = call("POST", "/api/replay", Some(encode(control)?)).await?;
    decode(&expect(answer, 200)?)
}

/// `?host=H&` (percent-encoded) or nothing.
fn host_param(host: Option<&str>) -> String {
    host.map(|h| format!("host={}&", js_sys::encode_uri_component(h)))
        .unwrap_or_default()
}

/// `GET /api/history`: the stored series `only` names of `host` over the range, about `points`
/// each; of the jobs' series, only the job `job`'s when it is given.
pub async fn history(
    host: Option<&str>,
    from_ms: u64,
    to_ms: u64,
    points: usize,
    only: &str,
    job: Option<&str>,
) -> Result<shared::stored::Answer, ApiFailure> {
    let job = job
        .map(|j| format!("&job={}", js_sys::encode_uri_component(j)))
        .unwrap_or_default();
    let path = format!(
        "/api/history?{}from_ms={from_ms}&to_ms={to_ms}&points={points}&only={}{job}",
        host_param(host),
        js_sys::encode_uri_component(only)
    );
    decode(&expect(call("GET", &path, None).await?, 200)?)
}

/// `GET /api/history/moment`: the page at a stored moment.
pub async fn moment(host: Option<&str>, t_ms: u64) -> Result<shared::stored::Moment, ApiFailure> {
    let path = format!("/api/history/moment?{}t_ms={t_ms}", host_param(host));
    decode(&expect(call("GET", &path, None).await?, 200)?)
}

/// The address of an export of the range (`csv` or `ndjson`), for a download link.
pub fn export_href(host: Option<&str>, from_ms: u64, to_ms: u64, format: &str) -> String {
    format!(
        "/api/history/export?{}from_ms={from_ms}&to_ms={to_ms}&format={format}",
        host_param(host)
    )
}

/// `DELETE /api/shares/<id>`: revokes a link (admin only).
pub async fn revoke_share(id: &str) -> Result<(), ApiFailure> {
    let path = format!("/api/shares/{}", js_sys::encode_uri_component(id));
    expect(call("DELETE", &path, None).await?, 204).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_carry_the_servers_sentence() {
        let body =
            r#"{"error":"sharing_off","message":"the share store /x/shares.json is damaged"}"#;
        let f = refusal(503, body);
        assert_eq!(f.status(), Some(503));
        assert_eq!(f.to_string(), "the share store /x/shares.json is damaged");
    }

    #[test]
    fn a_body_that_is_not_an_api_error_gives_the_status() {
        assert_eq!(
            refusal(502, "<html>Bad gateway</html>").to_string(),
            "vramio answered HTTP 502"
        );
        assert_eq!(refusal(404, "").to_string(), "vramio answered HTTP 404");
        assert_eq!(ApiFailure::Network("x".into()).status(), None);
    }
}
