//! The hub's overview in a real browser: two `vramio serve` peers over WebSocket and one that
//! cannot be reached. The overview shows all three with their states and verdicts, the down one
//! with its reason, worst first, in one column on a phone; clicking a card goes through to that
//! host's page; a host's detail URL opened directly shows that host.

#[path = "common/browser_kit.rs"]
mod browser_kit;
#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use browser_kit::{attr, browser_profile, start_chromedriver, text, wait_for};
use fantoccini::Locator;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use vramio_bin::{Server, TempDir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_shows_every_host_and_opens_one() {
    let dir = TempDir::new("browser-hub");
    let script = dir.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let token = dir.join("peer.token");
    std::fs::write(&token, "fedcba9876543210fedcba9876543210fedcba9876543210").expect("token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let t = token.to_string_lossy().into_owned();
    let a = Server::start(
        &dir.join("a"),
        &script,
        &["--port", "0", "--token-file", &t, "--name", "node-a"],
    );
    let b = Server::start(
        &dir.join("b"),
        &script,
        &["--port", "0", "--token-file", &t, "--name", "node-b"],
    );
    // A port nobody listens on: that peer is down with "connection refused".
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let dead = format!("127.0.0.1:{dead_port}");
    let hub = Server::start_command(
        "hub",
        &dir.join("hub"),
        &script,
        &[
            "--port",
            "0",
            "--peer-token-file",
            &t,
            &format!("ws://{}", a.authority()),
            &format!("ws://{}", b.authority()),
            &format!("ws://{dead}"),
        ],
    );
    let (_driver, driver_port) = start_chromedriver();
    let c = browser_profile(driver_port, "hub").await;
    c.goto(&hub.url).await.expect("open the hub");
    let card = |host: &str| format!(r#"[data-testid="host-card"][data-host="{host}"]"#);
    for host in [a.authority(), b.authority()] {
        wait_for(
            Duration::from_secs(20),
            "a peer's card to be up",
            || async {
                (attr(&c, &card(host), "data-state").await.as_deref() == Some("up")).then_some(())
            },
        )
        .await;
        let verdict = wait_for(Duration::from_secs(20), "its verdict", || async {
            attr(&c, &card(host), "data-verdict")
                .await
                .filter(|v| v != "none")
        })
        .await;
        assert!(!verdict.is_empty());
    }
    // Each up peer's card gets its last 24 h of verdicts, from the peer's history.
    for host in [a.authority(), b.authority()] {
        let css = format!(r#"{} [data-testid="day-strip"] .replay-seg"#, card(host));
        wait_for(Duration::from_secs(60), "a day strip", || async {
            c.find(Locator::Css(&css)).await.ok().map(|_| ())
        })
        .await;
    }
    wait_for(
        Duration::from_secs(20),
        "the dead peer to be down",
        || async {
            (attr(&c, &card(&dead), "data-state").await.as_deref() == Some("down")).then_some(())
        },
    )
    .await;
    let why = text(&c, &format!("{} .host-error", card(&dead)))
        .await
        .unwrap_or_default();
    assert!(why.contains("refused"), "the reason is on the card: {why}");
    let cards = c
        .find_all(Locator::Css(r#"[data-testid="host-card"]"#))
        .await
        .expect("cards");
    assert_eq!(cards.len(), 3);
    let first = cards[0].attr("data-host").await.expect("attr");
    assert_eq!(first.as_deref(), Some(dead.as_str()), "worst first");

    // On a phone-sized window: one column, nothing wider than the screen.
    c.set_window_size(390, 844).await.expect("resize");
    let layout = c
        .execute(
            "const g = document.querySelector('.host-grid');
             return [document.documentElement.scrollWidth, window.innerWidth,
                     getComputedStyle(g).gridTemplateColumns.split(' ').length];",
            vec![],
        )
        .await
        .expect("layout");
    let [scroll, inner, columns] = [0, 1, 2].map(|i| layout[i].as_u64().unwrap_or(u64::MAX));
    assert!(scroll <= inner, "no sideways scroll on a phone: {layout}");
    assert_eq!(columns, 1, "one column on a phone: {layout}");
    c.set_window_size(1400, 1000).await.expect("resize back");

    // Through to one host.
    c.find(Locator::Css(&card(b.authority())))
        .await
        .expect("card")
        .click()
        .await
        .expect("click");
    wait_for(Duration::from_secs(20), "node-b's GPU cards", || async {
        c.find(Locator::Css(r#"[data-testid="gpu-card"]"#))
            .await
            .ok()
    })
    .await;
    let here = c.current_url().await.expect("url");
    assert!(here.as_str().contains("#/host/"), "{here}");

    // The same detail URL, opened directly in a fresh profile logged in by the token URL.
    let other = browser_profile(driver_port, "direct").await;
    other.goto(&hub.url).await.expect("log in");
    let (base, _) = hub.url.split_once("/?token=").expect("token url");
    let encoded: String = b
        .authority()
        .chars()
        .map(|ch| {
            if ch == ':' {
                "%3A".to_owned()
            } else {
                ch.to_string()
            }
        })
        .collect();
    other
        .goto(&format!("{base}/#/host/{encoded}"))
        .await
        .expect("open the detail URL");
    wait_for(Duration::from_secs(20), "the host's page", || async {
        (attr(&other, r#"[data-testid="host-head"]"#, "data-host")
            .await
            .as_deref()
            == Some(b.authority()))
        .then_some(())
    })
    .await;
    for cl in [c, other] {
        cl.close().await.expect("close");
    }
}
