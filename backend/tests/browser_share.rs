//! Token auth and share links in a real browser (issue 7): the printed URL opens the live page and
//! leaves the address bar without the token; reloads and a server restart keep working from the
//! cookie; a link made in the Share dialog opens live and read-only in a second, fresh profile,
//! without user names, and says "revoked" within 2 s of its revocation; a short link (6 s, longer
//! only when the page took longer than that to come up) expires on the open page and then gets the
//! 404 page; a page from another local port can neither open `/ws` nor create a link.

#[path = "common/browser_kit.rs"]
mod browser_kit;

use browser_kit::*;
use fantoccini::{Client, Locator};
use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

/// The words of the page every bad link gets (`share_routes::LINK_NOT_FOUND`), as the browser
/// shows them.
const LINK_DOES_NOT_WORK: &str = "This link does not work";

fn one_gpu_script(my_pid: u32) -> String {
    format!(
        r#"{{"driver_version": "580.00", "devices": [
      {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-11111111-2222-3333-4444-555555555555",
        "memory_total_mib": 81559, "repeat": false, "lost_at_s": null, "slow_ms": 0,
        "timeline": [{{"at_s": 0, "memory_used_mib": 30000, "util_gpu": 90, "util_mem": 40,
                       "temperature_c": 60, "power_w": 400,
                       "processes": [{{"pid": {my_pid}, "used_mib": 29000}}]}}]}}]}}"#
    )
}

/// The login name vramio shows for this test's own process.
fn my_user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

