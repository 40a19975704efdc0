//! Tests of process identity: the namespace decision, the stat parser, and the per-pid cache
//! against a scripted `/proc` tree.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A `/proc/<pid>/stat` line as the kernel writes it (52 fields), with `comm` and starttime.
fn stat_line(pid: u32, comm: &str, start: u64) -> String {
    let mut fields: Vec<String> = vec![pid.to_string(), format!("({comm})"), "S".into()];
    // Fields 4..=21, then starttime (22), then the rest up to 52.
    fields.extend((4..=21).map(|n| n.to_string()));
    fields.push(start.to_string());
    fields.extend((23..=52).map(|n| n.to_string()));
    fields.join(" ") + "\n"
}

/// A scratch `/proc` tree, removed when dropped.
struct FakeProc(PathBuf);

impl FakeProc {
    fn new(tag: &str) -> Self {
        let root = std::env::temp_dir().join(format!("vramio-proc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("fake /proc");
        FakeProc(root)
    }
    fn process(&self, pid: u32, comm: &str, start: u64) {
        let dir = self.0.join(pid.to_string());
        std::fs::create_dir_all(&dir).expect("pid dir");
        std::fs::write(dir.join("stat"), stat_line(pid, comm, start)).expect("stat");
    }
}

impl Drop for FakeProc {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn parses_comm_and_start_time_even_with_parentheses_in_comm() {
    let line = stat_line(42, "my (odd) job) x", 123_456);
    assert_eq!(parse_stat(&line), Some(("my (odd) job) x", 123_456)));
    assert_eq!(parse_stat("42 (short) S 1 2"), None);
    assert_eq!(parse_stat("no parentheses"), None);
    let own = std::fs::read_to_string("/proc/self/stat").expect("own stat");
    let (comm, start) = parse_stat(&own).expect("own stat parses");
    let want = std::fs::read_to_string("/proc/self/comm").expect("own comm");
    assert_eq!(comm, want.trim_end());
    assert!(start > 0);
}

#[test]
fn only_the_initial_pid_namespace_shows_nvml_pids() {
    assert_eq!(
        PidNamespace::from_inode(Some(4_026_531_836)),
        PidNamespace::Host
    );
    assert_eq!(
        PidNamespace::from_inode(Some(4_026_532_201)),
        PidNamespace::Child
    );
    assert_eq!(PidNamespace::from_inode(None), PidNamespace::Child);
}

#[test]
fn presence_is_decided_by_namespace_then_lookup() {
    let never = || -> Lookup<()> { panic!("a child namespace must not look host pids up") };
    assert_eq!(
        presence(PidNamespace::Child, never),
        (Presence::NotVisible, None)
    );
    assert_eq!(
        presence(PidNamespace::Host, || Lookup::Found(1)),
        (Presence::Visible, Some(1))
    );
    assert_eq!(
        presence(PidNamespace::Host, || Lookup::<()>::Gone),
        (Presence::Exited, None)
    );
    assert_eq!(
        presence(PidNamespace::Host, || Lookup::<()>::Denied),
        (Presence::NotVisible, None)
    );
}

static RESOLVED: AtomicUsize = AtomicUsize::new(0);

fn counting_resolver(uid: u32) -> Option<String> {
    RESOLVED.fetch_add(1, Ordering::SeqCst);
    Some(format!("user{uid}"))
}

#[test]
fn facts_are_cached_per_start_time_and_evicted() {
    let proc = FakeProc::new("cache");
    proc.process(100, "python3", 500);
    let me = format!(
        "user{}",
        std::fs::metadata(&proc.0).expect("fake proc").uid()
    );
    let mut ids = Identities::new(PidNamespace::Host, proc.0.clone(), counting_resolver);
    let resolved = || RESOLVED.load(Ordering::SeqCst);
    let before = resolved();

    let p = ids.process(100, Some(7));
    assert_eq!(p.presence, Presence::Visible);
    assert_eq!(p.name.as_deref(), Some("python3"));
    assert_eq!(p.user.as_deref(), Some(me.as_str()));
    assert_eq!(p.used_bytes, Some(Bytes(7)));
    assert_eq!(resolved(), before + 1);

    // Same process again: the owner comes from the cache; comm is re-read with the key.
    proc.process(100, "renamed", 500);
    let p = ids.process(100, None);
    assert_eq!(p.name.as_deref(), Some("renamed"));
    assert_eq!(resolved(), before + 1, "a cached pid is not resolved again");

    assert_eq!(ids.cached_start(100), Some(500));

    // The pid was reused by a process that started later: its facts are read again.
    std::fs::remove_dir_all(proc.0.join("100")).expect("exit");
    proc.process(100, "other", 900);
    let p = ids.process(100, None);
    assert_eq!(p.name.as_deref(), Some("other"));
    assert_eq!(ids.cached_start(100), Some(900));
    assert_eq!(ids.cached(), 1);

    // Gone from /proc on the host: exited.
    let gone = ids.process(101, Some(1));
    assert_eq!(
        (gone.presence, gone.name, gone.user),
        (Presence::Exited, None, None)
    );

    ids.retain(|pid| pid != 100);
    assert_eq!(ids.cached(), 0);
}

#[test]
fn in_a_child_namespace_nothing_is_looked_up() {
    let proc = FakeProc::new("child");
    proc.process(100, "python3", 500);
    let mut ids = Identities::new(PidNamespace::Child, proc.0.clone(), counting_resolver);
    // Both a pid that exists in this /proc (another process with the same number) and one that
    // does not are merely not visible.
    for pid in [100, 101] {
        let p = ids.process(pid, Some(1));
        assert_eq!(p.presence, Presence::NotVisible);
        assert_eq!((p.name, p.user), (None, None));
    }
    assert_eq!(ids.cached(), 0);
}

#[test]
fn this_host_resolves_its_own_process_through_nss() {
    let mut ids = Identities::new(PidNamespace::Host, PathBuf::from("/proc"), nss_user_name);
    let me = ids.process(std::process::id(), Some(5));
    assert_eq!(me.presence, Presence::Visible);
    assert!(me.name.is_some());
    let out = std::process::Command::new("id")
        .arg("-un")
        .output()
        .expect("`id -un` runs");
    let want = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(me.user, Some(want));
    assert_eq!(nss_user_name(0).as_deref(), Some("root"));
}

#[test]
fn a_kept_stat_answers_for_its_process_until_it_exits() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep runs");
    let pid = child.id();
    let mut ids = Identities::new(PidNamespace::Host, PathBuf::from("/proc"), nss_user_name);
    for _ in 0..2 {
        let p = ids.process(pid, Some(1));
        assert_eq!(p.presence, Presence::Visible);
        assert_eq!(p.name.as_deref(), Some("sleep"));
        assert!(p.user.is_some());
        assert_eq!(ids.kept_open(), 1, "its stat stays open on procfs");
    }
    child.kill().expect("kill");
    child.wait().expect("reaped");
    let gone = ids.process(pid, Some(1));
    assert_eq!(
        (gone.presence, gone.name, gone.user),
        (Presence::Exited, None, None)
    );
    assert_eq!(
        ids.kept_open(),
        0,
        "the file of an exited process is closed"
    );
}
