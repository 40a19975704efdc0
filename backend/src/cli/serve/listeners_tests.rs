//! Listeners: what each flag binds, the URL it prints, and the `Host`s it answers to.

use super::*;
use crate::cli::serve::testutil::{TempDir, serve_args};
use std::os::unix::fs::PermissionsExt;

async fn bind(flags: &[&str]) -> Listener {
    let args = serve_args(flags);
    let tls = Tls::load(&args).expect("tls");
    Listener::bind(&args, tls).await.expect("binds")
}

fn tcp_port(l: &Listener) -> u16 {
    match l.endpoint() {
        Endpoint::Tcp { addr } => addr.port(),
        Endpoint::Unix { .. } => panic!("not tcp"),
    }
}

#[tokio::test]
async fn port_0_on_loopback_binds_a_free_port_and_names_it() {
    let l = bind(&["--port", "0"]).await;
    let port = tcp_port(&l);
    assert_ne!(port, 0);
    assert!(!l.beyond_loopback() && !l.tls());
    assert_eq!(l.base_url(None), format!("http://127.0.0.1:{port}"));
    tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("it listens");
}

#[tokio::test]
async fn an_unspecified_bind_is_beyond_loopback_and_shows_loopback() {
    let l = bind(&["--bind", "0.0.0.0", "--port", "0"]).await;
    assert!(l.beyond_loopback());
    assert_eq!(
        l.base_url(None),
        format!("http://127.0.0.1:{}", tcp_port(&l))
    );
    let v6 = Endpoint::Tcp {
        addr: "[::]:7575".parse().expect("addr"),
    };
    assert_eq!(base_url(&v6, "https", None), "https://127.0.0.1:7575");
}

#[tokio::test]
async fn tls_is_https() {
    let tmp = TempDir::new("listen-tls");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("cert");
    std::fs::write(tmp.path().join("cert.pem"), ck.cert.pem()).expect("write cert");
    std::fs::write(tmp.path().join("key.pem"), ck.signing_key.serialize_pem()).expect("write key");
    let (cert, key) = (tmp.arg("cert.pem"), tmp.arg("key.pem"));
    let l = bind(&["--port", "0", "--tls-cert", &cert, "--tls-key", &key]).await;
    assert!(l.tls());
    assert_eq!(
        l.base_url(None),
        format!("https://127.0.0.1:{}", tcp_port(&l))
    );

    let args = serve_args(&["--tls-cert", &key, "--tls-key", &key]);
    assert!(Tls::load(&args).is_err(), "a key is not a certificate");
}

#[tokio::test]
async fn a_unix_socket_is_private_and_shows_the_ssh_forward() {
    let tmp = TempDir::new("listen-unix");
    let listen = format!("unix:{}", tmp.arg("vramio.sock"));
    let l = bind(&["--listen", &listen]).await;
    let Endpoint::Unix { path } = l.endpoint() else {
        panic!("not a unix socket");
    };
    assert!(path.is_absolute() && path.ends_with("vramio.sock"));
    let mode = std::fs::metadata(path)
        .expect("socket")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert!(!l.beyond_loopback());
    assert_eq!(l.base_url(None), "http://localhost:7575");
}

#[test]
fn the_public_url_is_what_people_open() {
    let public = Some("https://gpu7.lab.example");
    let tcp = Endpoint::Tcp {
        addr: "127.0.0.1:7575".parse().expect("addr"),
    };
    let unix = Endpoint::Unix {
        path: "/run/vramio.sock".into(),
    };
    assert_eq!(base_url(&tcp, "http", public), "https://gpu7.lab.example");
    assert_eq!(base_url(&unix, "http", public), "https://gpu7.lab.example");
    assert_eq!(base_url(&tcp, "http", None), "http://127.0.0.1:7575");
}

#[test]
fn machine_names_are_allowed_only_beyond_loopback() {
    let public = Some("https://Proxy.Example:8443");
    let local = host_policy(false, "GPU3", public, || panic!("not asked on loopback"));
    assert!(!local.any_ip);
    assert_eq!(local.names, ["proxy.example"]);
    assert!(local.allows("localhost") && local.allows("proxy.example"));
    assert!(!local.allows("gpu3") && !local.allows("10.0.0.3"));

    let open = host_policy(true, "GPU3", None, || vec!["gpu3.lab.example".to_owned()]);
    assert!(open.any_ip);
    assert_eq!(open.names, ["gpu3", "gpu3.lab.example"]);
    assert!(open.allows("gpu3.lab.example") && open.allows("10.0.0.3"));
    assert!(!open.allows("gpu3.lab.example.evil") && !open.allows("gpu4"));
}
