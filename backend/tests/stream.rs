//! `vramio stream` as a hub meets it over SSH, without SSH (docs/architecture.md#4-commands-and-flags): the real binary as
//! a child, protocol lines on its stdout and `subscribe` lines on its stdin.
//!
//! - Sampling (`--no-relay`): hello, then frames; a `subscribe` with `since_seq` resumes right
//!   after that seq; the end of stdin ends it with exit 0; stdout holds nothing but protocol.
//! - Relaying: beside a `vramio serve` of the same state directory it streams that server's
//!   history and seq (frames from before it started), and resumes the same way.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use shared::{Frame, PROTOCOL_VERSION, ServerMsg};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use vramio_bin::{Server, TempDir};

/// A running `vramio stream`, killed when dropped.
struct Stream {
    child: Child,
    stdin: Option<ChildStdin>,
    /// stdout's lines (`None` once the test closed its end).
    lines: Option<mpsc::Receiver<String>>,
    stderr: std::thread::JoinHandle<String>,
}

impl Stream {
    /// `vramio stream ARGS`; `log` is VRAMIO_LOG (`None`: the default, warnings only).
    fn start(args: &[&str], script: Option<&std::path::Path>, log: Option<&str>) -> Stream {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vramio"));
        cmd.arg("stream")
            .args(args)
            .env_remove("VRAMIO_STATE_DIR")
            .env_remove("VRAMIO_TOKEN_FILE")
            .env_remove("VRAMIO_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(script) = script {
            cmd.env(fake_nvml::SCRIPT_ENV, script);
        }
        if let Some(log) = log {
            cmd.env("VRAMIO_LOG", log);
        }
        let mut child = cmd.spawn().expect("start vramio stream");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Stream {
            stdin: child.stdin.take(),
            child,
            lines: Some(lines),
            stderr,
        }
    }

