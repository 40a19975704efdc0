//! The history end to end within the process: the sink, the writer thread and the store.

use super::*;
use shared::diagnosis::{Diagnosis, Severity, Verdict};
use shared::series::Scope;
use shared::{Frame, Percent, SystemStats};

const T0_MS: u64 = 1_700_000_000_000;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vramio-history-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn frame(i: u64) -> Frame {
    let mut f = Frame::empty("h", i + 1, T0_MS + i * 1000, 1000);
    f.system = Some(SystemStats {
        cpu_pct: Some(Percent(i as f64)),
        ..SystemStats::default()
    });
    f
}

fn diagnosis(t_ms: u64, verdict: Verdict) -> Diagnosis {
    let mut d = shared::diagnosis::diagnose(&[], &Default::default(), None);
    d.t_ms = Some(t_ms);
    d.verdict = verdict;
    d.severity = Severity::Ok;
    d
}

#[test]
fn what_was_written_is_read_back_after_a_restart_with_its_segments() {
    let dir = temp_dir("restart");
    let (history, mut sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens");
    for i in 0..30 {
        sink.frame(&frame(i));
        if i == 0 {
            sink.diagnosis(&diagnosis(T0_MS, Verdict::Healthy));
        }
        if i == 20 {
            sink.diagnosis(&diagnosis(T0_MS + 20_000, Verdict::InputBoundDisk));
        }
    }
    drop(sink);
    history.close();
    // Frames faster than real time: the closed windows wait for a wall second, then go at once.
    assert!(history.status().commits >= 1, "{:?}", history.status());
    drop(history);

    let (history, sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens again");
    let a = history.read(T0_MS, T0_MS + 30_000, 1000).expect("reads");
    let cpu = a
        .series
        .iter()
        .find(|s| s.metric == "cpu_pct")
        .expect("cpu");
    assert_eq!(cpu.points.len(), 30);
    assert_eq!(cpu.points[29], (T0_MS + 29_000, 29.0, 29.0, 29.0));
    assert_eq!(a.segments.len(), 2, "{:?}", a.segments);
    assert_eq!(a.segments[0].verdict, Verdict::Healthy);
    assert_eq!(
        (a.segments[0].from_ms, a.segments[0].to_ms),
        (T0_MS, T0_MS + 20_000)
    );
    assert_eq!(a.segments[1].verdict, Verdict::InputBoundDisk);
    assert_eq!(a.segments[1].to_ms, T0_MS + 29_000);
    // The ids of the items already stored are taken up, not made again.
    drop(sink);
    history.close();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_flush_makes_the_open_window_readable() {
    let dir = temp_dir("flush");
    let (history, mut sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens");
    for i in 0..3 {
        sink.frame(&frame(i));
    }
    sink.flush();
    let a = history.read(T0_MS, T0_MS + 10_000, 100).expect("reads");
    assert_eq!(
        a.series
            .iter()
            .find(|s| s.metric == "cpu_pct")
            .map(|s| s.points.len()),
        Some(3)
    );
    drop(sink);
    history.close();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `job=KEY`: of the jobs' series only that job's are read (its own and its parts on GPUs, not
/// a job whose id merely starts the same); the host's are kept.
#[test]
fn a_read_for_one_job_takes_that_jobs_series_only() {
    use shared::jobs::{Job, JobGpu, JobKind};
    let dir = temp_dir("one-job");
    let (history, mut sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens");
    let job = |id: &str, pid: u32| Job {
        cpu_pct: Some(Percent(50.0)),
        gpus: vec![JobGpu {
            index: 0,
            uuid: None,
            memory_used_bytes: Some(shared::Bytes(1 << 30)),
            memory_share_pct: None,
            utilization_pct: None,
            mig: None,
        }],
        ..Job::new(JobKind::Slurm, id, vec![pid])
    };
    for i in 0..5 {
        let mut f = frame(i);
        f.jobs = vec![job("12", 100), job("123", 200), job("7", 300)];
        sink.frame(&f);
    }
    sink.flush();
    let items = |wanted: Wanted<'_>| {
        let a = history
            .read_only(T0_MS, T0_MS + 10_000, 100, wanted, false)
            .expect("reads");
        let mut v: Vec<(Scope, String)> =
            a.series.iter().map(|s| (s.scope, s.item.clone())).collect();
        v.sort();
        v.dedup();
        v
    };
    let all = items(Wanted::default());
    let one = items(Wanted {
        only: None,
        job: Some("slurm:12"),
    });
    let jobs_of = |v: &[(Scope, String)]| -> Vec<String> {
        v.iter()
            .filter(|(s, _)| matches!(s, Scope::Job | Scope::JobGpu))
            .map(|(_, i)| i.clone())
            .collect()
    };
    assert_eq!(jobs_of(&all).len(), 6, "{all:?}");
    assert_eq!(jobs_of(&one), ["slurm:12", "slurm:12@0"], "{one:?}");
    assert!(
        one.iter().any(|(s, _)| *s == Scope::Host),
        "the host's series stay"
    );
    drop(sink);
    history.close();
    let _ = std::fs::remove_dir_all(&dir);
}

/// What `history export` opens: a damaged or newer store is an error that names it, and stays
/// where and as it was (nothing set aside, nothing made); a good one reads.
#[test]
fn a_store_opened_to_read_is_never_set_aside_or_made() {
    let dir = temp_dir("existing");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(FILE);
    assert!(Store::open_existing(&path).is_err(), "no file, none made");
    assert!(!path.exists());
    std::fs::write(&path, b"").expect("an empty file");
    assert!(
        Store::open_existing(&path).is_err(),
        "an empty file is no store"
    );
    assert_eq!(
        std::fs::read(&path).expect("kept").len(),
        0,
        "and stays empty"
    );
    let garbage = b"not a redb file at all, just garbage".repeat(100);
    std::fs::write(&path, &garbage).expect("garbage");
    assert!(Store::open_existing(&path).is_err());
    assert_eq!(std::fs::read(&path).expect("kept"), garbage, "untouched");
    let names = || {
        let mut v: Vec<String> = std::fs::read_dir(&dir)
            .expect("ls")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(), [FILE.to_owned()], "nothing set aside");
    std::fs::remove_file(&path).expect("rm");
    {
        let (store, _) = Store::open(&dir).expect("opens");
        let w = store.db.begin_write().expect("write");
        w.open_table(tables::META)
            .expect("meta")
            .insert("format", tables::FORMAT + 1)
            .expect("insert");
        w.commit().expect("commit");
    }
    match Store::open_existing(&path) {
        Err(e @ StoreError::Newer { .. }) => {
            assert!(e.to_string().contains(&path.display().to_string()), "{e}")
        }
        Err(e) => panic!("not named as newer: {e}"),
        Ok(_) => panic!("a newer store opened"),
    }
    assert_eq!(names(), [FILE.to_owned()], "nothing set aside");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_or_newer_file_is_set_aside_and_a_fresh_one_kept() {
    let dir = temp_dir("damaged");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join(FILE),
        b"not a redb file at all, just garbage".repeat(100),
    )
    .expect("garbage");
    let (history, sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens anyway");
    let aside = history.status().set_aside.expect("set aside");
    assert!(aside.contains("history.redb.damaged-"), "{aside}");
    let moved: Vec<_> = std::fs::read_dir(&dir)
        .expect("ls")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("history.redb.damaged-"))
        .collect();
    assert_eq!(moved.len(), 1);
    drop(sink);
    history.close();
    drop(history);

    // A file of a newer format.
    {
        let (store, _) = Store::open(&dir).expect("opens");
        let w = store.db.begin_write().expect("write");
        w.open_table(tables::META)
            .expect("meta")
            .insert("format", tables::FORMAT + 1)
            .expect("insert");
        w.commit().expect("commit");
    }
    let (history, sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens anyway");
    let aside = history.status().set_aside.expect("set aside");
    assert!(
        aside.contains("history.redb.newer-") && aside.contains("newer vramio"),
        "{aside}"
    );
    drop(sink);
    history.close();
    drop(history);

    // A file of the format before (one block per key): set aside too, named as older.
    {
        let (store, _) = Store::open(&dir).expect("opens");
        let w = store.db.begin_write().expect("write");
        w.open_table(tables::META)
            .expect("meta")
            .insert("format", tables::FORMAT - 1)
            .expect("insert");
        w.commit().expect("commit");
    }
    let (history, sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens anyway");
    let aside = history.status().set_aside.expect("set aside");
    assert!(
        aside.contains("history.redb.older-") && aside.contains("earlier build"),
        "{aside}"
    );
    drop(sink);
    history.close();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("mode");
    let (history, sink) = History::open(&dir, DEFAULT_MAX_BYTES).expect("opens");
    let mode = std::fs::metadata(dir.join(FILE))
        .expect("file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    let mode = std::fs::metadata(&dir).expect("dir").permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    drop(sink);
    history.close();
    let _ = std::fs::remove_dir_all(&dir);
}
