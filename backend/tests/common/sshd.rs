//! A real OpenSSH server on 127.0.0.1 for the SSH peer tests: a host key and user keys made with
//! `ssh-keygen` in a temp dir, its own `sshd_config` on a free port, and a client config with one
//! alias per scenario (`testpeer`, `wrongkey`, `unknownhost`). OpenSSH finds `~` in the password
//! database, not `$HOME`, so clients get this config with `-F`.
//! Include with `#[path = "common/sshd.rs"] mod sshd;`.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

#[path = "ci.rs"]
mod ci;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

/// Whether sshd and ssh are installed. Without them a test is skipped, except in CI (the rule of
/// `ci.rs`), where `.ci/run` installs them and their absence is a failure.
pub fn available() -> bool {
    let ok = Path::new(SSHD).is_file()
        && Command::new("ssh")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
    ok || ci::skip(
        "this SSH test",
        &format!("no {SSHD} or ssh (apt-get install openssh-server openssh-client)"),
    )
}

/// A running sshd, killed when dropped, with its temp dir.
pub struct Sshd {
    child: Child,
    pub dir: PathBuf,
    pub port: u16,
    /// The client config: `Host testpeer` (right key, known host key), `wrongkey` (a key the
    /// server does not know), `unknownhost` (an empty known_hosts).
    pub client_config: PathBuf,
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "vramio-test", "-f"])
        .arg(path)
        .output()
        .expect("run ssh-keygen");
    assert!(out.status.success(), "ssh-keygen: {out:?}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl Sshd {
    pub fn start(name: &str) -> Sshd {
        let dir = std::env::temp_dir().join(format!("vramio-sshd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        for key in ["host_key", "user_key", "other_key"] {
            keygen(&dir.join(key));
        }
        let authorized = dir.join("authorized_keys");
        std::fs::copy(dir.join("user_key.pub"), &authorized).expect("authorized_keys");
        // As root, sshd wants its privilege-separation directory (the package's service makes it).
        if rustix::process::geteuid().is_root() {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = free_port();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n\
                 AuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\n\
                 UsePAM no\nStrictModes no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 PermitRootLogin prohibit-password\nPrintMotd no\nPrintLastLog no\n\
                 AcceptEnv none\nLogLevel VERBOSE\n",
                d = dir.display()
            ),
        )
        .expect("sshd_config");
        let host_pub = std::fs::read_to_string(dir.join("host_key.pub")).expect("host key");
        let known = dir.join("known_hosts");
        std::fs::write(&known, format!("[127.0.0.1]:{port} {host_pub}")).expect("known_hosts");
        std::fs::write(dir.join("known_hosts_empty"), "").expect("known_hosts");
        let client_config = dir.join("ssh_config");
        let alias = |alias: &str, key: &str, known: &str| {
            format!(
                "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {u}\n  \
                 IdentityFile {d}/{key}\n  IdentitiesOnly yes\n  IdentityAgent none\n  \
                 UserKnownHostsFile {d}/{known}\n  GlobalKnownHostsFile /dev/null\n  \
                 StrictHostKeyChecking yes\n  PasswordAuthentication no\n  ConnectTimeout 5\n",
                u = user(),
                d = dir.display()
            )
        };
        std::fs::write(
            &client_config,
            [
                alias("testpeer", "user_key", "known_hosts"),
                alias("wrongkey", "other_key", "known_hosts"),
                alias("unknownhost", "user_key", "known_hosts_empty"),
            ]
            .concat(),
        )
        .expect("ssh_config");
        let log = std::fs::File::create(dir.join("sshd.log")).expect("sshd log");
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        let sshd = Sshd {
            child,
            dir,
            port,
            client_config,
        };
        sshd.wait_listening();
        sshd
    }

    fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("sshd did not listen on {}: {}", self.port, self.log());
    }

    /// What sshd logged (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
