//! Makes sure the frontend bundle folder exists so `rust-embed` compiles before the first
//! `cargo xtask` build; an empty folder embeds nothing and the server explains how to build it.

fn main() {
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../frontend/dist");
    if let Err(e) = std::fs::create_dir_all(&dist) {
        println!("cargo::warning=cannot create {}: {e}", dist.display());
    }
    println!("cargo::rerun-if-changed=../frontend/dist");
}
