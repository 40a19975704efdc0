//! An SSH peer: runs the system `ssh` (no local shell) with `vramio stream` on the far side, sends
//! the feed's `subscribe` line on its stdin and reads the protocol from its stdout, one message a
//! line. ssh does the rest as the user set it up: `~/.ssh/config` (or `--ssh-config`), ProxyJump,
//! the agent, `known_hosts`.
//!
//! The link ends on the end of stdout, a line over [`MAX_LINE_BYTES`], a protocol error, or
//! silence past [`read_timeout`]; ssh is killed then (and whenever the link is dropped). Its reason
//! is the protocol error, the timeout, or else ssh's last stderr line ("Permission denied
//! (publickey).", "Host key verification failed.", "bash: line 1: vramio: command not found"),
//! which keeps memory bounded: [`STDERR_LINES`] lines of [`STDERR_WIDTH`] characters.

use super::PeerSink;
use super::feed::Feed;
use super::life::Link;
use super::lines::{LineError, Lines, Tail};
use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// What the far side runs when `--remote-command` is not given.
pub const DEFAULT_REMOTE_COMMAND: &str = "vramio stream";
/// Longest protocol line: a full frame of a large machine is well under 1 MiB; a longer line is
/// a broken or hostile peer, and is refused before it is held whole.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// Lines of ssh's stderr kept for the down reason.
pub const STDERR_LINES: usize = 8;
/// Characters kept of each.
pub const STDERR_WIDTH: usize = 400;
/// How long a link may take to say `hello`: ssh's connection and login (through jump hosts) and
/// the far side's start (NVML's init can take seconds without persistence mode).
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// How long ssh gets to exit and finish its stderr once its stdout has ended.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// The longest silence of a peer that streams at `interval`: three missed frames and a margin for
/// the network.
pub fn read_timeout(interval: Duration) -> Duration {
    interval.saturating_mul(3) + Duration::from_secs(10)
}

/// One SSH peer, from parts the peer spec has already validated.
#[derive(Debug, Clone)]
pub struct SshLink {
    user: Option<String>,
    host: String,
    port: Option<u16>,
    remote_command: String,
    ssh_config: Option<PathBuf>,
    program: OsString,
    hello_timeout: Duration,
}

impl SshLink {
    /// A link to `host` (an address or a `~/.ssh/config` alias) running [`DEFAULT_REMOTE_COMMAND`].
    pub fn new(user: Option<String>, host: String, port: Option<u16>) -> Self {
        SshLink {
            user,
            host,
            port,
            remote_command: DEFAULT_REMOTE_COMMAND.to_owned(),
            ssh_config: None,
            program: "ssh".into(),
            hello_timeout: HELLO_TIMEOUT,
        }
    }

    /// The command line the far side's login shell runs (`--remote-command`).
    pub fn remote_command(mut self, command: impl Into<String>) -> Self {
        self.remote_command = command.into();
        self
    }

    /// An ssh config file used instead of `~/.ssh/config` (`--ssh-config`, ssh's `-F`).
    pub fn ssh_config(mut self, file: Option<PathBuf>) -> Self {
        self.ssh_config = file;
        self
    }

    /// Runs this program instead of the `ssh` on `PATH` (a wrapper; tests use a fake).
    pub fn program(mut self, program: impl Into<OsString>) -> Self {
        self.program = program.into();
        self
    }

    /// How long the far side may take to say `hello` (default [`HELLO_TIMEOUT`]).
    pub fn hello_timeout(mut self, timeout: Duration) -> Self {
        self.hello_timeout = timeout;
        self
    }

    /// ssh's arguments: `-o BatchMode=yes [-F CONFIG] [-p PORT] [-l USER] -- HOST COMMAND`. The
    /// `--` keeps any host from reading as an option; the command is one argument.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["-o".into(), "BatchMode=yes".into()];
        if let Some(config) = &self.ssh_config {
            args.push("-F".into());
            args.push(config.clone().into());
        }
        if let Some(port) = self.port {
            args.push("-p".into());
            args.push(port.to_string().into());
        }
        if let Some(user) = &self.user {
            args.push("-l".into());
            args.push(user.into());
        }
        args.push("--".into());
        args.push((&self.host).into());
        args.push((&self.remote_command).into());
        args
    }

    async fn stream(&self, feed: &mut Feed, sink: &dyn PeerSink) -> String {
        let mut child = match Command::new(&self.program)
            .args(self.args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
        {
            Ok(child) => child,
            Err(e) => return format!("cannot run {}: {e}", self.program.to_string_lossy()),
        };
        let mut tail = Tail::new(STDERR_LINES, STDERR_WIDTH);
        let ended = talk(&mut child, feed, sink, &mut tail, self.hello_timeout).await;
        let reason = match ended {
            Ended::Said(reason) => reason,
            Ended::Closed => finish(&mut child, &mut tail).await,
        };
        let _ = child.start_kill();
        let _ = tokio::time::timeout(EXIT_WAIT, child.wait()).await;
        tracing::debug!(host = %self.host, stderr = ?tail.lines().collect::<Vec<_>>(), %reason, "ssh link ended");
        reason
    }
}

