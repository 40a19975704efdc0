//! The `deploy/` folder checked: promtool accepts the scrape config, the alert rules and their unit
//! tests; every PromQL expression in the rules and the Grafana dashboard parses and selects only
//! metrics vramio exports; the dashboard's variables, filters and datasources are wired; the
//! systemd user unit passes `systemd-analyze verify`. promtool is required: without it these tests
//! fail (they never skip); systemd-analyze follows the one CI rule (`common/ci.rs`).

#[path = "common/ci.rs"]
mod ci;
#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/prom_kit.rs"]
mod prom_kit;
#[path = "common/promql_names.rs"]
mod promql_names;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use promql_names::{Selector, metric_names, selectors};
use serde_json::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use vramio_bin::{Server, TempDir};

const INSTALL: &str = "promtool is not on PATH: apt-get install --no-install-recommends prometheus";

/// The token path prometheus.yml names; promtool insists that the file exists.
const TOKEN_PATH: &str = "/etc/prometheus/vramio.token";

/// Series Prometheus makes itself that the rules may use.
const PROMETHEUS_OWN: &[&str] = &["up"];

/// Every metric name vramio's `/metrics` shows, from a live scrape of a `vramio serve` in hub
/// mode (it samples this host and watches a peer that is down, so `vramio_host_up` is there too).
/// Every family is declared in every scrape, with or without samples.
fn exported_names() -> BTreeSet<String> {
    static NAMES: OnceLock<BTreeSet<String>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            let dir = TempDir::new("deploy-names");
            let script = dir.join("gpu.json");
            std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id()))
                .expect("script");
            let token = dir.join("peer.token");
            std::fs::write(&token, "0123456789abcdef0123456789abcdef").expect("token");
            std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600))
                .expect("chmod");
            let dead = format!("ws://127.0.0.1:{}", prom_kit::free_port());
            let s = Server::start(
                &dir.join("state"),
                &script,
                &[
                    "--port",
                    "0",
                    "--peer-token-file",
                    &token.to_string_lossy(),
                    "--peer",
                    &dead,
                ],
            );
            let got = prom_kit::get(s.authority(), "/metrics", Some(s.token()));
            assert_eq!(got.status, 200, "{}", got.body);
            let names = prom_kit::type_names(&got.body);
            assert!(names.contains("vramio_host_up"), "{}", got.body);
            names
        })
        .clone()
}

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(file)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Runs `promtool ARGS` and fails with its output unless it succeeds.
fn promtool(args: &[&str], dir: &Path) {
    let out = match Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL}"),
        Err(e) => panic!("running promtool: {e}"),
    };
    assert!(
        out.status.success(),
        "promtool {args:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fresh private directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vramio-deploy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the scratch directory");
    dir
}

