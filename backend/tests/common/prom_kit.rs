//! Prometheus' own tools for the tests: `promtool check metrics` on an exposition, a plain
//! HTTP/1.0 GET (vramio's `/metrics`, Prometheus' API), and a real Prometheus server on a free
//! loopback port with a temp data dir, stopped when dropped. Debian's `prometheus` package
//! provides both binaries; without them the tests fail and say how to install it.

#![allow(dead_code, reason = "each test binary uses a part of the kit")]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const INSTALL: &str =
    "promtool/prometheus is not on PATH: apt-get install --no-install-recommends prometheus";

/// `promtool check metrics` on `text`: it must be clean (no lint problem at all).
pub fn check_metrics(text: &str) {
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL}"),
        Err(e) => panic!("running promtool: {e}"),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feeding promtool");
    let out = child.wait_with_output().expect("promtool ends");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics ({}): {said}\n--- the exposition ---\n{text}",
        out.status
    );
}

/// An HTTP answer: status, the raw header block, the body.
pub struct Got {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Got {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// `GET path` on `authority` over HTTP/1.0 (so the body ends with the connection), with an
/// optional bearer token.
pub fn get(authority: &str, path: &str, bearer: Option<&str>) -> Got {
    let mut tcp =
        TcpStream::connect(authority).unwrap_or_else(|e| panic!("connect to {authority}: {e}"));
    tcp.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let auth = bearer
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        tcp,
        "GET {path} HTTP/1.0\r\nHost: {authority}\r\n{auth}\r\n"
    )
    .expect("request");
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    Got {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// The family names an exposition declares (`# TYPE` lines).
pub fn type_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect()
}

/// One sample line parsed: name, labels, value.
pub type Sample = (String, BTreeMap<String, String>, f64);

/// The samples of an exposition (label values without escapes; tests use plain ones).
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("a sample has a value");
            let value: f64 = value.parse().expect("a number");
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split("\",")
                .filter(|p| !p.is_empty())
                .filter_map(|p| {
                    let (k, v) = p.split_once("=\"")?;
                    Some((k.to_owned(), v.trim_end_matches('"').to_owned()))
                })
                .collect();
            (name.to_owned(), labels, value)
        })
        .collect()
}

/// The samples of family `name` whose labels include every pair of `with`.
pub fn find<'a>(all: &'a [Sample], name: &str, with: &[(&str, &str)]) -> Vec<&'a Sample> {
    all.iter()
        .filter(|(n, labels, _)| {
            n == name
                && with
                    .iter()
                    .all(|(k, v)| labels.get(*k).is_some_and(|x| x == v))
        })
        .collect()
}

/// A free TCP port on 127.0.0.1 (bound and released; the caller binds it right away).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Percent-encodes a query-string value.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus server scraping one vramio every second, with `rules` loaded.
pub struct Prometheus {
    child: Child,
    pub authority: String,
    dir: PathBuf,
}

impl Prometheus {
    /// Starts `prometheus` in `dir` (config and data there), scraping `target` (host:port) with
    /// the bearer token in `token_file`, and waits until its API answers.
    pub fn start(dir: &Path, target: &str, token_file: &Path, rules: &[PathBuf]) -> Prometheus {
        let rules: Vec<String> = rules
            .iter()
            .map(|r| format!("  - {:?}\n", r.display().to_string()))
            .collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n{}\
             scrape_configs:\n  - job_name: vramio\n    scrape_interval: 1s\n    \
             authorization:\n      type: Bearer\n      credentials_file: {:?}\n    \
             static_configs:\n      - targets: [{:?}]\n",
            rules.concat(),
            token_file.display().to_string(),
            target
        );
        std::fs::create_dir_all(dir).expect("prometheus dir");
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).expect("write prometheus.yml");
        let port = free_port();
        let authority = format!("127.0.0.1:{port}");
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("log file");
        let child = match Command::new("prometheus")
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={authority}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
        {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL}"),
            Err(e) => panic!("starting prometheus: {e}"),
        };
        let p = Prometheus {
            child,
            authority,
            dir: dir.to_owned(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&p.authority).is_err()
            || get(&p.authority, "/-/ready", None).status != 200
        {
            assert!(
                Instant::now() < deadline,
                "prometheus did not become ready: {}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// An instant query now: `(labels, value)` per series.
    pub fn query(&self, expr: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        self.run_query(&format!("/api/v1/query?query={}", encode(expr)), expr)
    }

    /// An instant query at Unix time `at`.
    pub fn query_at(&self, expr: &str, at: f64) -> Vec<(BTreeMap<String, String>, f64)> {
        self.run_query(
            &format!("/api/v1/query?query={}&time={at:.3}", encode(expr)),
            expr,
        )
    }

    fn run_query(&self, path: &str, expr: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let got = get(&self.authority, path, None);
        let v: serde_json::Value = serde_json::from_str(&got.body)
            .unwrap_or_else(|e| panic!("query {expr}: {e}: {}", got.body));
        assert_eq!(v["status"], "success", "query {expr}: {v}");
        v["data"]["result"]
            .as_array()
            .expect("a vector")
            .iter()
            .map(|s| {
                let labels = s["metric"]
                    .as_object()
                    .expect("labels")
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                    .collect();
                let value = s["value"][1]
                    .as_str()
                    .and_then(|x| x.parse().ok())
                    .expect("a value");
                (labels, value)
            })
            .collect()
    }

    /// Alerts as `(alertname, state)`.
    pub fn alerts(&self) -> Vec<(String, String, serde_json::Value)> {
        let got = get(&self.authority, "/api/v1/alerts", None);
        let v: serde_json::Value = serde_json::from_str(&got.body).expect("alerts JSON");
        v["data"]["alerts"]
            .as_array()
            .expect("alerts")
            .iter()
            .map(|a| {
                (
                    a["labels"]["alertname"].as_str().unwrap_or("").to_owned(),
                    a["state"].as_str().unwrap_or("").to_owned(),
                    a.clone(),
                )
            })
            .collect()
    }

    /// Polls `check` every 500 ms until it returns `Some`, or panics after `within`.
    pub fn wait<T>(&self, within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + within;
        loop {
            if let Some(v) = check() {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; prometheus log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
