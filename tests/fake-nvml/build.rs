//! Declares `cfg(fake_nvml_legacy)`, which this package never sets: the same source built as
//! `fake-nvml-legacy` sets it to leave out the symbols drivers before R510 lack.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(fake_nvml_legacy)");
    println!("cargo::rerun-if-changed=build.rs");
}
