//! vramio's access features end to end, through the real binary (docs/architecture.md#4-commands-and-flags and docs/security.md#1-the-model-in-short):
//! `vramio url` and `vramio share` against a running `vramio serve`, the token across restarts
//! and from `--token-file`, share links claimed and revoked over HTTP and WebSocket, user names
//! kept from viewers, the Unix socket, TLS, the state directory's checks and a bind beyond
//! loopback.
//!
//! Every server gets its own `--state-dir` in a temp dir (never the user's), listens on
//! 127.0.0.1 (port 0, or a free port where a restart must keep it), and is killed when its guard
//! drops.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/share_link.rs"]
mod share_link;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;
#[path = "common/ws_viewer.rs"]
mod ws_viewer;

use share_link::{claim, claim_status, create_share, get, ws};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vramio_bin::{Run, Server, TempDir, http, listening_tcp, run, send, wait_for};
use ws_viewer::{Got, frames_of, me_with_user, my_process, next, until, ws_over};

const NO_SERVER: &str = "no vramio server is running";

/// A temp dir holding a state directory (created by the server) and a fake-NVML script whose
/// one GPU process is this test process.
struct Setup {
    tmp: TempDir,
    state: PathBuf,
    script: PathBuf,
}

fn setup(what: &str) -> Setup {
    let tmp = TempDir::new(what);
    let state = tmp.join("state");
    let script = tmp.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    Setup { tmp, state, script }
}

