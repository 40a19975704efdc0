//! Every fixture under `tests/fixtures/imports/` is detected as its own format by the whole
//! registry (the formats' sniffs do not claim each other's logs), and imports to frames.

use super::source::{detect, head};
use std::path::PathBuf;

/// The format id each fixture folder holds.
const FOLDERS: &[(&str, &str)] = &[
    ("nvsmi-csv", "nvidia-smi-csv"),
    ("nvsmi-apps", "nvidia-smi-apps"),
    ("nvsmi-dmon", "dmon"),
    ("nvsmi-pmon", "pmon"),
    ("nvsmi-table", "nvidia-smi"),
    ("iostat", "iostat"),
    ("iostat-json", "iostat-json"),
    ("df", "df"),
];

/// Fixtures that need a flag to be read (no header: `--fields`), so detection rightly refuses.
const NEED_A_FLAG: &[&str] = &[
    "synthetic-noheader-units.csv",
    "synthetic-date-prefix-noheader.csv",
];

#[test]
fn every_fixture_is_detected_as_its_own_format() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/imports");
    let formats = super::formats();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (folder, id) in FOLDERS {
        let Ok(entries) = std::fs::read_dir(root.join(folder)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.as_deref().is_some_and(|n| NEED_A_FLAG.contains(&n)) {
                continue;
            }
            let lines = head(&path).expect("readable");
            match detect(&path, &lines, &formats) {
                Ok(f) if f.id == *id => {}
                Ok(f) => wrong.push(format!(
                    "{}: detected as {}, not {id}",
                    path.display(),
                    f.id
                )),
                Err(e) => wrong.push(format!("{}: {e}", path.display())),
            }
            checked += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked >= 40, "only {checked} fixtures");
}