impl Link for SshLink {
    fn run<'a>(
        &'a mut self,
        feed: &'a mut Feed,
        sink: &'a dyn PeerSink,
    ) -> Pin<Box<dyn Future<Output = String> + Send + 'a>> {
        Box::pin(self.stream(feed, sink))
    }
}

enum Ended {
    /// The link's own reason (protocol, timeout).
    Said(String),
    /// stdout ended: the reason is ssh's.
    Closed,
}

/// Sends the subscribe line and feeds stdout's lines until one of them, or silence, ends it;
/// stderr goes into `tail` meanwhile. stdin stays open: its end would end the far side.
async fn talk(
    child: &mut Child,
    feed: &mut Feed,
    sink: &dyn PeerSink,
    tail: &mut Tail,
    hello_timeout: Duration,
) -> Ended {
    // stderr stays the child's: once stdout ends, `finish` reads the rest of it.
    let (Some(stdin), Some(stdout), Some(stderr)) = (
        child.stdin.as_mut(),
        child.stdout.take(),
        child.stderr.as_mut(),
    ) else {
        return Ended::Said("ssh started without its pipes".into());
    };
    let mut subscribe = feed.subscribe_msg();
    subscribe.push('\n');
    // A failed write means ssh is gone already; its stdout and stderr say why.
    let _ = stdin.write_all(subscribe.as_bytes()).await;
    let _ = stdin.flush().await;

    let mut lines = Lines::new(BufReader::new(stdout), MAX_LINE_BYTES);
    let mut err_buf = vec![0u8; 4096];
    let mut stderr_open = true;
    let mut deadline = Instant::now() + hello_timeout;
    let mut questions = crate::peers::query::Open::new(sink.questions());
    loop {
        tokio::select! {
            Some(q) = questions.next() => {
                if let Some(mut line) = feed.pending.send(q) {
                    line.push('\n');
                    // A failed write: ssh is gone, and its output says why.
                    let _ = stdin.write_all(line.as_bytes()).await;
                    let _ = stdin.flush().await;
                }
            }
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    if let Err(e) = feed.apply(&line, sink) {
                        return Ended::Said(e.to_string());
                    }
                    deadline = Instant::now() + feed.interval.map_or(hello_timeout, read_timeout);
                }
                Ok(None) => return Ended::Closed,
                Err(e @ (LineError::TooLong { .. } | LineError::NotUtf8)) => {
                    return Ended::Said(format!("protocol error: {e}"));
                }
                Err(LineError::Io(e)) => return Ended::Said(format!("cannot read from ssh: {e}")),
            },
            n = err_buf_read(stderr, &mut err_buf), if stderr_open => match n {
                Some(n) => tail.push(&err_buf[..n]),
                None => stderr_open = false,
            },
            () = tokio::time::sleep_until(deadline) => {
                let (what, silence) = match feed.interval {
                    Some(interval) => ("no message", read_timeout(interval)),
                    None => ("no hello", hello_timeout),
                };
                return Ended::Said(format!(
                    "timed out: {what} from the peer for {}",
                    humantime::format_duration(silence)
                ));
            }
        }
    }
}

async fn err_buf_read(stderr: &mut tokio::process::ChildStderr, buf: &mut [u8]) -> Option<usize> {
    match stderr.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

/// After stdout ended: the rest of stderr and the exit status, in a few words.
async fn finish(child: &mut Child, tail: &mut Tail) -> String {
    if let Some(mut stderr) = child.stderr.take() {
        let mut buf = vec![0u8; 4096];
        let _ = tokio::time::timeout(EXIT_WAIT, async {
            while let Some(n) = err_buf_read(&mut stderr, &mut buf).await {
                tail.push(&buf[..n]);
            }
        })
        .await;
    }
    let status = tokio::time::timeout(EXIT_WAIT, child.wait()).await;
    match (tail.last(), status) {
        (Some(line), _) => line,
        (None, Ok(Ok(status))) => format!("ssh ended ({status}) without a word"),
        (None, _) => "ssh closed the stream".into(),
    }
}

#[cfg(test)]
mod tests;
