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

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFile {
    pub pid: u32,
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

    /// Removes the file if this process wrote it (another server may have started since).
    pub fn remove_if_mine(dir: &StateDir) {
        if let Ok(Some(f)) = ServerFile::read(dir)
            && f.pid == std::process::id()
        {
            let _ = dir.remove(SERVER_FILE);
        }
    }
}
