//! The SSH link against its command line and a fake `ssh` (a shell script).

use super::*;

#[test]
fn ssh_runs_without_a_shell_and_a_host_never_reads_as_an_option() {
    let link = SshLink::new(Some("ana".into()), "gpu1".into(), Some(2222))
        .remote_command("/opt/vramio stream --interval 2s")
        .ssh_config(Some("/tmp/cfg".into()));
    let args: Vec<String> = link
        .args()
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        args,
        [
            "-o",
            "BatchMode=yes",
            "-F",
            "/tmp/cfg",
            "-p",
            "2222",
            "-l",
            "ana",
            "--",
            "gpu1",
            "/opt/vramio stream --interval 2s"
        ]
    );
    let alias = SshLink::new(None, "lab-a100".into(), None).args();
    assert_eq!(
        alias,
        ["-o", "BatchMode=yes", "--", "lab-a100", "vramio stream"]
            .map(OsString::from)
            .to_vec()
    );
}

#[test]
fn silence_allowed_is_three_intervals_and_ten_seconds() {
    assert_eq!(
        read_timeout(Duration::from_secs(1)),
        Duration::from_secs(13)
    );
    assert_eq!(
        read_timeout(Duration::from_millis(250)),
        Duration::from_millis(10_750)
    );
}

/// What a link told its sink, in order.
#[derive(Default)]
struct Record {
    links: std::sync::Mutex<Vec<(shared::HostState, Option<String>)>>,
    seqs: std::sync::Mutex<Vec<u64>>,
}

impl PeerSink for Record {
    fn link(&self, state: shared::HostState, error: Option<String>) {
        self.links.lock().expect("lock").push((state, error));
    }
    fn frame(&self, frame: shared::Frame) {
        self.seqs.lock().expect("lock").push(frame.seq);
    }
    fn diagnosis(&self, _diagnosis: shared::diagnosis::Diagnosis) {}
}

/// A fake `ssh`: a shell script with `body`, in a fresh temp dir (removed when dropped).
struct FakeSsh {
    dir: PathBuf,
}