#[test]
fn prometheus_config_passes_promtool() {
    // promtool stats the credentials file, so check a copy that names a token that exists, next
    // to a copy of the rules it loads (rule_files resolve relative to the config).
    let dir = scratch("config");
    let config = read(&deploy("prometheus.yml"));
    assert_eq!(
        config
            .matches(&format!("credentials_file: {TOKEN_PATH}"))
            .count(),
        2,
        "both jobs use the token file"
    );
    let token = dir.join("vramio.token");
    std::fs::write(&token, "not-a-real-token\n").expect("writing the token");
    let copy = config.replace(TOKEN_PATH, &token.display().to_string());
    std::fs::write(dir.join("prometheus.yml"), copy).expect("writing the config copy");
    std::fs::copy(deploy("vramio-alerts.yml"), dir.join("vramio-alerts.yml"))
        .expect("copying the rules");
    promtool(&["check", "config", "prometheus.yml"], &dir);
    for needle in [
        "job_name: vramio\n",
        "job_name: vramio-hub\n",
        "scrape_interval: 15s",
        "# scheme: https",
        "ca_file:",
    ] {
        assert!(config.contains(needle), "prometheus.yml lacks `{needle}`");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn alert_rules_pass_promtool_check_and_unit_tests() {
    let dir = deploy("");
    promtool(&["check", "rules", "vramio-alerts.yml"], &dir);
    promtool(&["test", "rules", "vramio-alerts.test.yml"], &dir);
}

/// Every alert in the unit tests has a case where it fires and one where it must not.
#[test]
fn every_alert_has_a_firing_and_a_silent_case() {
    let tests = read(&deploy("vramio-alerts.test.yml"));
    for alert in alert_names(&read(&deploy("vramio-alerts.yml"))) {
        let cases: Vec<&str> = tests
            .split("- eval_time:")
            .filter(|c| c.contains(&format!("alertname: {alert}\n")))
            .collect();
        assert!(
            cases.iter().any(|c| c.contains("exp_alerts:\n")),
            "{alert} never fires in the tests"
        );
        assert!(
            cases.iter().any(|c| c.contains("exp_alerts: []")),
            "{alert} has no must-not-fire case"
        );
    }
}

fn alert_names(rules: &str) -> Vec<String> {
    rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .map(|a| a.trim().to_owned())
        .collect()
}

/// The `expr:` values of a rules file (single-line, or a `|`/`>` block), and the PromQL strings
/// its templates hand to `query` (`printf "..."`).
fn rule_exprs(rules: &str) -> Vec<String> {
    let lines: Vec<&str> = rules.lines().collect();
    let mut exprs = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("expr:") else {
            continue;
        };
        let rest = rest.trim();
        if !rest.starts_with(['|', '>']) {
            exprs.push(rest.trim_matches(['"', '\'']).to_owned());
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let block = lines[n + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent);
        exprs.push(block.map(|l| l.trim()).collect::<Vec<_>>().join(" "));
    }
    for piece in rules.split("printf").skip(1) {
        let literal = piece
            .trim_start()
            .strip_prefix('"')
            .and_then(|p| p.split_once('"'))
            .map(|(q, _)| q);
        exprs.push(
            literal
                .expect("printf is followed by a string literal")
                .replace("%q", "\"x\""),
        );
    }
    exprs
}

fn dashboard() -> Value {
    serde_json::from_str(&read(&deploy("grafana/vramio.json"))).expect("vramio.json is valid JSON")
}

fn panels(d: &Value) -> Vec<&Value> {
    let top = d["panels"].as_array().expect("the dashboard has panels");
    // Collapsed rows hold their panels inside.
    top.iter()
        .flat_map(|p| std::iter::once(p).chain(p["panels"].as_array().into_iter().flatten()))
        .collect()
}

fn variables(d: &Value) -> &Vec<Value> {
    d["templating"]["list"]
        .as_array()
        .expect("the dashboard has template variables")
}

/// A variable query: a string, or Grafana's `{"query": "..."}` object.
fn variable_queries(v: &Value) -> Vec<String> {
    [&v["definition"], &v["query"], &v["query"]["query"]]
        .iter()
        .filter_map(|q| q.as_str())
        .map(str::to_owned)
        .collect()
}

/// The PromQL of every panel target, with the panel's title.
fn target_exprs(d: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in panels(d) {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"]
                .as_str()
                .unwrap_or_else(|| panic!("a target of `{}` has no expr", p["title"]));
            out.push((
                p["title"].as_str().unwrap_or("?").to_owned(),
                expr.to_owned(),
            ));
        }
    }
    out
}

fn assert_only_exported(what: &str, exprs: &[String]) {
    let known = exported_names();
    assert!(!exprs.is_empty(), "no expressions found in {what}");
    for e in exprs {
        let names = metric_names(e).unwrap_or_else(|err| panic!("{what}: {err}"));
        assert!(!names.is_empty(), "{what}: `{e}` selects no metric");
        for n in names {
            assert!(
                known.contains(&n) || PROMETHEUS_OWN.contains(&n.as_str()),
                "{what}: `{e}` uses `{n}`, which vramio does not export"
            );
        }
    }
}

#[test]
fn alert_rules_use_only_exported_metrics() {
    let rules = read(&deploy("vramio-alerts.yml"));
    let exprs = rule_exprs(&rules);
    let alerts = alert_names(&rules).len();
    assert!(alerts >= 6, "only {alerts} alerts");
    // One expression per alert, plus one per template `query`: none was missed.
    let queries = rules.matches("| query").count();
    assert!(queries >= 2, "the annotations' figures come from queries");
    assert_eq!(
        exprs.len(),
        alerts + queries,
        "expressions found: {exprs:#?}"
    );
    assert_only_exported("vramio-alerts.yml", &exprs);
}

#[test]
fn dashboard_uses_only_exported_metrics() {
    let d = dashboard();
    let mut exprs: Vec<String> = target_exprs(&d).into_iter().map(|(_, e)| e).collect();
    exprs.extend(
        variables(&d)
            .iter()
            .filter(|v| v["type"] == "query")
            .flat_map(variable_queries),
    );
    assert_only_exported("grafana/vramio.json", &exprs);
}

/// promtool parses every dashboard query (as recording rules; Grafana's range variable replaced).
#[test]
fn dashboard_queries_parse() {
    let dir = scratch("dashboard");
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (n, (_, e)) in target_exprs(&dashboard()).iter().enumerate() {
        let e = e.replace("$__rate_interval", "1m");
        let quoted = serde_json::to_string(&e).expect("a string serializes");
        rules.push_str(&format!(
            "      - record: dashboard:query{n}\n        expr: {quoted}\n"
        ));
    }
    std::fs::write(dir.join("dashboard.yml"), rules).expect("writing the rules");
    promtool(&["check", "rules", "dashboard.yml"], &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dashboard_declares_and_uses_its_variables() {
    let d = dashboard();
    assert_eq!(d["schemaVersion"], 39);
    assert_eq!(d["__inputs"][0]["name"], "DS_PROMETHEUS");
    let vars = variables(&d);
    let ds = vars
        .iter()
        .find(|v| v["name"] == "datasource")
        .expect("a `datasource` variable");
    assert_eq!(
        (ds["type"].as_str(), ds["query"].as_str()),
        (Some("datasource"), Some("prometheus"))
    );
    let declared: Vec<&str> = vars.iter().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(declared, ["datasource", "instance", "host", "gpu"]);
    for name in declared {
        // Used by a panel, or by another variable's query or datasource.
        let others: Vec<&Value> = vars.iter().filter(|v| v["name"] != name).collect();
        let text = format!(
            "{} {}",
            d["panels"],
            serde_json::to_string(&others).expect("serializes")
        );
        assert!(
            uses_variable(&text, name),
            "variable `{name}` is declared but never used"
        );
    }
    assert!(!uses_variable("$instances ${hostname}", "instance") && !uses_variable("$x", "host"));
}

fn uses_variable(text: &str, name: &str) -> bool {
    text.match_indices(&format!("${name}")).any(|(i, m)| {
        !text[i + m.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    }) || text.contains(&format!("${{{name}}}"))
        || text.contains(&format!("${{{name}:"))
}

#[test]
fn every_panel_has_the_datasource_and_filters_by_the_variables() {
    let d = dashboard();
    let wanted = serde_json::json!({"type": "prometheus", "uid": "${datasource}"});
    for p in panels(&d).into_iter().filter(|p| p["type"] != "row") {
        let title = &p["title"];
        assert_eq!(p["datasource"], wanted, "panel {title} has no datasource");
        let targets = p["targets"]
            .as_array()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| panic!("panel {title} has no query"));
        for t in targets {
            assert_eq!(t["datasource"], wanted, "a query of panel {title}");
        }
    }
    for (title, expr) in target_exprs(&d) {
        for s in selectors(&expr).unwrap_or_else(|e| panic!("{title}: {e}")) {
            assert_filtered(&title, &s);
        }
    }
}

/// A dashboard selector filters by instance and host, and a GPU series also by gpu.
fn assert_filtered(title: &str, s: &Selector) {
    let m = s.matchers.as_deref().unwrap_or("");
    let mut wanted = vec![r#"instance=~"$instance""#, r#"host=~"$host""#];
    if s.name.starts_with("vramio_gpu_") {
        wanted.push(r#"gpu=~"$gpu""#);
    }
    for w in wanted {
        assert!(
            m.split(',').any(|part| part.trim() == w),
            "panel `{title}`: `{}` lacks {w}",
            s.name
        );
    }
}

/// `deploy/systemd/vramio.service` passes `systemd-analyze --user verify` (no error and no
/// warning), with the vramio this build made where the unit looks for it (`~/.local/bin`), and
/// starts `serve` on a Unix socket under `$XDG_RUNTIME_DIR`.
#[test]
fn the_systemd_user_unit_verifies() {
    let Some(analyze) = which("systemd-analyze") else {
        ci::skip(
            "the_systemd_user_unit_verifies",
            "systemd-analyze is not on PATH (apt-get install systemd)",
        );
        return;
    };
    let unit = deploy("systemd/vramio.service");
    let text = read(&unit);
    assert!(
        text.contains("ExecStart=%h/.local/bin/vramio serve --listen unix:%t/vramio.sock"),
        "{text}"
    );
    let dir = scratch("systemd");
    let home = dir.join("home");
    let runtime = dir.join("run");
    std::fs::create_dir_all(home.join(".local/bin")).expect("home");
    std::fs::create_dir_all(&runtime).expect("runtime dir");
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).expect("0700");
    std::fs::copy(env!("CARGO_BIN_EXE_vramio"), home.join(".local/bin/vramio"))
        .expect("the binary where the unit looks");
    let verify = || {
        Command::new(&analyze)
            .args(["--user", "verify"])
            .arg(&unit)
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime)
            .output()
            .expect("systemd-analyze runs")
    };
    let out = verify();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "warnings: {stderr}");
    // Without the binary the same check fails: it is a check that can fail.
    std::fs::remove_file(home.join(".local/bin/vramio")).expect("remove");
    let out = verify();
    assert!(!out.status.success(), "a missing binary was not noticed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The path of `tool` on PATH.
fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}