    /// The next line, which must be a protocol message.
    fn next(&self) -> ServerMsg {
        let line = self
            .lines
            .as_ref()
            .expect("stdout open")
            .recv_timeout(Duration::from_secs(15))
            .expect("a line within 15 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a protocol line ({e}): {line}"))
    }

    /// The frames of the next `frame` or `backfill` message (other messages are skipped).
    fn next_frames(&self) -> (bool, Vec<Frame>) {
        loop {
            match self.next() {
                ServerMsg::Frame { frame, .. } => return (false, vec![*frame]),
                ServerMsg::Backfill { frames, .. } => return (true, frames),
                _ => {}
            }
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write stdin");
        stdin.flush().expect("flush stdin");
    }

    /// Waits (at most 10 s) for the process to exit.
    fn exit(&mut self, after: &str) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "still ran 10 s after {after}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Closes stdin and waits for the exit; the rest of stdout must be protocol lines too.
    fn close(mut self) -> (ExitStatus, String) {
        drop(self.stdin.take());
        let status = self.exit("stdin closed");
        for line in self.lines.take().iter().flat_map(mpsc::Receiver::try_iter) {
            serde_json::from_str::<ServerMsg>(&line)
                .unwrap_or_else(|e| panic!("not a protocol line ({e}): {line}"));
        }
        let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
        (status, stderr.join().unwrap_or_default())
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads frames until `n` have come; their seqs, in order.
fn collect_seqs(s: &Stream, n: usize) -> Vec<u64> {
    let mut seqs = Vec::new();
    while seqs.len() < n {
        seqs.extend(s.next_frames().1.iter().map(|f| f.seq));
    }
    seqs
}

/// After a `subscribe` from `since`: the backfill that answers it starts right after `since`.
fn resumes_after(s: &mut Stream, since: u64) {
    s.send(&format!(r#"{{"type":"subscribe","since_seq":{since}}}"#));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(
            Instant::now() < deadline,
            "no backfill answered the subscribe"
        );
        let (backfill, frames) = s.next_frames();
        if backfill {
            let seqs: Vec<u64> = frames.iter().map(|f| f.seq).collect();
            assert_eq!(seqs.first(), Some(&(since + 1)), "{seqs:?}");
            assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
            return;
        }
    }
}

#[test]
fn sampling_stream_says_hello_streams_frames_resumes_and_ends_with_stdin() {
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let fake = fake_nvml::fake_nvml_path();
    let fake = fake.to_string_lossy();
    let mut s = Stream::start(
        &[
            "--no-relay",
            "--nvml-lib",
            &fake,
            "--interval",
            "250ms",
            "--name",
            "gpu-a",
        ],
        Some(script.path()),
        Some("info"),
    );
    let ServerMsg::Hello {
        protocol,
        hosts,
        interval_ms,
        ..
    } = s.next()
    else {
        panic!("hello first");
    };
    assert_eq!((protocol, interval_ms), (PROTOCOL_VERSION, 250));
    assert_eq!(hosts, ["gpu-a"]);
    let seqs = collect_seqs(&s, 5);
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    resumes_after(&mut s, seqs[1]);
    let (status, stderr) = s.close();
    assert!(status.success(), "{status}; stderr:\n{stderr}");
    assert!(stderr.contains("sampling this host"), "{stderr}");
}

#[test]
fn a_closed_stdout_ends_the_stream_while_stdin_stays_open() {
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let fake = fake_nvml::fake_nvml_path();
    let fake = fake.to_string_lossy();
    let mut s = Stream::start(
        &["--no-relay", "--nvml-lib", &fake, "--interval", "250ms"],
        Some(script.path()),
        None,
    );
    assert!(matches!(s.next(), ServerMsg::Hello { .. }), "hello first");
    // The reader stops at its next line and closes the pipe; stdin is still open.
    drop(s.lines.take());
    let status = s.exit("its stdout closed");
    assert!(!status.success(), "a lost reader is a failure: {status}");
    // By default only problems reach stderr, so a hub's down reason is the real one.
    let (_, stderr) = s.close();
    assert_eq!(
        stderr.trim(),
        "vramio: cannot write to stdout: closed, or nothing read for 30s"
    );
}

#[test]
fn beside_a_running_server_stream_relays_its_history_and_seq() {
    let tmp = TempDir::new("relay");
    let state = tmp.join("state");
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let server = Server::start(&state, script.path(), &["--port", "0"]);
    // Frames from before the stream starts: wait until the server holds a few (it was a fixed
    // sleep, which a slow machine could outlast).
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut first = None;
    loop {
        let health = health(server.authority(), server.token());
        let last = health["last_seq"].as_u64();
        first = first.or(last);
        if let (Some(f), Some(l)) = (first, last)
            && l >= f + 4
        {
            break;
        }
        assert!(Instant::now() < deadline, "no frames: {health}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let started_ms = shared_now_ms();
    let state_arg = state.to_string_lossy();
    let mut s = Stream::start(&["--state-dir", &state_arg], None, Some("info"));
    assert!(matches!(s.next(), ServerMsg::Hello { .. }), "hello first");
    let (backfill, frames) = s.next_frames();
    assert!(backfill, "history first");
    assert!(
        frames.iter().filter(|f| f.t_ms < started_ms).count() >= 3,
        "the server's frames from before the stream started: {:?}",
        frames.iter().map(|f| f.t_ms).collect::<Vec<_>>()
    );
    let seqs: Vec<u64> = frames.iter().map(|f| f.seq).collect();
    resumes_after(&mut s, seqs[1]);
    let (status, stderr) = s.close();
    assert!(status.success(), "{status}; stderr:\n{stderr}");
    assert!(stderr.contains("relaying"), "{stderr}");
    assert!(
        !stderr.contains(server.token()),
        "the token stays out of logs"
    );
}

/// `GET /api/health` of a server on `authority`, as JSON (null when it does not answer).
fn health(authority: &str, token: &str) -> serde_json::Value {
    let Ok(mut c) = std::net::TcpStream::connect(authority) else {
        return serde_json::Value::Null;
    };
    let req = format!(
        "GET /api/health HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\n\r\n"
    );
    let mut answer = String::new();
    if c.write_all(req.as_bytes()).is_err() || c.read_to_string(&mut answer).is_err() {
        return serde_json::Value::Null;
    }
    answer
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body).ok())
        .unwrap_or(serde_json::Value::Null)
}

fn shared_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[test]
fn a_server_that_cannot_be_reached_is_reported_and_stream_samples_instead() {
    let tmp = TempDir::new("relay-gone");
    let state = tmp.join("state");
    let script = fake_nvml::write_script(&vramio_bin::one_gpu_script(std::process::id()));
    let server = Server::start(&state, script.path(), &["--port", "0"]);
    let addr = server.authority().to_owned();
    let _ = server.terminate();
    // A server file that names a live pid (this test) and a socket that is not there. (A TCP port
    // just freed is no good: another test's server may take it at once.)
    let gone = tmp.join("gone.sock");
    let file = format!(
        r#"{{"pid":{},"kind":"serve","base_url":"http://{addr}","endpoint":{{"kind":"unix","path":"{}"}}}}"#,
        std::process::id(),
        gone.display()
    );
    std::fs::write(state.join("server.json"), file).expect("write server.json");
    // Private, as the server writes it: a server file others could have written is not trusted.
    std::fs::set_permissions(
        state.join("server.json"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("chmod");
    let fake = fake_nvml::fake_nvml_path();
    let fake = fake.to_string_lossy();
    let state_arg = state.to_string_lossy();
    let s = Stream::start(
        &[
            "--state-dir",
            &state_arg,
            "--nvml-lib",
            &fake,
            "--interval",
            "250ms",
        ],
        Some(script.path()),
        None,
    );
    let ServerMsg::Hello { interval_ms, .. } = s.next() else {
        panic!("hello first");
    };
    assert_eq!(interval_ms, 250, "its own sampling, not the server's");
    collect_seqs(&s, 2);
    let (status, stderr) = s.close();
    assert!(status.success(), "{status}; stderr:\n{stderr}");
    assert!(
        stderr.contains("cannot relay") && stderr.contains("sampling here instead"),
        "{stderr}"
    );
}