impl Setup {
    fn serve(&self, args: &[&str]) -> Server {
        Server::start(&self.state, &self.script, args)
    }
    fn state(&self) -> &str {
        self.state.to_str().expect("a UTF-8 temp path")
    }
    /// `vramio ARGS --state-dir STATE`.
    fn cli(&self, args: &[&str]) -> Run {
        let mut all = args.to_vec();
        all.extend(["--state-dir", self.state()]);
        run(&all)
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn assert_no_server(r: &Run, what: &str) {
    assert!(!r.ok(), "{what} succeeded: {r:?}");
    assert!(r.stderr.contains(NO_SERVER), "{what}: {}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_repeats_the_startup_url_and_says_when_no_server_runs() {
    let t = setup("url");
    let s = t.serve(&["--port", "0"]);
    assert!(
        s.startup[0].contains("serving on http://127.0.0.1:"),
        "{:?}",
        s.startup
    );
    let r = t.cli(&["url"]);
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.last_line(), s.url);
    assert_eq!(s.token().len(), 64, "256 bits as hex");
    assert!(
        !s.stderr().contains(s.token()),
        "the token is printed only in the URL"
    );
    let status = s.terminate();
    assert!(status.success(), "SIGTERM is a clean stop: {status}");
    assert!(
        !t.state.join("server.json").exists(),
        "the server file is removed on stop"
    );
    assert_no_server(&t.cli(&["url"]), "url after stop");
    assert_no_server(&t.cli(&["share", "list"]), "share list after stop");

    // A killed server leaves its file behind; its dead pid gives it away.
    let s = t.serve(&["--port", "0"]);
    drop(s);
    assert!(t.state.join("server.json").exists());
    assert_no_server(&t.cli(&["url"]), "url after SIGKILL");

    let never = t.tmp.join("never-served");
    let never = never.to_str().expect("UTF-8");
    assert_no_server(&run(&["url", "--state-dir", never]), "url, fresh state dir");
    assert_no_server(
        &run(&["share", "list", "--state-dir", never]),
        "share list, fresh",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_survives_a_restart_and_a_token_file_must_be_private() {
    let t = setup("token");
    let port = free_port().to_string();
    let first = t.serve(&["--port", &port]);
    let url = first.url.clone();
    first.terminate();
    let again = t.serve(&["--port", &port]);
    assert_eq!(again.url, url, "same state dir, same port: same URL");
    let old_token = again.token().to_owned();
    again.terminate();

    let file = t.tmp.join("my-token");
    let mine = "team-token_0123456789.abcdefghijklmnop";
    std::fs::write(&file, format!("{mine}\n")).expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let f = file.to_str().expect("UTF-8");
    let s = t.serve(&["--port", "0", "--token-file", f]);
    assert_eq!(s.token(), mine, "--token-file is the token");
    assert_eq!(t.cli(&["url", "--token-file", f]).last_line(), s.url);
    let bearer = format!("Bearer {mine}");
    let ok = wait_for(
        Duration::from_secs(10),
        "health with the file's token",
        || async {
            let r = get(&s, "/api/health", &[("authorization", &bearer)]).await;
            (r.status == 200).then_some(r)
        },
    )
    .await;
    assert_eq!(ok.json()["status"], "up");
    let stale = format!("Bearer {old_token}");
    assert_eq!(
        get(&s, "/api/health", &[("authorization", &stale)])
            .await
            .status,
        401
    );
    drop(s);

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let r = t.cli(&["serve", "--port", "0", "--token-file", f]);
    assert!(!r.ok(), "a 0644 token file is refused: {r:?}");
    assert!(
        r.stderr.contains(f) && r.stderr.contains("chmod 600"),
        "{}",
        r.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_links_are_created_listed_claimed_and_revoked() {
    let t = setup("share");
    let s = t.serve(&["--port", "0"]);
    let (_, id, secret) = create_share(t.state(), &s, &["--expires", "1h", "--label", "ana"]);
    let list = t.cli(&["share", "list"]);
    assert!(
        list.ok() && list.stdout.contains(&id) && list.stdout.contains("ana"),
        "{list:?}"
    );

    assert_eq!(
        get(&s, &format!("/s/{id}"), &[]).await.status,
        200,
        "the page"
    );
    let cookie = claim(&s, &id, &secret).await;
    let session = get(&s, "/api/session", &[("cookie", &cookie)]).await;
    assert_eq!(session.status, 200);
    let v = session.json();
    assert_eq!(
        (v["role"].as_str(), v["show_users"].as_bool()),
        (Some("viewer"), Some(false))
    );
    assert_eq!(v["label"], "ana");
    let admin = get(&s, "/api/shares", &[("cookie", &cookie)]).await;
    assert_eq!(admin.status, 403, "a view cookie is no admin");
    let last = if secret.ends_with('A') { 'B' } else { 'A' };
    let wrong = claim_status(&s, &id, &format!("{}{last}", &secret[..42])).await;
    assert_eq!(wrong.status, 404, "a near-miss secret is no link");

    // The admin cookie `?token=` sets over plain HTTP: named by port, no Secure.
    let r = get(&s, &format!("/?token={}", s.token()), &[]).await;
    assert_eq!((r.status, r.header("location")), (303, Some("/")));
    let set = r.header("set-cookie").expect("admin cookie");
    assert!(
        set.starts_with(&format!("vramio-{}=", s.port())) && !set.contains("Secure"),
        "{set}"
    );

    let revoked = t.cli(&["share", "revoke", &id]);
    assert!(revoked.ok(), "{revoked:?}");
    let gone = get(&s, &format!("/s/{id}"), &[]).await;
    let made_up = get(&s, "/s/AAAAAAAAAAAAAAAAAAAAAA", &[]).await;
    assert_eq!((gone.status, made_up.status), (404, 404));
    assert_eq!(
        gone.body, made_up.body,
        "a revoked link and a made-up one look alike"
    );
    assert_eq!(
        get(&s, "/api/session", &[("cookie", &cookie)]).await.status,
        401
    );
    assert_eq!(claim_status(&s, &id, &secret).await.body, made_up.body);

    let (_, a, _) = create_share(t.state(), &s, &[]);
    let (_, b, _) = create_share(t.state(), &s, &["--show-users"]);
    let r = t.cli(&["share", "revoke", "--all"]);
    assert!(r.ok(), "{r:?}");
    for id in [a, b] {
        assert_eq!(get(&s, &format!("/s/{id}"), &[]).await.body, made_up.body);
    }
    assert!(
        t.cli(&["share", "list"])
            .stdout
            .contains("no active share links")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_viewer_ends_when_its_link_is_revoked_or_expires() {
    let t = setup("ends");
    let s = t.serve(&["--port", "0"]);
    let origin = s.base().to_owned();
    let (_, id, secret) = create_share(t.state(), &s, &["--label", "bob"]);
    let cookie = claim(&s, &id, &secret).await;
    let mut viewer = ws(&s, &[("cookie", &cookie), ("origin", &origin)]).await;
    until(&mut viewer, "hello").await;
    until(&mut viewer, "frame").await;
    let started = Instant::now();
    let r = t.cli(&["share", "revoke", &id]);
    assert!(r.ok(), "{r:?}");
    let e = until(&mut viewer, "error").await;
    assert_eq!(e["code"], "share_revoked", "{e}");
    assert_eq!(next(&mut viewer).await.closed(), Some(4403));
    let took = started.elapsed();
    eprintln!("revocation ended the viewer {took:?} after `share revoke` started");
    assert!(took < Duration::from_secs(2), "revocation took {took:?}");

    let created = Instant::now();
    let (_, id, secret) = create_share(t.state(), &s, &["--expires", "3s"]);
    let cookie = claim(&s, &id, &secret).await;
    let mut viewer = ws(&s, &[("cookie", &cookie), ("origin", &origin)]).await;
    until(&mut viewer, "hello").await;
    let e = until(&mut viewer, "error").await;
    assert_eq!(e["code"], "share_expired", "{e}");
    assert_eq!(next(&mut viewer).await.closed(), Some(4403));
    let took = created.elapsed();
    eprintln!("a 3 s link ended its viewer {took:?} after `share create` started");
    assert!(
        took >= Duration::from_millis(2900) && took < Duration::from_secs(5),
        "a 3 s link ended after {took:?}"
    );
    assert_eq!(get(&s, &format!("/s/{id}"), &[]).await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_gets_no_user_names_unless_its_link_shows_them() {
    let t = setup("users");
    let s = t.serve(&["--port", "0"]);
    let origin = s.base().to_owned();
    let bearer = format!("Bearer {}", s.token());
    let mut admin = ws(&s, &[("authorization", &bearer)]).await;
    let user = me_with_user(&mut admin).await["user"].clone();
    assert!(user.as_str().is_some_and(|u| !u.is_empty()), "{user}");

    let (_, id, secret) = create_share(t.state(), &s, &[]);
    let cookie = claim(&s, &id, &secret).await;
    let mut viewer = ws(&s, &[("cookie", &cookie), ("origin", &origin)]).await;
    let mut listed = 0;
    while listed < 3 {
        match next(&mut viewer).await {
            Got::Text(v, raw) => {
                let frames = frames_of(&v);
                assert!(frames.is_empty() || !raw.contains("\"user\""), "{raw}");
                listed += frames.into_iter().filter_map(my_process).count();
            }
            Got::Closed(c) => panic!("the viewer was closed ({c:?})"),
        }
    }
    let snap = get(&s, "/api/snapshot", &[("cookie", &cookie)]).await;
    assert_eq!(snap.status, 200);
    assert!(!snap.text().contains("\"user\""), "{}", snap.text());

    let (_, id, secret) = create_share(t.state(), &s, &["--show-users"]);
    let cookie = claim(&s, &id, &secret).await;
    let mut shown = ws(&s, &[("cookie", &cookie), ("origin", &origin)]).await;
    assert_eq!(me_with_user(&mut shown).await["user"], user);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_is_0600_needs_no_tcp_port_and_serves_the_cli() {
    let t = setup("unix");
    let sock = t.tmp.join("v.sock");
    let s = t.serve(&["--listen", &format!("unix:{}", sock.display())]);
    assert!(s.startup[0].contains("serving on unix:"), "{:?}", s.startup);
    let mode = std::fs::metadata(&sock)
        .expect("the socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        listening_tcp(s.pid()),
        Vec::<String>::new(),
        "no TCP port at all"
    );

    let unix = || async {
        tokio::net::UnixStream::connect(&sock)
            .await
            .expect("connect")
    };
    let health = |auth: Option<String>| async {
        let mut h = vec![("host", "localhost".to_owned())];
        h.extend(auth.map(|a| ("authorization", a)));
        let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
        send(unix().await, "GET", "/api/health", &h, "")
            .await
            .expect("answer")
    };
    assert_eq!(health(None).await.status, 401);
    let bearer = format!("Bearer {}", s.token());
    wait_for(
        Duration::from_secs(10),
        "health over the socket",
        || async { (health(Some(bearer.clone())).await.status == 200).then_some(()) },
    )
    .await;

    assert_eq!(t.cli(&["url"]).last_line(), s.url);
    let (link, ..) = create_share(t.state(), &s, &["--label", "via socket"]);
    assert!(link.starts_with("http://localhost:7575/s/"), "{link}");
    assert!(t.cli(&["share", "list"]).stdout.contains("via socket"));
    s.terminate();
    assert!(!sock.exists(), "the socket is removed on stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_a_pinned_wss_client_refuses_plain_http_and_sets_secure_cookies() {
    let t = setup("tls");
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let ck = rcgen::generate_simple_self_signed(names.clone()).expect("a certificate");
    let (cert, key) = (t.tmp.join("cert.pem"), t.tmp.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).expect("write cert");
    std::fs::write(&key, ck.signing_key.serialize_pem()).expect("write key");
    let (c, k) = (cert.to_str().expect("UTF-8"), key.to_str().expect("UTF-8"));
    let s = t.serve(&["--port", "0", "--tls-cert", c, "--tls-key", k]);
    assert!(s.url.starts_with("https://127.0.0.1:"), "{}", s.url);

    let pinned = |der| tokio_rustls::TlsConnector::from(vramio::http::pinned::client_config(der));
    let authority = s.authority().to_owned();
    let tls = |connector: tokio_rustls::TlsConnector| {
        let authority = authority.clone();
        async move {
            let tcp = tokio::net::TcpStream::connect(authority)
                .await
                .expect("connect");
            let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
            connector.connect(name, tcp).await
        }
    };
    let ours = pinned(ck.cert.der().clone());
    let other = rcgen::generate_simple_self_signed(names).expect("another certificate");
    assert!(
        tls(pinned(other.cert.der().clone())).await.is_err(),
        "another cert is refused"
    );

    let bearer = format!("Bearer {}", s.token());
    let io = tls(ours.clone()).await.expect("TLS handshake");
    let url = format!("wss://{}/ws", s.authority());
    let mut w = ws_over(io, &url, &[("authorization", &bearer)]).await;
    assert_eq!(until(&mut w, "hello").await["type"], "hello");
    until(&mut w, "frame").await;

    let tcp = tokio::net::TcpStream::connect(s.authority())
        .await
        .expect("connect");
    let h = [("host", s.authority()), ("authorization", bearer.as_str())];
    let plain = tokio::time::timeout(Duration::from_secs(5), send(tcp, "GET", "/", &h, "")).await;
    assert!(
        !matches!(plain, Ok(Ok(_))),
        "plain HTTP got an answer: {plain:?}"
    );

    let (link, ..) = create_share(t.state(), &s, &[]);
    assert!(link.starts_with("https://127.0.0.1:"), "{link}");
    let io = tls(ours).await.expect("TLS handshake");
    let path = format!("/?token={}", s.token());
    let r = send(io, "GET", &path, &[("host", s.authority())], "")
        .await
        .expect("answer");
    assert_eq!(r.status, 303);
    let set = r.header("set-cookie").expect("admin cookie");
    assert!(
        set.contains("; Secure") && set.contains("; HttpOnly"),
        "{set}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_state_dir_is_refused_and_a_damaged_share_store_is_kept() {
    let t = setup("statedir");
    std::fs::create_dir(&t.state).expect("mkdir");
    std::fs::set_permissions(&t.state, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let r = t.cli(&["serve", "--port", "0"]);
    assert!(!r.ok(), "a 0755 state dir is refused: {r:?}");
    assert!(
        r.stderr.contains("chmod 700") && r.stderr.contains(t.state()),
        "{}",
        r.stderr
    );

    std::fs::set_permissions(&t.state, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let store = t.state.join("shares.json");
    std::fs::write(&store, "{not json").expect("write");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let s = t.serve(&["--port", "0"]);
    let named = store.display().to_string();
    wait_for(
        Duration::from_secs(5),
        "stderr naming the store",
        || async { s.stderr().contains(&named).then_some(()) },
    )
    .await;
    assert_eq!(get(&s, "/", &[]).await.status, 200, "the page");
    let bearer = format!("Bearer {}", s.token());
    wait_for(
        Duration::from_secs(10),
        "health with sharing off",
        || async {
            (get(&s, "/api/health", &[("authorization", &bearer)])
                .await
                .status
                == 200)
                .then_some(())
        },
    )
    .await;
    let r = t.cli(&["share", "create"]);
    assert!(!r.ok() && r.stderr.contains("sharing is off"), "{r:?}");
    s.terminate();
    assert_eq!(std::fs::read(&store).expect("kept"), b"{not json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bind_beyond_loopback_warns_and_answers_only_to_its_names() {
    let t = setup("bind");
    let s = t.serve(&["--bind", "0.0.0.0", "--port", "0"]);
    wait_for(Duration::from_secs(5), "the TLS warning", || async {
        s.stderr().contains("--tls-cert").then_some(())
    })
    .await;
    let port = s.port();
    let evil = format!("evil.example:{port}");
    let r = http(s.authority(), "GET", "/api/health", &[("host", &evil)], "").await;
    assert_eq!(r.status, 403, "another name is refused");
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    let mine = format!("{}:{port}", name.trim());
    let r = http(s.authority(), "GET", "/api/health", &[("host", &mine)], "").await;
    assert_eq!(
        r.status, 401,
        "this machine's name passes the host check; the token is still needed"
    );

    let r = t.cli(&["serve", "--no-auth", "--bind", "0.0.0.0", "--port", "0"]);
    assert_eq!(r.status.code(), Some(64), "{r:?}");
}
