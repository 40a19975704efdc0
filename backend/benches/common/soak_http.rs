//! The soak's view of the hub from outside: its address and admin token (from the URL it
//! printed), one HTTP/1.1 request per connection with the token as a bearer header (hyper), and
//! what the checks read from the API: each host's state and the viewers count (`GET /api/health`,
//! polled by [`HealthWatch`]) and each host's newest seq (`GET /api/snapshot`).

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A request that takes longer than this counts as failed (the hub is on a busy machine).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The hub as a client reaches it.
#[derive(Clone)]
pub struct Api {
    /// `127.0.0.1:PORT`.
    pub authority: String,
    pub token: String,
}

pub struct Resp {
    pub status: u16,
    pub body: String,
}

/// What `GET /api/health` says of the fleet.
#[derive(Clone, Debug, Default)]
pub struct Health {
    /// Host name (`127.0.0.1:PORT` for a `ws://` peer) -> state (`up`, `down`, `connecting`,
    /// `stale`).
    pub hosts: BTreeMap<String, String>,
    /// WebSocket viewers the hub holds a permit for.
    pub viewers: u64,
}

impl Api {
    /// From the URL the hub printed: `http://127.0.0.1:PORT/?token=TOKEN`.
    pub fn from_url(url: &str) -> Api {
        let (base, token) = url.split_once("/?token=").expect("a URL with ?token=");
        let authority = base
            .strip_prefix("http://")
            .expect("an http:// URL")
            .to_owned();
        Api {
            authority,
            token: token.to_owned(),
        }
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.authority)
    }

    /// The hub's own origin, which a cookie-carrying upgrade must name.
    pub fn origin(&self) -> String {
        format!("http://{}", self.authority)
    }

    /// The port, which names the hub's cookies.
    pub fn port(&self) -> &str {
        self.authority.rsplit_once(':').map_or("80", |(_, p)| p)
    }

    /// `METHOD path` as the admin, with a JSON `body` if given.
    pub async fn call(&self, method: &str, path: &str, body: Option<&str>) -> Result<Resp, String> {
        tokio::time::timeout(CALL_TIMEOUT, self.call_once(method, path, body))
            .await
            .map_err(|_| format!("{method} {path}: no answer within {CALL_TIMEOUT:?}"))?
            .map_err(|e| format!("{method} {path}: {e}"))
    }

    async fn call_once(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<Resp, Box<dyn std::error::Error + Send + Sync>> {
        let tcp = tokio::net::TcpStream::connect(&self.authority).await?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(conn);
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.authority)
            .header("authorization", format!("Bearer {}", self.token));
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req.body(Full::new(Bytes::from(body.unwrap_or("").to_owned())))?;
        let resp = sender.send_request(req).await?;
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await?.to_bytes();
        Ok(Resp {
            status,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    pub async fn health(&self) -> Result<Health, String> {
        let r = self.call("GET", "/api/health", None).await?;
        let v: serde_json::Value =
            serde_json::from_str(&r.body).map_err(|e| format!("/api/health: {e}: {}", r.body))?;
        let hosts = v["hosts"]
            .as_array()
            .ok_or_else(|| format!("/api/health has no hosts: {}", r.body))?
            .iter()
            .filter_map(|h| {
                Some((
                    h["name"].as_str()?.to_owned(),
                    h["state"].as_str()?.to_owned(),
                ))
            })
            .collect();
        Ok(Health {
            hosts,
            viewers: v["viewers"].as_u64().unwrap_or(0),
        })
    }

    /// Each host's newest seq, from the fleet's `/api/snapshot` (hosts without a frame left out).
    pub async fn newest_seqs(&self) -> Result<BTreeMap<String, u64>, String> {
        let r = self.call("GET", "/api/snapshot", None).await?;
        let v: serde_json::Value = serde_json::from_str(&r.body)
            .map_err(|e| format!("/api/snapshot ({}): {e}", r.status))?;
        let hosts = v["hosts"]
            .as_object()
            .ok_or_else(|| format!("/api/snapshot has no hosts ({})", r.status))?;
        Ok(hosts
            .iter()
            .filter_map(|(name, snap)| Some((name.clone(), snap["frame"]["seq"].as_u64()?)))
            .collect())
    }
}

/// `/api/health`, polled: the newest answer and when it was asked for.
#[derive(Clone)]
pub struct HealthWatch {
    latest: Arc<Mutex<Option<(Instant, Health)>>>,
}

impl HealthWatch {
    /// Polls `api` every `every` until `stop`.
    pub fn start(api: Api, every: Duration, stop: CancellationToken) -> HealthWatch {
        let watch = HealthWatch {
            latest: Arc::default(),
        };
        let latest = watch.latest.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let asked = Instant::now();
                if let Ok(h) = api.health().await {
                    *latest.lock().expect("health lock") = Some((asked, h));
                }
            }
        });
        watch
    }

    /// The newest answer asked for after `after`, if any.
    pub fn since(&self, after: Instant) -> Option<Health> {
        match &*self.latest.lock().expect("health lock") {
            Some((asked, h)) if *asked >= after => Some(h.clone()),
            _ => None,
        }
    }

    pub fn latest(&self) -> Option<Health> {
        self.latest
            .lock()
            .expect("health lock")
            .as_ref()
            .map(|(_, h)| h.clone())
    }
}
