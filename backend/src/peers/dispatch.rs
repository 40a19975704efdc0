//! From a peers line to the [`Link`] that reaches it: [`WsLink`] for `ws://` / `wss://`,
//! [`SshLink`] for `ssh://`. The token and CA files
//! are read here, once, so a bad one is an error at startup rather than a down reason later.

use super::life::Link;
use super::spec::{PeerLine, PeerSpec};
use super::ssh::SshLink;
use super::ws::{WsError, WsLink};
use crate::access::token::Token;
use std::path::PathBuf;
use std::time::Duration;

/// What every peer of a hub shares, from its flags.
#[derive(Clone, Debug, Default)]
pub struct LinkOptions {
    /// The hub's sampling interval (the read timeout of ws links follows it).
    pub interval: Duration,
    /// `--peer-token-file`: the token for ws/wss peers whose line names no `token-file=`.
    pub token_file: Option<PathBuf>,
    /// `--peer-ca`: the only root trusted for wss peers (else the system's roots).
    pub ca: Option<PathBuf>,
    /// `--ssh-config`: passed to ssh as `-F`.
    pub ssh_config: Option<PathBuf>,
    /// `--remote-command`: what ssh runs on the peer (default `vramio stream`).
    pub remote_command: Option<String>,
}

/// The link for `line`. A token file must be private to this user (0600, like an ssh key), or
/// it is refused.
pub fn link_for(line: &PeerLine, options: &LinkOptions) -> Result<Box<dyn Link>, WsError> {
    match &line.spec {
        PeerSpec::Ssh { user, host, port } => {
            let mut link = SshLink::new(user.clone(), host.clone(), *port)
                .ssh_config(options.ssh_config.clone());
            if let Some(cmd) = &options.remote_command {
                link = link.remote_command(cmd.clone());
            }
            Ok(Box::new(link))
        }
        spec @ PeerSpec::Ws { .. } => {
            let token = line
                .token_file
                .as_ref()
                .or(options.token_file.as_ref())
                .map(|f| Token::from_file(f))
                .transpose()?;
            Ok(Box::new(WsLink::new(
                spec,
                token,
                options.ca.clone(),
                options.interval,
            )?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn line(peer: &str, token_file: Option<PathBuf>) -> PeerLine {
        PeerLine {
            spec: PeerSpec::parse(peer).expect("a peer"),
            token_file,
        }
    }

    #[test]
    fn token_files_must_be_private_and_the_line_wins_over_the_flag() {
        let dir = std::env::temp_dir().join(format!("vramio-dispatch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let open = dir.join("loose");
        std::fs::write(&open, "a".repeat(64)).expect("write");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let private = dir.join("private");
        std::fs::write(&private, "b".repeat(64)).expect("write");
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).expect("chmod");

        let flag = |f: &PathBuf| LinkOptions {
            interval: Duration::from_secs(1),
            token_file: Some(f.clone()),
            ..LinkOptions::default()
        };
        let e = link_for(&line("ws://h:1", None), &flag(&open)).err();
        assert!(
            e.as_ref()
                .is_some_and(|e| e.to_string().contains("is open to other users")),
            "a world-readable token file is refused: {e:?}"
        );
        assert!(link_for(&line("ws://h:1", None), &flag(&private)).is_ok());
        assert!(link_for(&line("ws://h:1", Some(private.clone())), &flag(&open)).is_ok());
        assert!(link_for(&line("ws://h:1", Some(open)), &flag(&private)).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
