//! A server listening beyond loopback answers to every name of its machine (hostname, short name,
//! FQDN) as well as to its `--name`: with `--name` set, the machine's own hostname got 403. Any
//! other name is still refused (DNS rebinding).

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use vramio_bin::{Server, TempDir, http};

#[tokio::test]
async fn the_machines_names_and_the_given_name_are_served() {
    let tmp = TempDir::new("host-names");
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let s = Server::start(
        &tmp.join("state"),
        script.path(),
        &["--bind", "0.0.0.0", "--port", "0", "--name", "renamed-node"],
    );
    let port = s.port();
    let local = format!("127.0.0.1:{port}");
    let bearer = format!("Bearer {}", s.token());
    let node = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .to_ascii_lowercase();
    let short = node.split('.').next().unwrap_or(&node).to_owned();
    for (name, want) in [
        (node.as_str(), 200),
        (short.as_str(), 200),
        ("renamed-node", 200),
        ("rebound.attacker.example", 403),
    ] {
        let host = format!("{name}:{port}");
        let got = http(
            &local,
            "GET",
            "/api/health",
            &[("host", &host), ("authorization", &bearer)],
            "",
        )
        .await;
        let status = if got.status == 503 { 200 } else { got.status };
        assert_eq!(status, want, "Host: {host}: {}", got.text());
    }
}
