//! Flag parsing: defaults, floors, formats, conflicts and the errors people see.

use super::*;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("vramio").chain(args.iter().copied()))
}

#[test]
fn defaults_are_loopback_7575_one_second() {
    let Command::Serve(s) = parse(&[]).expect("parses").into_command() else {
        panic!("serve is the default");
    };
    assert_eq!(s.bind.to_string(), "127.0.0.1");
    assert_eq!(s.port, 7575);
    assert_eq!(s.sampling.interval, Duration::from_secs(1));
}

#[test]
fn interval_has_a_floor_and_a_format() {
    let e = parse(&["serve", "--interval", "50ms"]).expect_err("below floor");
    assert!(e.to_string().contains("below the 100 ms floor"), "{e}");
    let e = parse(&["--interval", "soon"]).expect_err("not a duration");
    assert!(e.to_string().contains("not a duration"), "{e}");
    let Command::Serve(s) = parse(&["serve", "--interval", "250ms", "--port", "0"])
        .expect("parses")
        .into_command()
    else {
        panic!("serve");
    };
    assert_eq!(s.sampling.interval, Duration::from_millis(250));
}

#[test]
fn check_and_record_flags() {
    let Command::Check(c) = parse(&["check", "--json", "--window", "3s", "--from", "r.ndjson"])
        .expect("parses")
        .into_command()
    else {
        panic!("check");
    };
    assert!(c.json);
    assert_eq!(c.window, Some(Duration::from_secs(3)));
    assert_eq!(c.from, [std::path::PathBuf::from("r.ndjson")]);
    assert!(parse(&["check", "--window", "0s"]).is_err());
    assert!(parse(&["record"]).is_err(), "--out is required");
    let Command::Record(r) = parse(&[
        "record",
        "--out",
        "f",
        "--duration",
        "2s",
        "--interval",
        "200ms",
    ])
    .expect("parses")
    .into_command() else {
        panic!("record");
    };
    assert_eq!(r.duration, Some(Duration::from_secs(2)));
    assert_eq!(r.sampling.interval, Duration::from_millis(200));
}

#[test]
fn no_auth_is_a_flag() {
    let Command::Serve(s) = parse(&["serve", "--bind", "0.0.0.0", "--no-auth"])
        .expect("parses")
        .into_command()
    else {
        panic!("serve");
    };
    assert!(s.no_auth && !s.bind.is_loopback());
}

#[test]
fn access_and_listen_flags() {
    let Command::Serve(s) = parse(&[
        "serve",
        "--listen",
        "unix:/run/user/1000/vramio.sock",
        "--state-dir",
        "/tmp/s",
        "--public-url",
        "https://GPU7.lab.example/",
    ])
    .expect("parses")
    .into_command() else {
        panic!("serve");
    };
    assert_eq!(
        s.listen,
        Some(Listen::Unix("/run/user/1000/vramio.sock".into()))
    );
    assert_eq!(s.public_url.as_deref(), Some("https://gpu7.lab.example"));
    assert!(parse(&["--listen", "tcp:1.2.3.4:5"]).is_err());
    let Command::Serve(named) = parse(&["serve", "--name", "gpu7-a"])
        .expect("parses")
        .into_command()
    else {
        panic!("serve");
    };
    assert_eq!(named.name.as_deref(), Some("gpu7-a"));
    assert!(parse(&["serve", "--name", "a\u{7}b"]).is_err());
    assert!(parse(&["--listen", "unix:/x", "--port", "1"]).is_err());
    assert!(parse(&["--tls-cert", "c.pem"]).is_err(), "needs --tls-key");
    assert!(parse(&["--public-url", "https://x.example/vramio"]).is_err());
    let Command::Share(sh) = parse(&["share", "create", "--expires", "3s", "--label", "ana"])
        .expect("parses")
        .into_command()
    else {
        panic!("share");
    };
    assert!(matches!(sh.command, ShareCommand::Create { expires, .. } if expires.as_secs() == 3));
    assert!(parse(&["share", "create", "--expires", "31d"]).is_err());
    assert!(parse(&["share", "revoke"]).is_err(), "an id or --all");
    assert!(parse(&["share", "revoke", "--all"]).is_ok());
    for args in [
        &["share", "revoke", "-Bx_y"][..],
        &["share", "revoke", "--state-dir", "/tmp/s", "-Bx_y"][..],
        &["share", "revoke", "-Bx_y", "--state-dir", "/tmp/s"][..],
    ] {
        let Command::Share(sh) = parse(args).expect("an id may start with -").into_command() else {
            panic!("share");
        };
        let ShareCommand::Revoke { id, all, client } = sh.command else {
            panic!("revoke");
        };
        assert_eq!((id.as_deref(), all), (Some("-Bx_y"), false), "{args:?}");
        let given = args.contains(&"--state-dir");
        assert_eq!(client.access.state_dir.is_some(), given, "{args:?}");
    }
    let Command::Share(sh) = parse(&["share", "revoke", "--all"])
        .expect("parses")
        .into_command()
    else {
        panic!("share");
    };
    assert!(matches!(
        sh.command,
        ShareCommand::Revoke {
            id: None,
            all: true,
            ..
        }
    ));
}

#[test]
fn bad_bind_is_refused() {
    assert!(parse(&["--bind", "localhost:80"]).is_err());
}

fn serve_args(args: &[&str]) -> ServeArgs {
    match parse(args).expect("parses").into_command() {
        Command::Serve(s) => s,
        _ => panic!("serve"),
    }
}

/// `--no-auth` and `--metrics-public` are refused wherever more than this host's users reach the
/// server: a non-loopback bind, or a reverse proxy / LAN name (`--public-url`) in front of a
/// loopback bind.
#[test]
fn open_flags_are_refused_behind_a_public_url_too() {
    let proxied = ["--public-url", "https://gpu7.lab.example"];
    for flag in ["--no-auth", "--metrics-public"] {
        let on_loopback = serve_args(&["serve", flag]);
        assert_eq!(on_loopback.exposure_error(), None, "{flag} on loopback");
        let mut args = vec!["serve", flag];
        args.extend(proxied);
        let why = serve_args(&args)
            .exposure_error()
            .unwrap_or_else(|| panic!("{flag} behind --public-url is refused"));
        assert!(
            why.contains(flag) && why.contains("gpu7.lab.example"),
            "{why}"
        );
        let why = serve_args(&["serve", flag, "--bind", "0.0.0.0"])
            .exposure_error()
            .unwrap_or_else(|| panic!("{flag} on 0.0.0.0 is refused"));
        assert!(why.contains("0.0.0.0"), "{why}");
    }
    let unix = serve_args(&["serve", "--metrics-public", "--listen", "unix:/tmp/v.sock"]);
    assert_eq!(
        unix.exposure_error(),
        None,
        "a Unix socket is this host's alone"
    );
    let plain = serve_args(&["serve", "--public-url", "https://gpu7.lab.example"]);
    assert_eq!(
        plain.exposure_error(),
        None,
        "auth on: a public URL is fine"
    );
}
