//! The soak's share-link viewer: makes a link with the admin API (`POST /api/shares`, every other
//! one for a single host), opens `/ws` with the link's view cookie and the hub's own Origin, reads
//! it as a fast viewer, revokes the link (`DELETE /api/shares/<id>`) after 15 to 40 s and checks
//! that the session ends with close code 4403 within [`CLOSE_WITHIN`]; then makes another.

use super::soak_http::Api;
use super::soak_rng::Rng;
use super::soak_viewers::{Read, Viewer, Ws, open, read_one};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The close code of a session whose share link ended (`CLOSE_SHARE_ENDED` in the server).
pub const SHARE_ENDED: u16 = 4403;
/// A revoked link's session must be closed this soon after the `DELETE` is answered.
pub const CLOSE_WITHIN: Duration = Duration::from_secs(5);

/// One link's life.
#[derive(Debug)]
pub struct Cycle {
    pub host: Option<String>,
    /// Messages read before the revoke.
    pub messages: u64,
    /// From the `DELETE`'s answer to the close with 4403; `Err` says what happened instead.
    pub closed: Result<Duration, String>,
}

/// Cycles links until `stop`; returns each one's outcome.
pub async fn run(
    api: Api,
    v: Arc<Viewer>,
    hosts: Vec<String>,
    mut rng: Rng,
    stop: CancellationToken,
) -> Vec<Cycle> {
    let mut cycles = Vec::new();
    while !stop.is_cancelled() {
        let host = (cycles.len() % 2 == 1).then(|| hosts[rng.below(hosts.len())].clone());
        let hold = rng.secs(15.0, 40.0);
        cycles.push(cycle(&api, &v, host, hold, &stop).await);
        tokio::select! {
            () = stop.cancelled() => {}
            () = tokio::time::sleep(rng.secs(1.0, 3.0)) => {}
        }
    }
    cycles
}

async fn cycle(
    api: &Api,
    v: &Viewer,
    host: Option<String>,
    hold: Duration,
    stop: &CancellationToken,
) -> Cycle {
    let mut c = Cycle {
        host: host.clone(),
        messages: 0,
        closed: Err("not opened".into()),
    };
    let (id, cookie) = match create(api, host.as_deref()).await {
        Ok(link) => link,
        Err(e) => {
            c.closed = Err(e);
            return c;
        }
    };
    let headers = [("cookie", cookie), ("origin", api.origin())];
    let mut ws = match open(api, &headers, None).await {
        Ok(ws) => ws,
        Err(e) => {
            c.closed = Err(format!("open: {e}"));
            let _ = api.call("DELETE", &format!("/api/shares/{id}"), None).await;
            return c;
        }
    };
    // Each link is a new session that resumes nothing: its first frames may start anywhere.
    v.seen().connected(false);
    let revoke_at = tokio::time::sleep(hold);
    tokio::pin!(revoke_at);
    loop {
        tokio::select! {
            () = &mut revoke_at => break,
            () = stop.cancelled() => break,
            read = read_one(&mut ws, v) => match read {
                Read::Message => c.messages += 1,
                Read::Closed(code, why) => {
                    c.closed = Err(format!("closed ({code:?}) before the revoke: {why}"));
                    let _ = api.call("DELETE", &format!("/api/shares/{id}"), None).await;
                    return c;
                }
            },
        }
    }
    c.closed = revoke_and_wait(api, &id, &mut ws, v).await;
    c
}

/// `POST /api/shares` (for `host`, if given): the link's id and its view cookie
/// (`vramio-PORT-view=ID.SECRET`, what `POST /api/claim` would set).
async fn create(api: &Api, host: Option<&str>) -> Result<(String, String), String> {
    let mut body = serde_json::json!({ "expires_s": 3600, "label": "soak" });
    if let Some(h) = host {
        body["host"] = h.into();
    }
    let r = api
        .call("POST", "/api/shares", Some(&body.to_string()))
        .await?;
    if r.status != 201 {
        return Err(format!("POST /api/shares: {} {}", r.status, r.body));
    }
    let info: shared::access::ShareInfo =
        serde_json::from_str(&r.body).map_err(|e| format!("share: {e}: {}", r.body))?;
    let (_, rest) = info
        .url
        .rsplit_once("/s/")
        .ok_or_else(|| format!("a link without /s/: {}", info.url))?;
    let (id, secret) = rest
        .split_once('#')
        .ok_or_else(|| format!("a link without #: {}", info.url))?;
    Ok((
        id.to_owned(),
        format!("vramio-{}-view={id}.{secret}", api.port()),
    ))
}

/// Revokes link `id` and reads `ws` until it closes: `Ok(time from the answer to the close)`
/// for a close with 4403 within [`CLOSE_WITHIN`].
async fn revoke_and_wait(api: &Api, id: &str, ws: &mut Ws, v: &Viewer) -> Result<Duration, String> {
    let r = api
        .call("DELETE", &format!("/api/shares/{id}"), None)
        .await?;
    let revoked = Instant::now();
    if r.status != 204 {
        return Err(format!("DELETE /api/shares/{id}: {} {}", r.status, r.body));
    }
    let deadline = tokio::time::sleep(CLOSE_WITHIN);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => return Err(format!("still open {CLOSE_WITHIN:?} after the revoke")),
            read = read_one(ws, v) => match read {
                Read::Message => {}
                Read::Closed(Some(SHARE_ENDED), _) => return Ok(revoked.elapsed()),
                Read::Closed(code, why) => {
                    return Err(format!("closed with {code:?} ({why}), not {SHARE_ENDED}"));
                }
            },
        }
    }
}
