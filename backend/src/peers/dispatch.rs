//! From a peers line to the [`Link`] that reaches it: [`WsLink`] for `ws://` / `wss://`, and for
//! `ssh://` a link that ends at once until this build has the SSH link. The token and CA files
//! are read here, once, so a bad one is an error at startup rather than a down reason later.

use super::PeerSink;
use super::feed::Feed;
use super::life::Link;
use super::spec::{PeerLine, PeerSpec};
use super::ws::{WsError, WsLink};
use crate::access::token::Token;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
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
}

/// The link for `line`. A token file must be private to this user (0600, like an ssh key), or
/// it is refused.
pub fn link_for(line: &PeerLine, options: &LinkOptions) -> Result<Box<dyn Link>, WsError> {
    match &line.spec {
        PeerSpec::Ssh { .. } => Ok(Box::new(Unsupported(
            "ssh peers are not supported in this build",
        ))),
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

/// A link that cannot run here: it ends at once with its reason.
struct Unsupported(&'static str);

impl Link for Unsupported {
    fn run<'a>(
        &'a mut self,
        _feed: &'a mut Feed,
        _sink: &'a dyn PeerSink,
    ) -> Pin<Box<dyn Future<Output = String> + Send + 'a>> {
        let reason = self.0.to_owned();
        Box::pin(async move { reason })
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
            ca: None,
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

    #[tokio::test]
    async fn an_ssh_link_ends_at_once_with_why() {
        struct Nothing;
        impl PeerSink for Nothing {
            fn link(&self, _: shared::HostState, _: Option<String>) {}
            fn frame(&self, _: shared::Frame) {}
            fn diagnosis(&self, _: shared::diagnosis::Diagnosis) {}
        }
        let mut link = link_for(&line("ssh://gpu1", None), &LinkOptions::default()).expect("link");
        let reason = link.run(&mut Feed::default(), &Nothing).await;
        assert_eq!(reason, "ssh peers are not supported in this build");
    }
}