async fn live(c: &Client, what: &str) {
    wait_for(Duration::from_secs(20), what, || async {
        (attr(c, r#"[data-testid="conn-badge"]"#, "data-state")
            .await
            .as_deref()
            == Some("open"))
        .then_some(())
    })
    .await;
}

/// The user column of this process's row on the GPU card.
async fn user_cell(c: &Client) -> String {
    let css = format!(
        r#"tr[data-testid="gpu-proc"][data-pid="{}"] td:nth-child(3)"#,
        std::process::id()
    );
    wait_for(Duration::from_secs(10), "this process's row", || async {
        text(c, &css).await.filter(|t| !t.is_empty())
    })
    .await
}

fn vramio_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(args)
        .arg("--state-dir")
        .arg(state_dir(port))
        .output()
        .expect("run vramio");
    assert!(
        out.status.success(),
        "vramio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_url_cookie_restart_and_a_share_link_from_the_dialog() {
    let nvml = fake_nvml();
    let script = write_script("share-one-gpu.json", &one_gpu_script(std::process::id()));
    let port = free_port();
    let (server, url) = start_vramio(port, &nvml, Some(&script));
    let (_driver, driver_port) = start_chromedriver();
    let admin = browser_profile(driver_port, "admin").await;
    admin.goto(&url).await.expect("open the printed URL");
    live(&admin, "the admin page to go live").await;
    let here = admin.current_url().await.expect("url");
    assert!(!here.as_str().contains("token"), "address bar: {here}");
    assert_eq!(
        user_cell(&admin).await,
        my_user(),
        "the admin sees user names"
    );

    admin.refresh().await.expect("reload");
    live(&admin, "the page to go live again after a reload").await;
    server.terminate();
    let (server, url_again) = start_vramio(port, &nvml, Some(&script));
    assert_eq!(url_again, url, "a restart keeps the token");
    admin.refresh().await.expect("reload after the restart");
    live(&admin, "the page to work from the cookie after a restart").await;

    // The Share dialog makes a link.
    admin
        .find(Locator::Css("#share-open"))
        .await
        .expect("a Share button for the admin")
        .click()
        .await
        .expect("open the dialog");
    admin
        .find(Locator::Css("#share-label"))
        .await
        .expect("label field")
        .send_keys("for the teammate")
        .await
        .expect("type");
    admin
        .find(Locator::Css("#share-create"))
        .await
        .expect("create button")
        .click()
        .await
        .expect("create");
    let link = wait_for(Duration::from_secs(10), "the new link", || async {
        text(&admin, "#share-new-url")
            .await
            .filter(|t| t.starts_with(&format!("http://127.0.0.1:{port}/s/")))
    })
    .await;
    let (_, fragment) = link.split_once('#').expect("the secret is in the fragment");
    assert!(fragment.len() >= 40, "{link}");
    let listed = wait_for(Duration::from_secs(10), "the link in the list", || async {
        let items = admin.find_all(Locator::Css("#share-list li")).await.ok()?;
        (!items.is_empty()).then_some(items.len())
    })
    .await;
    assert_eq!(listed, 1);

    // A teammate's browser: nothing shared with the admin's profile.
    let viewer = browser_profile(driver_port, "viewer").await;
    viewer.goto(&link).await.expect("open the share link");
    live(&viewer, "the shared page to go live").await;
    let at = viewer.current_url().await.expect("url");
    assert_eq!(
        at.as_str(),
        format!("http://127.0.0.1:{port}/"),
        "neither the id nor the secret stays in the address bar"
    );
    assert!(
        viewer.find(Locator::Css("#viewer-badge")).await.is_ok(),
        "read-only badge"
    );
    assert!(
        viewer.find(Locator::Css("#share-open")).await.is_err(),
        "no Share button for a viewer"
    );
    let user = user_cell(&viewer).await;
    assert_ne!(user, my_user(), "the viewer sees no user names");
    assert!(
        !viewer
            .source()
            .await
            .expect("source")
            .contains(&format!(">{}<", my_user())),
        "nowhere on the page"
    );
    viewer.refresh().await.expect("viewer reload");
    live(&viewer, "the shared page to survive a reload").await;

    // Revoke it in the dialog: the viewer's page says so within 2 s.
    admin
        .find(Locator::Css("#share-list li .share-revoke"))
        .await
        .expect("revoke button")
        .click()
        .await
        .expect("revoke");
    let revoked_at = Instant::now();
    wait_for(
        Duration::from_secs(2),
        "the viewer to see the revocation",
        || async {
            (attr(&viewer, "#share-ended", "data-reason")
                .await
                .as_deref()
                == Some("revoked"))
            .then_some(())
        },
    )
    .await;
    eprintln!(
        "viewer saw the revocation after {} ms",
        revoked_at.elapsed().as_millis()
    );

    // A short link: works, then expires on the open page, then is the 404 page. The two pages
    // above are done: closing them leaves the machine to the third.
    for c in [admin, viewer] {
        c.close().await.expect("close browser");
    }
    let third = browser_profile(driver_port, "short").await;
    let (short, secs, made) = open_short_link(&third, port).await;
    wait_for(
        Duration::from_secs(secs + 3),
        "the page to say the link expired",
        || async {
            (attr(&third, "#share-ended", "data-reason").await.as_deref() == Some("expired"))
                .then_some(())
        },
    )
    .await;
    let ended = made.elapsed();
    eprintln!("the page said a {secs} s link expired {ended:?} after it was made");
    assert!(
        ended >= Duration::from_secs(secs),
        "a {secs} s link ended after {ended:?}"
    );
    assert!(vramio::http::share_routes::LINK_NOT_FOUND.contains(LINK_DOES_NOT_WORK));
    third.goto(&short).await.expect("open it again");
    let page = third.source().await.expect("source");
    assert!(page.contains(LINK_DOES_NOT_WORK), "{page}");

    third.close().await.expect("close browser");
    drop(server);
}

/// Makes a short link with the CLI and opens it in `c` until the page is live before the link
/// ends, returning the link, its seconds and when it was made. The seconds start when the link
/// is made, and a loaded machine can take longer than that to bring the page up; the page then
/// rightly shows the link as not working. So a link refused only after its time ran out is tried
/// again twice as long (6, 12, 24 s); one refused before is a failure.
async fn open_short_link(c: &Client, port: u16) -> (String, u64, Instant) {
    // The bundle into this profile's cache first (the page without credentials), so that the
    // link's seconds go on the claim and the socket rather than on fetching the bundle.
    c.goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .expect("open the page without credentials");
    wait_for(
        Duration::from_secs(20),
        "the page to ask for its link",
        || async {
            c.find(Locator::Css("#auth-required"))
                .await
                .ok()
                .map(|_| ())
        },
    )
    .await;
    for secs in [6, 12, 24] {
        let made = Instant::now();
        let out = vramio_cli(port, &["share", "create", "--expires", &format!("{secs}s")]);
        let link = out
            .lines()
            .last()
            .expect("the link is the last line")
            .to_owned();
        c.goto(&link).await.expect("open the short link");
        // Polled by hand, so that a page that does neither says what it shows instead.
        let deadline = Instant::now() + Duration::from_secs(secs + 20);
        let live = loop {
            match short_link_page(c).await {
                ShortLinkPage::Live => break true,
                ShortLinkPage::Ended => break false,
                ShortLinkPage::Other(what) => assert!(
                    Instant::now() < deadline,
                    "a {secs} s link neither went live nor ended in {:?}: the page shows {what}",
                    made.elapsed()
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let took = made.elapsed();
        if live {
            eprintln!("a {secs} s link went live {took:?} after it was made");
            return (link, secs, made);
        }
        assert!(
            took >= Duration::from_secs(secs),
            "a {secs} s link ended {took:?} after it was made, before it expired"
        );
        eprintln!("a {secs} s link ran out before the page was up ({took:?}): trying a longer one");
    }
    panic!("no short link went live before it expired (24 s the longest)");
}

/// What a freshly opened short link's page shows.
enum ShortLinkPage {
    Live,
    /// The link no longer works: the 404 page, a refused claim, or the "expired" banner (the
    /// page was live for less than one poll).
    Ended,
    /// Anything else, described for the failure message.
    Other(String),
}

async fn short_link_page(c: &Client) -> ShortLinkPage {
    let state = attr(c, r#"[data-testid="conn-badge"]"#, "data-state").await;
    if state.as_deref() == Some("open") {
        return ShortLinkPage::Live;
    }
    let gate = |css: &'static str| async move { c.find(Locator::Css(css)).await.is_ok() };
    let source = c.source().await.unwrap_or_default();
    if gate("#share-invalid").await
        || gate("#share-ended").await
        || source.contains(LINK_DOES_NOT_WORK)
    {
        return ShortLinkPage::Ended;
    }
    let url = c
        .current_url()
        .await
        .map(|u| u.to_string())
        .unwrap_or_default();
    let body: String = text(c, "body")
        .await
        .unwrap_or_default()
        .chars()
        .take(600)
        .collect();
    ShortLinkPage::Other(format!("url {url:?}, connection {state:?}, text {body:?}"))
}

/// Serves one HTML page on a free loopback port until the test ends.
fn tiny_server(html: String) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
                html.len()
            );
            let _ = s.write_all(resp.as_bytes());
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_from_another_local_port_cannot_read_or_act() {
    let nvml = fake_nvml();
    let port = free_port();
    let (_server, url) = start_vramio(port, &nvml, None);
    let (_driver, driver_port) = start_chromedriver();
    let c = browser_profile(driver_port, "victim").await;
    // The user has the dashboard open: the browser holds the admin cookie for 127.0.0.1.
    c.goto(&url).await.expect("open the printed URL");
    live(&c, "the page to go live").await;

    let evil = format!(
        r#"<!doctype html><body><p id="out">waiting</p><script>
const out = document.getElementById('out');
const ws = new WebSocket('ws://127.0.0.1:{port}/ws');
ws.onopen = () => {{ out.dataset.ws = 'open'; }};
ws.onmessage = (e) => {{ out.dataset.got = 'data'; }};
ws.onerror = () => {{ out.dataset.ws = out.dataset.ws || 'refused'; }};
ws.onclose = () => {{ out.dataset.ws = out.dataset.ws || 'refused'; }};
fetch('http://127.0.0.1:{port}/api/shares', {{method: 'POST', credentials: 'include',
  headers: {{'content-type': 'text/plain'}}, body: '{{"label":"evil"}}'}})
  .then(r => {{ out.dataset.post = 'status-' + r.status; }})
  .catch(() => {{ out.dataset.post = 'failed'; }});
</script></body>"#
    );
    let evil_port = tiny_server(evil);
    c.goto(&format!("http://127.0.0.1:{evil_port}/"))
        .await
        .expect("open the other page");
    let ws = wait_for(
        Duration::from_secs(10),
        "the other page's socket to settle",
        || async { attr(&c, "#out", "data-ws").await },
    )
    .await;
    assert_eq!(ws, "refused", "another port's page must not open /ws");
    assert_eq!(
        attr(&c, "#out", "data-got").await,
        None,
        "no data reached it"
    );
    wait_for(
        Duration::from_secs(10),
        "the other page's POST to settle",
        || async { attr(&c, "#out", "data-post").await },
    )
    .await;
    let list = vramio_cli(port, &["share", "list"]);
    assert!(
        list.contains("no active share links"),
        "the cross-origin POST made no link: {list}"
    );
    c.close().await.expect("close browser");
}
