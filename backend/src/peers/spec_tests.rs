//! Tests for [`super`]: the peer forms people write, and hostile lines that must never reach ssh.

use super::*;

fn ws(tls: bool, host: &str, port: u16, path: &str) -> PeerSpec {
    PeerSpec::Ws {
        tls,
        host: host.into(),
        port,
        path: path.into(),
    }
}

#[test]
fn good_peers_parse_and_are_named_as_given() {
    let cases = [
        (
            "ssh://gpu1",
            PeerSpec::Ssh {
                user: None,
                host: "gpu1".into(),
                port: None,
            },
            "ssh://gpu1",
        ),
        (
            "ssh://me.x@gpu-1.lab.example:2222",
            PeerSpec::Ssh {
                user: Some("me.x".into()),
                host: "gpu-1.lab.example".into(),
                port: Some(2222),
            },
            "ssh://me.x@gpu-1.lab.example:2222",
        ),
        ("ws://gpu2:7575", ws(false, "gpu2", 7575, "/"), "gpu2:7575"),
        (
            "wss://10.0.0.3:443/",
            ws(true, "10.0.0.3", 443, "/"),
            "10.0.0.3:443",
        ),
        (
            "wss://proxy:443/gpu3/",
            ws(true, "proxy", 443, "/gpu3/"),
            "proxy:443/gpu3",
        ),
        (
            "ws://[::1]:7575",
            ws(false, "[::1]", 7575, "/"),
            "[::1]:7575",
        ),
    ];
    for (given, want, name) in cases {
        let got = PeerSpec::parse(given).unwrap_or_else(|e| panic!("{given}: {e}"));
        assert_eq!(got, want, "{given}");
        assert_eq!(got.name(), name, "{given}");
    }
    assert_eq!(
        PeerSpec::parse("wss://proxy:443/gpu3")
            .expect("parses")
            .to_string(),
        "wss://proxy:443/gpu3"
    );
}

/// The error for `given`, as a person reads it.
fn refused(given: &str) -> String {
    match PeerSpec::parse(given) {
        Ok(spec) => panic!("{given:?} was accepted as {spec:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn hostile_and_broken_peers_are_refused_with_the_problem() {
    let cases = [
        ("ssh://-oProxyCommand=x", "starts with `-`"),
        ("ssh://-p22", "starts with `-`"),
        ("ssh://-luser@gpu1", "user \"-luser\" starts with `-`"),
        ("ssh://a;rm", "holds ';'"),
        ("ssh://a$(id)", "holds '$'"),
        ("ssh://a`id`", "holds '`'"),
        ("ssh://a b", "holds ' '"),
        ("ssh://a\tb", "holds '\\t'"),
        ("ssh://gpü", "holds 'ü'"),
        ("ssh://a@b@c", "holds '@'"),
        ("ssh://", "host \"\" is empty"),
        ("ssh://@gpu1", "user \"\" is empty"),
        ("ssh://gpu1:0", "port \"0\""),
        ("ssh://gpu1:65536", "port \"65536\""),
        ("ssh://gpu1:+22", "port \"+22\""),
        ("ssh://gpu1/x", "ssh peers take no path"),
        ("ssh://[::1]", "is an IPv6 address"),
        ("ws://h:0", "port \"0\""),
        ("ws://h", "ws://h needs a port"),
        ("wss://h:", "port \"\""),
        ("ws://h:80x", "port \"80x\""),
        ("ws://h:1/a?token=x", "no query"),
        ("ws://h:1/a#x", "path \"/a#x\""),
        ("ws://-h:1", "starts with `-`"),
        ("ws://[::1:1", "is not an IPv6 address"),
        ("ws://[zz]:1", "is not an IPv6 address"),
        ("ws://[::1]x:1", "port \"x:1\""),
        ("http://gpu1:7575", "is not a peer"),
        ("gpu1", "is not a peer"),
        ("", "is not a peer"),
    ];
    for (given, want) in cases {
        let e = refused(given);
        assert!(e.contains(want), "{given:?}: {e:?} does not say {want:?}");
    }
}

#[test]
fn a_huge_peer_is_refused_without_echoing_it_whole() {
    let host = "a".repeat(10 * 1024);
    let e = refused(&format!("ssh://{host}"));
    assert!(e.contains("longer than 253"), "{e}");
    assert!(e.len() < 200, "the error echoes {} bytes", e.len());
    let e = refused(&format!("ssh://{}", "\u{1b}[31m".repeat(2000)));
    assert!(!e.contains('\u{1b}'), "escapes stay escaped: {e:?}");
}

#[test]
fn a_peers_file_has_comments_blank_lines_and_token_files() {
    let text = "# the lab\n\nssh://gpu1\n  ws://gpu2:7575 token-file=/keys/gpu2  # a comment\n\
                wss://gpu3:443\t token-file=gpu3.token\n";
    let lines = parse_peers_file(text).expect("parses");
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0].spec.name(), "ssh://gpu1");
    assert_eq!(lines[0].token_file, None);
    assert_eq!(lines[1].spec.name(), "gpu2:7575");
    assert_eq!(lines[1].token_file, Some(PathBuf::from("/keys/gpu2")));
    assert_eq!(lines[2].token_file, Some(PathBuf::from("gpu3.token")));
    assert_eq!(parse_peers_file("# nothing\n\n"), Ok(Vec::new()));
}

/// The error for the file `text`.
fn file_refused(text: &str) -> String {
    match parse_peers_file(text) {
        Ok(lines) => panic!("{text:?} was accepted as {lines:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_bad_peers_file_line_names_its_number_and_problem() {
    let cases = [
        ("ssh://ok\nssh://-oProxyCommand=x\n", "line 2: host"),
        ("\n\n\nssh://a;rm\n", "line 4: host \"a;rm\" holds ';'"),
        ("ssh://a b\n", "line 1: unknown option \"b\""),
        (
            "ssh://gpu1 token-file=/k\n",
            "line 1: token-file= belongs to ws://",
        ),
        ("ws://h:1 token-file=\n", "line 1: token-file= needs a path"),
        (
            "ws://h:1 token-file=a token-file=b\n",
            "line 1: token-file= is given twice",
        ),
        (
            "ws://h:1 --proxy=x\n",
            "line 1: unknown option \"--proxy=x\"",
        ),
        ("# ok\nws://h:0\n", "line 2: port \"0\""),
        ("ssh://gpü\n", "line 1: host \"gpü\" holds 'ü'"),
    ];
    for (text, want) in cases {
        let e = file_refused(text);
        assert!(e.contains(want), "{text:?}: {e:?} does not say {want:?}");
    }
    let long = format!(
        "ssh://gpu1\nws://h:1 token-file={}\n",
        "x".repeat(10 * 1024)
    );
    let e = file_refused(&long);
    assert!(e.starts_with("line 2: the line is 10"), "{e}");
    assert!(e.len() < 200, "the error echoes {} bytes", e.len());
}

#[test]
fn a_read_peers_file_resolves_token_files_beside_it() {
    let dir = std::env::temp_dir().join(format!("vramio-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join("peers");
    std::fs::write(
        &file,
        "ws://h:1 token-file=t1\nws://h:2 token-file=/abs/t2\n",
    )
    .expect("write");
    let lines = read_peers_file(&file).expect("reads");
    assert_eq!(lines[0].token_file, Some(dir.join("t1")));
    assert_eq!(lines[1].token_file, Some(PathBuf::from("/abs/t2")));
    let missing = read_peers_file(&dir.join("none")).expect_err("missing");
    assert!(
        missing.to_string().contains("cannot read the peers file"),
        "{missing}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
