//! Every relative link in the docs resolves: in README.md, `docs/`, `deploy/` and `fuzz/`, each
//! `[text](target)` that is not a URL names a file of the repository, and a `#fragment` names a
//! heading of that file (GitHub's anchor rule). The same holds for every `docs/NAME.md#anchor` a
//! source file cites, so code never points at a section that was renamed or moved.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped, spaces
/// to `-` (so `## 8. Performance targets` is `#8-performance-targets`).
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The lines of a Markdown text outside fenced code.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The anchors of every heading in a Markdown text, outside fenced code.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            out.insert(anchor(&line[hashes..]));
        }
    }
    out
}

/// The targets of the `[text](target)` links of a Markdown text, outside fenced and inline code.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        // Inline code spans hold examples, not links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            out.push(target.to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// What is wrong with `target`, linked from `from` (a file of the repository), if anything.
fn check(from: &Path, target: &str) -> Option<String> {
    if target.is_empty()
        || target.contains("://")
        || target.starts_with("mailto:")
        || target.starts_with('<')
    {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        from.to_path_buf()
    } else {
        from.parent().expect("a file's folder").join(path)
    };
    if !file.exists() {
        return Some(format!("{target}: no {}", file.display()));
    }
    let fragment = fragment?;
    if file.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&file).expect("a readable Markdown file");
    (!anchors(&text).contains(fragment))
        .then(|| format!("{target}: no heading #{fragment} in {}", file.display()))
}

fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "deploy", "fuzz"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut md: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        md.sort();
        files.extend(md);
    }
    files
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        let name = e.file_name();
        if name == "target" || name == "dist" || name == "corpus" || name == "artifacts" {
            continue;
        }
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = root();
    let mut broken = Vec::new();
    let mut links = 0;
    for file in markdown_files(&root) {
        let text = std::fs::read_to_string(&file).expect("readable");
        for target in link_targets(&text) {
            links += 1;
            if let Some(why) = check(&file, &target) {
                broken.push(format!("{}: {why}", file.display()));
            }
        }
    }
    assert!(links > 10, "found only {links} links: the reader is broken");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_docs_section_the_code_cites_exists() {
    let root = root();
    let mut sources = Vec::new();
    for dir in ["backend", "frontend", "shared", "xtask", "fuzz", "tests"] {
        rust_files(&root.join(dir), &mut sources);
    }
    let mut broken = Vec::new();
    let mut cited = 0;
    // This file's own examples are not citations.
    sources.retain(|f| !f.ends_with("xtask/tests/doc_links.rs"));
    for file in sources {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("docs/") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/._-#".contains(c)))
                .unwrap_or(tail.len());
            let cite = tail[..end].trim_end_matches(['.', '-']);
            rest = &tail[end..];
            if !cite.contains(".md") {
                continue;
            }
            cited += 1;
            if let Some(why) = check(&root.join("README.md"), cite) {
                broken.push(format!("{}: {why}", file.display()));
            }
        }
    }
    assert!(
        cited > 10,
        "found only {cited} citations: the reader is broken"
    );
    assert!(
        broken.is_empty(),
        "citations of missing docs:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_anchor_rule_is_githubs() {
    assert_eq!(anchor(" 8. Performance targets"), "8-performance-targets");
    assert_eq!(anchor(" 1. The model, in short"), "1-the-model-in-short");
    assert_eq!(anchor(" `vramio hub` & peers"), "vramio-hub--peers");
    let text = "# A\n```\n# not a heading\n```\n## B: c\n";
    assert_eq!(
        anchors(text),
        ["a", "b-c"].into_iter().map(String::from).collect()
    );
    assert_eq!(
        link_targets("see [x](docs/a.md#b) and `[y](z)` and [w](https://e) (no)"),
        ["docs/a.md#b", "https://e"]
    );
}
