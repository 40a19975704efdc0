//! docs/cli.md is the command line as clap defines it ([`vramio::cli::markdown`]): this test
//! fails while the file differs from the code, naming the first differing line, and with
//! `VRAMIO_UPDATE_CLI_DOCS=1` (what `cargo xtask cli-docs` sets) writes the file instead.

use std::path::{Path, PathBuf};

/// Set to `1` to write docs/cli.md instead of comparing.
const UPDATE_ENV: &str = "VRAMIO_UPDATE_CLI_DOCS";

fn cli_md() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md")
}

/// Where `found` first departs from `wanted`, as a sentence with both lines; `None` when equal.
fn first_difference(found: &str, wanted: &str) -> Option<String> {
    let mut found_lines = found.lines();
    let mut wanted_lines = wanted.lines();
    for n in 1.. {
        match (found_lines.next(), wanted_lines.next()) {
            (None, None) => break,
            (f, w) if f == w => continue,
            (f, w) => {
                let show = |l: Option<&str>| l.map_or("(the end)".to_owned(), |l| format!("{l:?}"));
                return Some(format!(
                    "line {n}: the file has {}, the code gives {}",
                    show(f),
                    show(w)
                ));
            }
        }
    }
    // Same lines, other bytes: line endings or the final newline.
    (found != wanted).then(|| "the lines agree but the line endings differ".to_owned())
}

/// Replaces the file only once the new text is whole: a temp file beside it, then a rename.
fn write(path: &Path, text: &str) {
    let tmp = path.with_extension("md.tmp");
    std::fs::write(&tmp, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", tmp.display()));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| {
        panic!(
            "cannot rename {} over {}: {e}",
            tmp.display(),
            path.display()
        )
    });
}

#[test]
fn docs_cli_md_is_the_command_line() {
    let wanted = vramio::cli::markdown();
    let path = cli_md();
    if std::env::var(UPDATE_ENV).is_ok_and(|v| v == "1") {
        write(&path, &wanted);
        eprintln!("wrote {}", path.display());
        return;
    }
    let found = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; make it with `cargo xtask cli-docs`",
            path.display()
        )
    });
    if let Some(why) = first_difference(&found, &wanted) {
        panic!(
            "docs/cli.md differs from the command line the code defines; regenerate it with \
             `cargo xtask cli-docs`.\nFirst difference, {why}"
        );
    }
}

#[test]
fn the_first_difference_is_named() {
    assert_eq!(first_difference("a\nb\n", "a\nb\n"), None);
    assert_eq!(
        first_difference("a\nb\n", "a\nc\n").as_deref(),
        Some(r#"line 2: the file has "b", the code gives "c""#)
    );
    assert_eq!(
        first_difference("a\n", "a\nc\n").as_deref(),
        Some(r#"line 2: the file has (the end), the code gives "c""#)
    );
    assert!(first_difference("a\n", "a").is_some());
}
