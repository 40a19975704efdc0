//! Builds the fake NVML as a driver before R510: sets `cfg(fake_nvml_legacy)`, so the library
//! exports `nvmlDeviceGetMemoryInfo` and the `_v2` process lists but not their successors. A cfg,
//! not a Cargo feature: features of the two fakes would be unified as dev-dependencies of one crate.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(fake_nvml_legacy)");
    println!("cargo::rustc-cfg=fake_nvml_legacy");
    println!("cargo::rerun-if-changed=build.rs");
}
