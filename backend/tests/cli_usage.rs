//! Configuration that cannot work is refused before anything starts, with exit 64 (EX_USAGE) and
//! a message that names the problem: a peers file that names no peer, thresholds that are not
//! finite or whose warning level is past the critical one; TLS flags on a Unix socket. And
//! `--version` names the build.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use vramio_bin::{TempDir, run};

#[test]
fn a_peers_file_of_no_peer_is_refused() {
    let dir = TempDir::new("empty-peers");
    let peers = dir.join("peers");
    std::fs::write(&peers, "# nothing yet\n\n   \n").expect("peers file");
    let peers_s = peers.to_string_lossy().into_owned();
    let state = dir.join("state").to_string_lossy().into_owned();
    let r = run(&[
        "hub",
        "--peers",
        &peers_s,
        "--port",
        "0",
        "--state-dir",
        &state,
    ]);
    assert_eq!(r.status.code(), Some(64), "{r:?}");
    assert!(
        r.stderr.contains(&peers_s) && r.stderr.contains("names no peer"),
        "{r:?}"
    );
}

#[test]
fn thresholds_that_cannot_work_are_refused_naming_the_key() {
    let dir = TempDir::new("bad-thresholds");
    for (text, key) in [
        ("gpu_mem_warn_pct = nan\n", "gpu_mem_warn_pct"),
        ("disk_full_horizon_s = inf\n", "disk_full_horizon_s"),
        (
            "disk_warn_pct = 95.0\ndisk_crit_pct = 90.0\n",
            "disk_crit_pct",
        ),
    ] {
        let file = dir.join("t.toml");
        std::fs::write(&file, text).expect("thresholds");
        let file_s = file.to_string_lossy().into_owned();
        let r = run(&["check", "--thresholds", &file_s, "--window", "1s"]);
        assert_eq!(r.status.code(), Some(64), "{text}: {r:?}");
        assert!(r.stderr.contains(key), "{text}: {r:?}");
    }
}

#[test]
fn tls_flags_on_a_unix_socket_are_refused() {
    // The socket serves plain HTTP (ssh forwards it): TLS flags there would make the server
    // believe its page is https:// and refuse the page's own WebSocket.
    let dir = TempDir::new("unix-tls");
    let sock = format!("unix:{}", dir.join("v.sock").display());
    let cert = dir.join("c.pem").to_string_lossy().into_owned();
    let r = run(&[
        "serve",
        "--listen",
        &sock,
        "--tls-cert",
        &cert,
        "--tls-key",
        &cert,
    ]);
    assert_eq!(r.status.code(), Some(64), "{r:?}");
    assert!(
        r.stderr.contains("--listen") && r.stderr.contains("--tls-cert"),
        "names both flags: {r:?}"
    );
    assert!(!dir.join("v.sock").exists(), "nothing was bound");
}

/// `--version` says which build this is: the version, the commit it was built from, the target
/// and the glibc it needs, so a report from a cluster names the binary exactly.
#[test]
fn version_names_the_commit_the_target_and_the_glibc() {
    let r = run(&["--version"]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let line = r.stdout.trim();
    let expected_start = format!("vramio {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(line.starts_with(&expected_start), "{line}");
    let commit = line[expected_start.len()..]
        .split(',')
        .next()
        .unwrap_or_default();
    // The commit git sees here (the tests build from this checkout), or `unknown` without git.
    let git = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    assert_eq!(commit, git.as_deref().unwrap_or("unknown"), "{line}");
    let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    assert!(line.contains(&format!(", {target}, glibc ")), "{line}");
    assert!(line.ends_with(')'), "{line}");
}
