//! Test kit for the serving parts: `ServeArgs` from a command line as a person types it, and a
//! throwaway directory.

use crate::cli::flags::{Cli, Command, ServeArgs};
use clap::Parser;
use std::path::{Path, PathBuf};

/// The flags of `vramio serve FLAGS...`.
pub fn serve_args(flags: &[&str]) -> ServeArgs {
    let line = ["vramio", "serve"].into_iter().chain(flags.iter().copied());
    match Cli::try_parse_from(line)
        .expect("flags parse")
        .into_command()
    {
        Command::Serve(args) => args,
        _ => panic!("not serve"),
    }
}

/// A directory under the system's temp dir, removed with everything in it on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).expect("random");
        let path = std::env::temp_dir().join(format!("vramio-{tag}-{:x}", u64::from_le_bytes(b)));
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `path` inside, as a flag value.
    pub fn arg(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