impl FakeSsh {
    fn new(name: &str, body: &str) -> FakeSsh {
        use std::os::unix::fs::PermissionsExt;
        let dir =
            std::env::temp_dir().join(format!("vramio-fake-ssh-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let script = dir.join("ssh");
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).expect("write the fake");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        FakeSsh { dir }
    }
    fn link(&self) -> SshLink {
        SshLink::new(None, "fake".into(), None).program(self.dir.join("ssh"))
    }
}

impl Drop for FakeSsh {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn hello_line() -> String {
    serde_json::to_string(&shared::ServerMsg::hello(
        vec!["h".into()],
        250,
        "test",
        "i1",
    ))
    .expect("json")
}

fn frame_line(seq: u64) -> String {
    serde_json::to_string(&shared::ServerMsg::Frame {
        host: "h".into(),
        frame: Box::new(shared::Frame::empty("h", seq, seq * 1000, 250)),
    })
    .expect("json")
}

async fn run_link(mut link: SshLink, feed: &mut Feed, sink: &Record) -> String {
    tokio::time::timeout(Duration::from_secs(20), link.run(feed, sink))
        .await
        .expect("the link ends by itself")
}

#[tokio::test]
async fn frames_flow_then_ssh_s_last_stderr_line_is_the_reason() {
    let fake = FakeSsh::new(
        "flow",
        &format!(
            "read sub; echo \"$sub\" >&2\necho '{}'\necho '{}'\necho '{}'\n\
             printf '\\033[31mfirst\\033[0m\\nConnection to gpu1 closed by remote host.\\n' >&2\n\
             exit 255",
            hello_line(),
            frame_line(7),
            frame_line(8)
        ),
    );
    let sink = Record::default();
    let mut feed = Feed::default();
    feed.last_seq = Some(6);
    let reason = run_link(fake.link(), &mut feed, &sink).await;
    assert_eq!(reason, "Connection to gpu1 closed by remote host.");
    assert_eq!(*sink.seqs.lock().expect("lock"), [7, 8]);
    assert_eq!(feed.interval, Some(Duration::from_millis(250)));
    assert_eq!(
        sink.links.lock().expect("lock")[0],
        (shared::HostState::Up, None)
    );
}

#[tokio::test]
async fn the_subscribe_line_goes_first_with_the_resume_seq() {
    let fake = FakeSsh::new("sub", "read sub; echo \"got $sub\" >&2; exit 1");
    let sink = Record::default();
    let mut feed = Feed::default();
    feed.last_seq = Some(41);
    let reason = run_link(fake.link(), &mut feed, &sink).await;
    assert!(
        reason.starts_with("got {\"type\":\"subscribe\""),
        "{reason}"
    );
    assert!(reason.contains("\"since_seq\":41"), "{reason}");
}

#[tokio::test]
async fn a_silent_exit_says_how_ssh_ended() {
    let fake = FakeSsh::new("silent", "exit 3");
    let reason = run_link(fake.link(), &mut Feed::default(), &Record::default()).await;
    assert!(reason.contains("exit status: 3"), "{reason}");
}

#[tokio::test]
async fn garbage_and_endless_lines_are_protocol_errors() {
    let fake = FakeSsh::new("garbage", "echo 'Welcome to gpu1!'; sleep 30");
    let reason = run_link(fake.link(), &mut Feed::default(), &Record::default()).await;
    assert!(reason.starts_with("protocol error: "), "{reason}");

    // One line of 20 MiB after hello: refused at 16 MiB, without waiting for its end.
    let fake = FakeSsh::new(
        "endless",
        &format!(
            "echo '{}'; head -c 20971520 /dev/zero | tr '\\000' a; sleep 30",
            hello_line()
        ),
    );
    let reason = run_link(fake.link(), &mut Feed::default(), &Record::default()).await;
    assert_eq!(
        reason,
        "protocol error: line too long (over 16777216 bytes)"
    );
}

#[tokio::test]
async fn silence_before_hello_times_out() {
    let fake = FakeSsh::new("mute", "sleep 30");
    let link = fake.link().hello_timeout(Duration::from_millis(300));
    let reason = run_link(link, &mut Feed::default(), &Record::default()).await;
    assert_eq!(reason, "timed out: no hello from the peer for 300ms");
}

#[tokio::test]
async fn ssh_is_killed_when_the_link_is_dropped() {
    let fake = FakeSsh::new(
        "killed",
        &format!(
            "echo $$ > \"$(dirname \"$0\")/pid\"; echo '{}'; exec sleep 30",
            hello_line()
        ),
    );
    let sink = Record::default();
    let mut feed = Feed::default();
    let mut link = fake.link();
    {
        let run = link.run(&mut feed, &sink);
        let _ = tokio::time::timeout(Duration::from_millis(800), run).await;
    }
    let pid: i32 = std::fs::read_to_string(fake.dir.join("pid"))
        .expect("the fake wrote its pid")
        .trim()
        .parse()
        .expect("a pid");
    let gone = || {
        // A killed child not yet reaped is a zombie: count it as gone.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !gone() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        gone(),
        "ssh (pid {pid}) still runs after its link was dropped"
    );
    assert_eq!(sink.links.lock().expect("lock").len(), 1, "hello came");
}

#[tokio::test]
async fn stderr_written_after_stdout_closed_is_still_the_reason() {
    // Real ssh closes the channel's stdout first and prints its own error after.
    let fake = FakeSsh::new(
        "late",
        "exec 1>&-; sleep 0.3; echo 'Host key verification failed.' >&2; exit 255",
    );
    let reason = run_link(fake.link(), &mut Feed::default(), &Record::default()).await;
    assert_eq!(reason, "Host key verification failed.");
}
