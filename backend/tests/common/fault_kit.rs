//! Helpers of the fault-injection tests (`fault_*.rs`): admin requests to a running
//! `vramio serve` with its bearer token (one that may fail, for a server being killed), and a
//! seeded random source for the moments faults strike, so a failing run can be repeated.
//! Include after `vramio_bin` with `#[path = "common/fault_kit.rs"] mod fault_kit;`.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use super::vramio_bin::{Resp, Server, send};
use std::time::Duration;

/// One request may take this long; past it, the server is taken for hung.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// `METHOD path` with the admin bearer token and the server's own `Host`; `Err` says why no
/// answer came (refused, reset, cut short).
pub async fn try_admin(s: &Server, method: &str, path: &str, body: &str) -> Result<Resp, String> {
    let auth = format!("Bearer {}", s.token());
    let mut headers = vec![("host", s.authority()), ("authorization", auth.as_str())];
    if !body.is_empty() {
        headers.push(("content-type", "application/json"));
    }
    let ask = async {
        let tcp = tokio::net::TcpStream::connect(s.authority())
            .await
            .map_err(|e| format!("connect: {e}"))?;
        send(tcp, method, path, &headers, body)
            .await
            .map_err(|e| e.to_string())
    };
    match tokio::time::timeout(REQUEST_DEADLINE, ask).await {
        Ok(r) => r,
        Err(_) => panic!("{method} {path} got no answer within {REQUEST_DEADLINE:?}: a hang"),
    }
}

/// [`try_admin`] to a server that must answer.
pub async fn admin(s: &Server, method: &str, path: &str, body: &str) -> Resp {
    try_admin(s, method, path, body)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// splitmix64, seeded from `VRAMIO_FAULT_SEED` or `default`; the seed is printed, so a failure
/// can be replayed with it.
pub struct Rng(u64);

impl Rng {
    pub fn seeded(test: &str, default: u64) -> Rng {
        let seed = std::env::var("VRAMIO_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default);
        eprintln!("{test}: seed {seed} (set VRAMIO_FAULT_SEED to replay another)");
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A duration in `[lo, hi)` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.next() % (hi - lo).max(1))
    }
}
