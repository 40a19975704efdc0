//! `server.json` in the state directory: where the running server listens, so `vramio url` and
//! `vramio share` reach it with the token from the same directory. Written (0600) once the server
//! listens, removed when it stops; a file left by a killed server is recognised by its dead pid.

use super::state_dir::{StateDir, StateDirError};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub const SERVER_FILE: &str = "server.json";

/// Where a server listens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Endpoint {
    Tcp { addr: std::net::SocketAddr },
    Unix { path: PathBuf },
}

/// Which command wrote a server file: `vramio stream` relays a live `serve` and nothing else (a
/// hub's frames are other machines', a replay's are recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    /// `vramio serve`: samples this host (with `peers`, it also shows other hosts).
    Serve,
    /// `vramio hub`: other hosts only.
    Hub,
    /// `vramio replay`: recorded frames.
    Replay,
}

impl ServerKind {
    pub fn command(self) -> &'static str {
        match self {
            ServerKind::Serve => "vramio serve",
            ServerKind::Hub => "vramio hub",
            ServerKind::Replay => "vramio replay",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFile {
    pub pid: u32,
    /// The command that serves; absent in files of versions before it was recorded (such a file
    /// is never relayed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ServerKind>,
    /// Whether it shows other hosts too (`serve --peer`, a hub): its stream is many hosts'.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub peers: bool,
    /// The URL people open, without the token and without a trailing slash.
    pub base_url: String,
    pub endpoint: Endpoint,
    /// The certificate it serves under TLS: clients of this machine pin it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerFileError {
    #[error(transparent)]
    State(#[from] StateDirError),
    #[error("{} is not a vramio server file: {problem}", path.display())]
    Malformed { path: PathBuf, problem: String },
}

impl ServerFile {
    pub fn write(&self, dir: &StateDir) -> Result<(), StateDirError> {
        let body = serde_json::to_vec_pretty(self).unwrap_or_default();
        dir.write_atomic(SERVER_FILE, &body)
    }

    /// The server file, if one is there (alive or not: see [`ServerFile::is_alive`]).
    pub fn read(dir: &StateDir) -> Result<Option<ServerFile>, ServerFileError> {
        let Some(bytes) = dir.read(SERVER_FILE).map_err(ServerFileError::State)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ServerFileError::Malformed {
                path: dir.file(SERVER_FILE),
                problem: e.to_string(),
            })
    }

    /// Whether its process still runs.
    pub fn is_alive(&self) -> bool {
        i32::try_from(self.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
    }

    /// Whether `vramio stream` may pipe this server's stream as this host's live data: a live
    /// `serve` of this host alone.
    pub fn relayable(&self) -> bool {
        self.kind == Some(ServerKind::Serve) && !self.peers
    }

    /// Removes the file if this process wrote it (another server may have started since).
    pub fn remove_if_mine(dir: &StateDir) {
        if let Ok(Some(f)) = ServerFile::read(dir)
            && f.pid == std::process::id()
        {
            let _ = dir.remove(SERVER_FILE);
        }
    }
}
