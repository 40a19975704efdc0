//! The real `vramio` binary for end-to-end tests: a served instance that is killed when dropped
//! (its stdout startup lines and its stderr kept), one-shot commands with a deadline, private
//! temp directories, a small HTTP/1.1 client (hyper) over any stream (TCP, TLS, Unix), and the
//! TCP ports a process listens on.
//! Include with `#[path = "common/vramio_bin.rs"] mod vramio_bin;`.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};

/// A one-shot command (or a server that should refuse to start) must end within this.
const RUN_DEADLINE: Duration = Duration::from_secs(20);

/// A directory under the temp dir, mode 0700, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(what: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("vramio-access-{}-{n}-{what}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a temp dir");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        TempDir(path)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A finished command.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.status.success()
    }
    /// The last non-empty stdout line.
    pub fn last_line(&self) -> &str {
        self.stdout
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
    }
}

/// Runs `vramio ARGS` to its end (killed and failed past [`RUN_DEADLINE`]).
pub fn run(args: &[&str]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args(args)
        .env_remove("VRAMIO_STATE_DIR")
        .env_remove("VRAMIO_TOKEN_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vramio");
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let deadline = Instant::now() + RUN_DEADLINE;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for vramio") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`vramio {}` still ran after {RUN_DEADLINE:?}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Run {
        status,
        stdout,
        stderr,
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// A running `vramio serve`, killed when dropped.
pub struct Server {
    child: Option<Child>,
    /// The startup lines on stdout, up to the one with the token URL.
    pub startup: Vec<String>,
    /// The URL with `?token=` that the startup lines print.
    pub url: String,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// `vramio serve --interval 250ms --nvml-lib FAKE --state-dir STATE ARGS`, with the fake
    /// reading `script`; returns once the startup lines are out.
    pub fn start(state: &Path, script: &Path, args: &[&str]) -> Server {
        Server::start_command("serve", state, script, args)
    }

    /// [`Server::start`] for another serving command (`hub`).
    pub fn start_command(command: &str, state: &Path, script: &Path, args: &[&str]) -> Server {
        Server::start_program(
            Command::new(env!("CARGO_BIN_EXE_vramio")),
            command,
            state,
            script,
            args,
        )
    }

    /// [`Server::start_command`] with another `vramio`: `program` is the binary, or a runner
    /// with its arguments up to the binary (`qemu-aarch64 -L SYSROOT BIN`).
    pub fn start_program(
        mut program: Command,
        command: &str,
        state: &Path,
        script: &Path,
        args: &[&str],
    ) -> Server {
        let mut child = program
            .arg(command)
            .args(["--interval", "250ms", "--nvml-lib"])
            .arg(super::fake_nvml::fake_nvml_path())
            .arg("--state-dir")
            .arg(state)
            .args(args)
            .env(super::fake_nvml::SCRIPT_ENV, script)
            .env_remove("VRAMIO_TOKEN_FILE")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vramio serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let err = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = sink
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                s.push_str(&line);
                s.push('\n');
            }
        });
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut startup = Vec::new();
        let mut server = Server {
            child: Some(child),
            startup: Vec::new(),
            url: String::new(),
            stderr,
        };
        // The token URL is on the first line (TCP) or the second (a Unix socket).
        while !startup.iter().any(|l: &String| l.contains("/?token=")) {
            match lines.next() {
                Some(Ok(l)) => startup.push(l),
                _ => {
                    // Let the stderr reader catch up, so the message shows why.
                    std::thread::sleep(Duration::from_millis(300));
                    panic!(
                        "vramio serve printed {startup:?} and stopped; stderr:\n{}",
                        server.stderr()
                    )
                }
            }
        }
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        server.url = startup
            .iter()
            .flat_map(|l| l.split_whitespace())
            .find(|w| w.contains("/?token="))
            .unwrap_or_else(|| panic!("no token URL in the startup lines {startup:?}"))
            .to_owned();
        server.startup = startup;
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }
    /// `http://127.0.0.1:PORT` (or whatever the startup URL's base is).
    pub fn base(&self) -> &str {
        self.url.split("/?token=").next().unwrap_or("")
    }
    pub fn token(&self) -> &str {
        self.url.split("/?token=").nth(1).unwrap_or("")
    }
    /// `host:port` of [`Server::base`].
    pub fn authority(&self) -> &str {
        self.base().split_once("://").map_or("", |(_, a)| a)
    }
    pub fn port(&self) -> u16 {
        let a = self.authority();
        a.rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {a}"))
    }
    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// SIGTERM, as a user stopping it would; waits for it to exit.
    pub fn terminate(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .expect("a child pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        let deadline = Instant::now() + RUN_DEADLINE;
        loop {
            if let Some(s) = child.try_wait().expect("wait") {
                return s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("vramio did not stop within {RUN_DEADLINE:?} of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One fake GPU whose only process is `pid` (so vramio resolves a real user for it).
pub fn one_gpu_script(pid: u32) -> String {
    format!(
        r#"{{"driver_version": "580.00", "devices": [
      {{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-11111111-2222-3333-4444-555555555555",
        "memory_total_mib": 81559, "repeat": false, "lost_at_s": null, "slow_ms": 0,
        "timeline": [{{"at_s": 0, "memory_used_mib": 1200, "util_gpu": 5, "util_mem": 1,
                       "temperature_c": 35, "power_w": 70,
                       "processes": [{{"pid": {pid}, "used_mib": 1100}}]}}]}}]}}"#
    )
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// One HTTP/1.1 request over `io`; `headers` are sent as given (no `Host` is added).
pub async fn send<I>(
    io: I,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> hyper::Result<Resp>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(conn);
    let mut req = hyper::Request::builder().method(method).uri(path);
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    let req = req
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("a valid request");
    let resp = sender.send_request(req).await?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await?.to_bytes().to_vec();
    Ok(Resp {
        status,
        headers,
        body,
    })
}

/// [`send`] over a fresh TCP connection to `authority` (`host:port`).
pub async fn http(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Resp {
    let tcp = tokio::net::TcpStream::connect(authority)
        .await
        .unwrap_or_else(|e| panic!("connect to {authority}: {e}"));
    send(tcp, method, path, headers, body)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
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

/// Local addresses of the TCP sockets `pid` listens on (from /proc).
pub fn listening_tcp(pid: u32) -> Vec<String> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the server's fds")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| t.lines().skip(1).map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let listening = cols.get(3) == Some(&"0A");
            let mine = cols.get(9).is_some_and(|i| inodes.iter().any(|m| m == i));
            (listening && mine).then(|| cols[1].to_owned())
        })
        .collect()
}
