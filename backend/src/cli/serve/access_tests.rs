//! Access: one server per state directory, `--no-auth` touches none, the token is private and
//! kept, `server.json` lives as long as its guard.

use super::*;
use crate::access::server_file::SERVER_FILE;
use crate::access::token::TOKEN_FILE;
use crate::cli::serve::testutil::{TempDir, serve_args};
use std::os::unix::fs::PermissionsExt;

fn listening<'a>(endpoint: &'a Endpoint, base_url: &'a str) -> Listening<'a> {
    Listening {
        kind: ServerKind::Serve,
        peers: false,
        base_url,
        endpoint,
        tls_cert: None,
    }
}

fn loopback() -> Endpoint {
    Endpoint::Tcp {
        addr: "127.0.0.1:7575".parse().expect("addr"),
    }
}

fn error_of(r: anyhow::Result<Access>) -> String {
    match r {
        Ok(_) => panic!("opened"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn a_second_server_on_one_state_dir_is_refused_naming_the_first() {
    let tmp = TempDir::new("access-busy");
    let state = tmp.arg("state");
    let args = serve_args(&["--state-dir", &state]);
    let first = Access::open(&args).expect("the first opens");

    // Before the first writes server.json, the lock file names it.
    let e = error_of(Access::open(&args));
    let pid = std::process::id();
    assert!(
        e.contains(&format!("vramio (pid {pid}) is starting")),
        "{e}"
    );
    assert!(e.contains(&state), "names the directory: {e}");
    assert!(
        e.contains("--state-dir DIR"),
        "says how to run beside it: {e}"
    );

    let endpoint = loopback();
    let published = first.publish(listening(&endpoint, "http://127.0.0.1:7575"));
    let e = error_of(Access::open(&args));
    assert!(
        e.contains(&format!(
            "vramio serve (pid {pid}) serves http://127.0.0.1:7575"
        )),
        "{e}"
    );

    drop(published);
    drop(first);
    Access::open(&args).expect("opens once the first has gone");
}

#[test]
fn no_auth_makes_nothing_in_the_state_dir() {
    let tmp = TempDir::new("access-noauth");
    let state = tmp.path().join("state");
    let args = serve_args(&["--no-auth", "--state-dir", &tmp.arg("state")]);
    let access = Access::open(&args).expect("opens");
    assert!(access.token().is_none());
    assert!(access.state_dir().is_none());
    let endpoint = loopback();
    let published = access.publish(listening(&endpoint, "http://127.0.0.1:7575"));
    drop(published);
    assert!(!state.exists(), "no state directory with --no-auth");
    let auth = access.auth(HostPolicy::loopback_only(), false, None);
    assert!(!auth.enabled());
    assert!(auth.shares().off_reason().is_some(), "no share links");
}

#[test]
fn the_token_is_made_private_and_kept() {
    let tmp = TempDir::new("access-token");
    let args = serve_args(&["--state-dir", &tmp.arg("state")]);
    let first = Access::open(&args).expect("opens");
    let token = first.token().expect("a token").expose().to_owned();
    let file = tmp.path().join("state").join(TOKEN_FILE);
    let mode = std::fs::metadata(&file)
        .expect("token file")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let auth = first.auth(HostPolicy::loopback_only(), true, None);
    assert!(auth.enabled() && auth.tls());
    drop(first);

    let again = Access::open(&args).expect("opens again");
    assert_eq!(again.token().expect("a token").expose(), token, "reused");
}

#[test]
fn a_token_file_is_used_instead_of_the_state_dirs() {
    let tmp = TempDir::new("access-token-file");
    let own = tmp.path().join("admin");
    std::fs::write(&own, "0123456789abcdef0123456789abcdef").expect("write");
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let args = serve_args(&[
        "--state-dir",
        &tmp.arg("state"),
        "--token-file",
        &tmp.arg("admin"),
    ]);
    let access = Access::open(&args).expect("opens");
    assert_eq!(
        access.token().expect("a token").expose(),
        "0123456789abcdef0123456789abcdef"
    );
    assert!(!tmp.path().join("state").join(TOKEN_FILE).exists());
}

#[test]
fn server_json_lives_as_long_as_its_guard() {
    let tmp = TempDir::new("access-server-file");
    let args = serve_args(&["--state-dir", &tmp.arg("state")]);
    let access = Access::open(&args).expect("opens");
    let endpoint = loopback();
    let published = access.publish(Listening {
        kind: ServerKind::Hub,
        peers: true,
        ..listening(&endpoint, "http://127.0.0.1:7575")
    });
    let dir = access.state_dir().expect("a state dir");
    let file = ServerFile::read(dir).expect("reads").expect("written");
    assert_eq!(file.pid, std::process::id());
    assert_eq!(file.kind, Some(ServerKind::Hub));
    assert!(file.peers);
    assert_eq!(file.base_url, "http://127.0.0.1:7575");
    assert_eq!(file.endpoint, endpoint);
    drop(published);
    assert!(!dir.file(SERVER_FILE).exists(), "removed at exit");
}

#[test]
fn flags_that_open_the_data_to_all_are_refused() {
    let tmp = TempDir::new("access-exposure");
    let state = tmp.arg("state");
    let e = error_of(Access::open(&serve_args(&[
        "--no-auth",
        "--bind",
        "0.0.0.0",
        "--state-dir",
        &state,
    ])));
    assert!(e.contains("without authentication"), "{e}");
    let e = error_of(Access::open(&serve_args(&[
        "--metrics-public",
        "--public-url",
        "https://gpu7.lab.example",
        "--state-dir",
        &state,
    ])));
    assert!(e.contains("refusing --metrics-public"), "{e}");
    let e = error_of(Access::open(&serve_args(&[
        "--no-auth",
        "--metrics-token-file",
        &tmp.arg("missing"),
    ])));
    assert!(e.contains("--metrics-token-file"), "{e}");
}
