//! `ServerMsg::from_json` against the derived decoder: the golden messages, their re-encodings
//! and hostile texts decode alike, except for the three documented differences.

use crate::ServerMsg;

fn derived(text: &str) -> serde_json::Result<ServerMsg> {
    serde_json::from_str(text)
}

fn golden() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/protocol");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("the protocol fixtures")
        .map(|e| e.expect("an entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("server-"))
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a fixture");
            (p.display().to_string(), text)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_golden_message_decodes_as_the_derive_does_and_round_trips() {
    let golden = golden();
    assert_eq!(golden.len(), 14, "one fixture per variant");
    let mut kinds = std::collections::HashSet::new();
    for (name, text) in golden {
        let want = derived(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = ServerMsg::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
        let again = serde_json::to_string(&got).expect("encodes");
        assert_eq!(
            ServerMsg::from_json(&again).expect("decodes"),
            got,
            "{name}"
        );
        kinds.insert(std::mem::discriminant(&got));
    }
    assert_eq!(
        kinds.len(),
        super::VARIANTS.len(),
        "every variant is covered"
    );
}

#[test]
fn hostile_texts_fail_or_decode_as_the_derive_does() {
    let cases = [
        "",
        "null",
        "{}",
        r#"{"type":"nope"}"#,
        r#"{"type":"lagged"}"#,
        r#"{"type":"lagged","skipped":-1}"#,
        r#"{"type":"lagged","skipped":1.5}"#,
        r#"{"type":"lagged","skipped":3,"extra":[1,2]}"#,
        r#"{"skipped":3,"type":"lagged"}"#,
        r#"{"type":"lagged","skipped":3,"skipped":4}"#,
        r#"{"type":"lagged","type":"pong","skipped":3}"#,
        r#"{"type":"lagged","skipped":3} trailing"#,
        r#"{"type":"pong","anything":{"deep":[null]}}"#,
        r#"  {"type":"pong"}  "#,
        r#"{"type":"error","code":"no_such_code","message":"m"}"#,
        r#"{"type":"host_status","host":"h","state":"up","last_seen_ms":null}"#,
        r#"{"type":"host_status","host":"h","state":"up","error":5}"#,
        r#"{"type":"hel\u006co","protocol":5,"version":"v","hosts":[],"interval_ms":1000}"#,
        r#"{"type":"frame","host":"h","frame":{}}"#,
        r#"{"type":"reset","host":"h","frames":18446744073709551616}"#,
        r#"{"t\u0079pe":"lagged","skipped":3}"#,
        r#"{"type":"lagged","skipped":3,"type":"lagged"}"#,
        "\u{feff}{\"type\":\"pong\"}",
        "\u{c}{\"type\":\"pong\"}",
        r#"{"type":"host_status","host":"h","state":"up","last_seen_ms":1e400}"#,
        r#"{"type":"error","code":"bad_message","message":"\udc00"}"#,
    ];
    for text in cases {
        match (ServerMsg::from_json(text), derived(text)) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
            (Err(_), Err(_)) => {}
            (got, want) => panic!("{text}: from_json {got:?}, derived {want:?}"),
        }
    }
}

#[test]
fn only_objects_are_taken_where_the_derive_also_takes_arrays() {
    for text in [
        r#"["pong"]"#,
        r#"["lagged",3]"#,
        r#"["host_status","h","up"]"#,
    ] {
        assert!(derived(text).is_ok(), "the derive takes {text}");
        let err = ServerMsg::from_json(text).expect_err(text);
        assert!(err.to_string().contains("JSON object"), "{err}");
    }
    // A unit variant as an empty object.
    let text = r#"{"type":"host_status","host":"h","state":{"up":{}}}"#;
    assert!(derived(text).is_ok(), "the derive takes {text}");
    ServerMsg::from_json(text).expect_err(text);
    let err = ServerMsg::from_json(r#"{"type":"nope"}"#).expect_err("unknown");
    assert!(err.to_string().contains("unknown variant `nope`"), "{err}");
    assert!(err.to_string().contains("host_status"), "{err}");
    let err = ServerMsg::from_json(r#"{"type":10}"#).expect_err("a number");
    assert!(derived(r#"{"type":10}"#).is_err());
    assert!(err.to_string().contains("expected a string"), "{err}");
}

#[test]
fn fields_it_does_not_read_are_skipped_unchecked_where_the_derive_reads_them() {
    for text in [
        r#"{"type":"pong","x":1e400}"#,
        r#"{"type":"pong","x":"\udc00"}"#,
        r#"{"type":"lagged","skipped":3,"x":1e400}"#,
    ] {
        assert!(derived(text).is_err(), "the derive refuses {text}");
        ServerMsg::from_json(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    let deep = format!(
        r#"{{"type":"pong","x":{}{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    assert!(derived(&deep).is_err(), "past serde_json's depth limit");
    assert_eq!(
        ServerMsg::from_json(&deep).expect("skipped"),
        ServerMsg::Pong
    );
}
