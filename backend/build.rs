//! Tells cargo when to rebuild for the frontend bundle; writes nothing (rust-embed's
//! `allow_missing` compiles without `frontend/dist`, and the server then explains how to build it).
//!
//! A release build embeds what `frontend/dist` holds when it compiles, so it must rerun when
//! `cargo xtask bundle` writes the bundle: watch the folder when it exists, else its parent (to
//! see it appear). Debug builds read the files from disk and need no rebuild for a new bundle.

use std::path::Path;

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if manifest.join("../frontend/dist").is_dir() {
        println!("cargo::rerun-if-changed=../frontend/dist");
    } else {
        println!("cargo::rerun-if-changed=../frontend");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
