//! `cargo xtask cli-docs`: rewrites docs/cli.md from vramio's clap definitions by running
//! `backend/tests/cli_docs.rs` with `VRAMIO_UPDATE_CLI_DOCS=1`; the same test, run without it by
//! `cargo test`, fails while the file is stale.

use super::{cargo, root, status};
use anyhow::Result;

/// `cargo xtask cli-docs`.
pub fn run() -> Result<()> {
    let mut c = cargo();
    c.args(["test", "--package", "vramio", "--test", "cli_docs"])
        .env("VRAMIO_UPDATE_CLI_DOCS", "1");
    status(c)?;
    eprintln!("xtask: wrote {}", root().join("docs/cli.md").display());
    Ok(())
}
