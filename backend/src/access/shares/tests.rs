//! The share store: links work, end, survive a restart, and a damaged store is left alone.

use super::*;
use std::path::PathBuf;

fn temp_dir() -> (PathBuf, StateDir) {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("random");
    let root = std::env::temp_dir().join(format!("vramio-shares-{}", u64::from_le_bytes(b)));
    let dir = StateDir::open(Some(&root)).expect("state dir");
    (root, dir)
}

const NOW: u64 = 1_800_000_000_000;
const BASE: &str = "http://localhost:7575";

fn create(s: &Shares, secs: u64, label: &str) -> ShareInfo {
    s.create(
        &CreateShare {
            expires_s: Some(secs),
            label: Some(label.into()),
            show_users: false,
            host: None,
            live_only: false,
        },
        NOW,
        BASE,
    )
    .expect("creates")
}

fn split(url: &str) -> (String, String) {
    let rest = url.strip_prefix(&format!("{BASE}/s/")).expect("base/s/");
    let (id, secret) = rest.split_once('#').expect("fragment");
    (id.to_owned(), secret.to_owned())
}

#[test]
fn a_link_works_until_it_expires_or_is_revoked() {
    let (root, dir) = temp_dir();
    let s = Shares::open(dir);
    assert_eq!(s.off_reason(), None);
    let a = create(&s, 3600, "for ana");
    let (id, secret) = split(&a.url);
    assert_eq!(id.len(), ID_CHARS);
    assert_eq!(secret.len(), SECRET_CHARS);
    assert!(
        matches!(s.check(&id, &secret, NOW + 1000), Standing::Active(g) if g.label.as_deref() == Some("for ana"))
    );
    let mut wrong = secret.clone();
    wrong.replace_range(0..1, if secret.starts_with('A') { "B" } else { "A" });
    assert_eq!(s.check(&id, &wrong, NOW), Standing::Gone);
    assert_eq!(s.check(&id, &secret, NOW + 3_600_000), Standing::Expired);
    let mut changes = s.watch();
    assert!(s.revoke(&id, NOW).expect("revokes"));
    assert!(changes.has_changed().expect("open"));
    changes.mark_unchanged();
    assert_eq!(s.check(&id, &secret, NOW), Standing::Gone);
    assert!(!s.revoke(&id, NOW).expect("already gone"));
    assert!(
        !s.revoke("../../etc/passwd", NOW)
            .expect("malformed is not found")
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn links_survive_a_restart_and_rotation_ends_them_all() {
    let (root, dir) = temp_dir();
    let s = Shares::open(dir.clone());
    let a = create(&s, 3600, "a");
    let b = create(&s, 7200, "b");
    drop(s);
    let s = Shares::open(dir.clone());
    let listed = s.list(NOW, BASE).expect("lists");
    assert_eq!(
        listed,
        vec![a.clone(), b.clone()],
        "same ids, same urls, soonest first"
    );
    let (id, secret) = split(&b.url);
    assert!(matches!(s.check(&id, &secret, NOW), Standing::Active(_)));
    assert_eq!(s.rotate(NOW).expect("rotates"), 2);
    assert_eq!(s.check(&id, &secret, NOW), Standing::Gone);
    drop(s);
    let s = Shares::open(dir);
    assert_eq!(s.off_reason(), None);
    assert!(s.list(NOW, BASE).expect("lists").is_empty());
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_damaged_store_turns_sharing_off_and_is_kept() {
    let (root, dir) = temp_dir();
    let s = Shares::open(dir.clone());
    create(&s, 3600, "a");
    drop(s);
    let path = dir.file(STORE_FILE);
    let text = std::fs::read_to_string(&path).expect("reads");
    // Someone extends a link by hand: the signature no longer holds.
    let edited = text.replacen("\"expires_ms\": 18", "\"expires_ms\": 19", 1);
    assert_ne!(edited, text);
    std::fs::write(&path, &edited).expect("writes");
    let s = Shares::open(dir.clone());
    let reason = s.off_reason().expect("sharing is off");
    assert!(
        reason.contains("no valid signature") && reason.contains(STORE_FILE),
        "{reason}"
    );
    assert!(matches!(
        s.create(&CreateShare::default(), NOW, BASE),
        Err(ShareError::Off(_))
    ));
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), edited);
    std::fs::write(&path, b"{not json").expect("writes");
    let s = Shares::open(dir.clone());
    let reason = s.off_reason().expect("off");
    assert!(reason.contains("is not a vramio share store"), "{reason}");
    assert!(s.rotate(NOW).is_err(), "no rotation over a damaged store");
    assert_eq!(std::fs::read(&path).expect("kept"), b"{not json");
    let _ = std::fs::remove_dir_all(root);
}

/// A link made live only stays so across a restart, and its record without the flag (an
/// edit that would open the history to it) no longer verifies; records from before the flag
/// (none written) still do.
#[test]
fn live_only_is_kept_signed_and_an_edit_that_drops_it_is_caught() {
    let (root, dir) = temp_dir();
    let s = Shares::open(dir.clone());
    let plain = create(&s, 3600, "plain");
    assert!(!plain.live_only);
    let live = s
        .create(
            &CreateShare {
                expires_s: Some(3600),
                label: Some("live".into()),
                live_only: true,
                ..CreateShare::default()
            },
            NOW,
            BASE,
        )
        .expect("creates");
    assert!(live.live_only);
    drop(s);
    let s = Shares::open(dir.clone());
    assert_eq!(s.off_reason(), None, "old and new records verify");
    let (id, secret) = split(&live.url);
    assert!(matches!(s.check(&id, &secret, NOW), Standing::Active(g) if g.live_only));
    let (id, secret) = split(&plain.url);
    assert!(matches!(s.check(&id, &secret, NOW), Standing::Active(g) if !g.live_only));
    let path = dir.file(STORE_FILE);
    let text = std::fs::read_to_string(&path).expect("reads");
    assert!(
        !text.contains("\"live_only\": false"),
        "a plain record is written as before the flag: {text}"
    );
    drop(s);
    let edited = text.replacen("\"live_only\": true,", "", 1);
    assert_ne!(edited, text, "the flag is in the file: {text}");
    std::fs::write(&path, &edited).expect("writes");
    let s = Shares::open(dir);
    let reason = s.off_reason().expect("sharing is off");
    assert!(reason.contains("no valid signature"), "{reason}");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn hostile_ids_and_secrets_are_gone() {
    let (root, dir) = temp_dir();
    let s = Shares::open(dir);
    let a = create(&s, 60, "a");
    let (id, _) = split(&a.url);
    for bad in ["", ":id", "../x", &"A".repeat(10_000), "%00", &id[..21]] {
        assert_eq!(s.standing(bad, NOW), Standing::Gone, "{bad:?}");
        assert_eq!(s.check(bad, "x", NOW), Standing::Gone);
    }
    assert_eq!(s.check(&id, &"A".repeat(SECRET_CHARS), NOW), Standing::Gone);
    assert!(
        s.create(
            &CreateShare {
                expires_s: Some(31 * 24 * 3600),
                ..CreateShare::default()
            },
            NOW,
            BASE
        )
        .is_err()
    );
    let _ = std::fs::remove_dir_all(root);
}

/// Two stores over one directory (two processes): each change reads the file, changes it and
/// writes it, so neither writes back a memory that drops the other's links.
#[test]
fn changes_are_read_modify_write_of_the_file() {
    let (root, dir) = temp_dir();
    let a = Shares::open(dir.clone());
    let b = Shares::open(dir.clone());
    let first = create(&a, 3600, "made by a");
    let second = create(&b, 3600, "made by b");
    let reopened = Shares::open(dir.clone());
    let ids: Vec<String> = reopened
        .list(NOW, BASE)
        .expect("lists")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert!(
        ids.contains(&first.id) && ids.contains(&second.id),
        "both links kept: {ids:?}"
    );
    // a revokes b's link, which a's memory never held.
    assert!(a.revoke(&second.id, NOW).expect("revokes"));
    let left: Vec<String> = Shares::open(dir)
        .list(NOW, BASE)
        .expect("lists")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, vec![first.id]);
    let _ = std::fs::remove_dir_all(root);
}
