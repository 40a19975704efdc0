//! What the browser tests share: the real `vramio` binary on a free port with its own state
//! directory, chromedriver, headless Chromium sessions (each with a fresh profile) and polling
//! helpers. Include with `#[path = "common/browser_kit.rs"] mod browser_kit;`.
//!
//! Scripts, state directories and Chromium profiles (a few MB each) live in the temp dir under
//! names carrying the test process' pid. A test binary has no teardown, so the first helper call
//! of each one removes those of test processes that are gone ([`sweep_leftovers`]): what a run
//! leaves behind lasts until the next run.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use fantoccini::{Client, ClientBuilder, Locator};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the child process when dropped, so a failing test leaves nothing behind.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Killed {
    /// SIGTERM, as a user stopping the server would, then wait for it to exit.
    pub fn terminate(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.0.id().to_string())
            .status();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub fn fake_nvml() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().expect("deps dir");
    [dir.join("libfake_nvml.so"), dir.join("../libfake_nvml.so")]
        .into_iter()
        .find(|p| p.exists())
        .expect("libfake_nvml.so next to the test binary (fake-nvml is a dev-dependency)")
}

/// Removes the temp dirs of browser test processes that no longer run (once per process).
pub fn sweep_leftovers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| {
                n.strip_prefix("vramio-browser-")
                    .or_else(|| n.strip_prefix("vramio-chromium-"))
            }) else {
                continue;
            };
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            let gone = pid.is_some_and(|pid| {
                pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
            });
            if gone {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
}

pub fn write_script(name: &str, json: &str) -> PathBuf {
    sweep_leftovers();
    let dir = std::env::temp_dir().join(format!("vramio-browser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, json).expect("write script");
    path
}

/// The state directory of the server on `port` (kept across its restarts, like a user's).
pub fn state_dir(port: u16) -> PathBuf {
    sweep_leftovers();
    std::env::temp_dir().join(format!(
        "vramio-browser-{}-state-{port}",
        std::process::id()
    ))
}

/// Starts `vramio serve` on `port`, waits for its "serving on" line and returns the URL it
/// printed (with its token).
pub fn start_vramio(port: u16, nvml_lib: &PathBuf, script: Option<&PathBuf>) -> (Killed, String) {
    start_vramio_every(port, nvml_lib, script, "250ms")
}

/// [`start_vramio`] sampling every `interval` (`1s`: what a user runs).
pub fn start_vramio_every(
    port: u16,
    nvml_lib: &PathBuf,
    script: Option<&PathBuf>,
    interval: &str,
) -> (Killed, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vramio"));
    cmd.args(["serve", "--port", &port.to_string(), "--interval", interval])
        .arg("--state-dir")
        .arg(state_dir(port))
        .arg("--nvml-lib")
        .arg(nvml_lib)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(script) = script {
        cmd.env("FAKE_NVML_SCRIPT", script);
    }
    let mut child = cmd.spawn().expect("start vramio");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .next()
        .expect("vramio printed nothing")
        .expect("stdout readable");
    assert!(line.contains("serving on"), "unexpected first line: {line}");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("a URL")
        .to_owned();
    assert!(url.contains("/?token="), "the URL carries the token: {url}");
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (Killed(child), url)
}

pub fn start_chromedriver() -> (Killed, u16) {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver (apt-get install chromium-driver)");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    (Killed(child), port)
}

pub async fn browser(driver_port: u16) -> Client {
    browser_profile(driver_port, "main").await
}

/// A browser with a fresh profile of its own (`name`): no cookies shared with another.
pub async fn browser_profile(driver_port: u16, name: &str) -> Client {
    sweep_leftovers();
    let profile = std::env::temp_dir().join(format!(
        "vramio-chromium-{}-{driver_port}-{name}",
        std::process::id()
    ));
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--window-size=1400,1000",
                format!("--user-data-dir={}", profile.display()),
            ]
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{driver_port}"))
        .await
        .expect("webdriver session")
}

/// Polls `check` every 100 ms until it returns `Some`, or panics after `within` with `what`.
pub async fn wait_for<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn attr(c: &Client, css: &str, name: &str) -> Option<String> {
    let el = c.find(Locator::Css(css)).await.ok()?;
    el.attr(name).await.ok()?
}

pub async fn text(c: &Client, css: &str) -> Option<String> {
    c.find(Locator::Css(css)).await.ok()?.text().await.ok()
}

pub async fn num_attr(c: &Client, css: &str, name: &str) -> Option<u64> {
    attr(c, css, name).await?.parse().ok()
}

/// Clicks the range button `which` (`6h`, `7d`...) of the history's range control and waits
/// until its answer is drawn: the milliseconds from the click to the animation frame after the
/// charts were drawn with it, as the page measured them; `None` past 25 s (under WebDriver's 30 s
/// script timeout).
pub async fn click_range_to_drawn(c: &Client, which: &str) -> Option<f64> {
    let js = r#"
        const [which, done] = [arguments[0], arguments[1]];
        const t0 = performance.now();
        document.querySelector(`[data-testid="range-${which}"]`).click();
        const check = () => {
            const loading = document.querySelector('[data-testid="range-loading"]');
            const head = document.querySelector('#charts-h');
            const pressed = document.querySelector(`[data-testid="range-${which}"]`);
            if (!loading && head && head.textContent.startsWith('History')
                && pressed && pressed.getAttribute('aria-pressed') === 'true'
                && document.querySelector('.plot path.line')) {
                requestAnimationFrame(() => done(performance.now() - t0));
            } else if (performance.now() - t0 > 25000) {
                done(-1);
            } else {
                requestAnimationFrame(check);
            }
        };
        requestAnimationFrame(check);
    "#;
    let v = c
        .execute_async(js, vec![which.into()])
        .await
        .expect("the range script runs");
    v.as_f64().filter(|ms| *ms >= 0.0)
}
