//! The flags of the commands that talk to a running server: `url` and `share`.

use super::AccessArgs;
use super::parse_window;
use clap::{Args, Subcommand};
use std::time::Duration;

/// Flags of the commands that talk to a running server.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    #[command(flatten)]
    pub access: AccessArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ShareArgs {
    #[command(subcommand)]
    pub command: ShareCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ShareCommand {
    /// Create a read-only link; its last output line is the URL.
    Create {
        /// How long the link works (at most 30 days).
        #[arg(long, default_value = "24h", value_parser = parse_share_expiry)]
        expires: Duration,
        /// A note for the list (who it is for).
        #[arg(long)]
        label: Option<String>,
        /// Let the viewer see user names (hidden by default).
        #[arg(long)]
        show_users: bool,
        /// On a hub: show only this host (every host by default).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Show live data only: no stored history (ranges, rewinds, exports, whole runs).
        #[arg(long)]
        live_only: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List the active links.
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Revoke one link by its id, or every link with --all (a new signing key).
    Revoke {
        /// The link's id, as `share list` shows it (base64url: it may start with `-`).
        #[arg(
            required_unless_present = "all",
            conflicts_with = "all",
            allow_hyphen_values = true
        )]
        id: Option<String>,
        /// Revoke every link: a new signing key ends them all.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
}

impl ShareCommand {
    /// Where the command finds the server.
    pub fn client(&self) -> &ClientArgs {
        match self {
            ShareCommand::Create { client, .. }
            | ShareCommand::List { client }
            | ShareCommand::Revoke { client, .. } => client,
        }
    }
}

fn parse_share_expiry(s: &str) -> Result<Duration, String> {
    let d = parse_window(s)?;
    if d.as_secs() > shared::access::MAX_SHARE_SECS {
        return Err(format!(
            "{s} is longer than the 30 days a share link may live"
        ));
    }
    if d.as_secs() == 0 {
        return Err("a share link must live at least one second".into());
    }
    Ok(d)
}
