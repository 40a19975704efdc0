//! dcgm-exporter's HPC job-mapping files (`--job-map-dir DIR`, docs/jobs.md#1-what-a-job-is):
//! one file per GPU, named by its index, holding the ids of the jobs on that GPU one per line, as
//! a site's scheduler prolog writes them for dcgm-exporter. A GPU process vramio would otherwise
//! group by its process tree is then the job its GPUs name, with no work at sites that already
//! write them.
//!
//! The folder is the administrator's, but its files are read as untrusted text: an id is at most
//! [`MAX_ID`] letters, digits, `_`, `-` or `.`; other lines, files not named by a number, and
//! text past [`MAX_FILE`] bytes are ignored.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Longest job id taken.
pub const MAX_ID: usize = 64;
/// Bytes read of one file.
pub const MAX_FILE: u64 = 4096;
/// GPU files read from the folder.
const MAX_GPUS: usize = 1024;

/// GPU index -> the job ids its file names.
pub type JobMap = BTreeMap<u32, Vec<String>>;

fn valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The ids of one file's text, in order, without repeats.
pub fn parse(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for id in text.lines().map(str::trim).filter(|l| valid(l)) {
        if !ids.iter().any(|i| i == id) {
            ids.push(id.to_owned());
        }
    }
    ids
}

/// Reads the folder; an unreadable folder or file maps nothing.
pub fn read(dir: &Path) -> JobMap {
    let mut map = JobMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return map;
    };
    for entry in entries.flatten().take(MAX_GPUS) {
        let Some(index) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(file) = std::fs::File::open(entry.path()) else {
            continue;
        };
        let mut text = String::new();
        if file.take(MAX_FILE).read_to_string(&mut text).is_err() {
            continue;
        }
        let ids = parse(&text);
        if !ids.is_empty() {
            map.insert(index, ids);
        }
    }
    map
}

/// The job of a process on the GPUs `indices`: the one id every one of them names, when each
/// names exactly one (a GPU shared by two jobs says nothing about whose process this is).
pub fn job_of<'m>(map: &'m JobMap, indices: &[u32]) -> Option<&'m str> {
    let mut found: Option<&str> = None;
    for i in indices {
        let [id] = map.get(i)?.as_slice() else {
            return None;
        };
        match found {
            Some(f) if f != id => return None,
            _ => found = Some(id),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked_and_deduplicated() {
        assert_eq!(parse("4412\n4412\n\n  4413_7 \n"), ["4412", "4413_7"]);
        assert!(parse("job with spaces\n$(rm -rf)\n\u{202e}evil\n").is_empty());
        assert!(parse(&"9".repeat(MAX_ID + 1)).is_empty());
    }

    #[test]
    fn a_process_gets_the_one_job_all_its_gpus_name() {
        let map: JobMap = [
            (0, vec!["4412".to_owned()]),
            (1, vec!["4412".to_owned()]),
            (2, vec!["77".to_owned()]),
            (3, vec!["1".to_owned(), "2".to_owned()]),
        ]
        .into();
        assert_eq!(job_of(&map, &[0, 1]), Some("4412"));
        assert_eq!(job_of(&map, &[0, 2]), None, "two jobs");
        assert_eq!(job_of(&map, &[3]), None, "a shared GPU");
        assert_eq!(job_of(&map, &[5]), None, "no file");
        assert_eq!(job_of(&map, &[]), None);
    }

    #[test]
    fn the_folder_is_read_by_gpu_index() {
        let dir = std::env::temp_dir().join(format!("vramio-jobmap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("0"), "4412\n").expect("write");
        std::fs::write(dir.join("README"), "4412\n").expect("write");
        std::fs::write(dir.join("1"), format!("{}\n", "7".repeat(10_000))).expect("write");
        let map = read(&dir);
        assert_eq!(map.len(), 1, "{map:?}");
        assert_eq!(
            map.get(&0).map(Vec::as_slice),
            Some(&["4412".to_owned()][..])
        );
        assert!(read(&dir.join("missing")).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
