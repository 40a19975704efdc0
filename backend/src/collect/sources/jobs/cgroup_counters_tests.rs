//! The cgroup counter files in the formats the kernel documents
//! (Documentation/admin-guide/cgroup-v2.rst, cgroup-v1/memory.rst and cpuacct.rst), and a job's
//! files found on a hybrid host's lines.

use super::*;
use shared::JobKind;

const HYBRID_MOUNTS: &str = "\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,xattr,name=systemd 0 0
";

#[test]
fn mounts_name_each_controller_s_hierarchy() {
    let m = Mounts::parse(HYBRID_MOUNTS);
    assert_eq!(m.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
    assert_eq!(m.cpuacct, Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")));
    assert_eq!(m.memory, Some(PathBuf::from("/sys/fs/cgroup/memory")));
    // A pure v2 host has no v1 hierarchy.
    let v2 = Mounts::parse("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n");
    assert_eq!(v2.v2, Some(PathBuf::from("/sys/fs/cgroup")));
    assert_eq!((v2.cpuacct, v2.memory), (None, None));
    // Not a controller by a longer name.
    let odd = Mounts::parse("cgroup /x cgroup rw,memory_recursiveprot 0 0\n");
    assert_eq!(odd.memory, None);
}

#[test]
fn the_counters_parse_as_documented() {
    let cpu = "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\nnr_periods 0\n";
    assert_eq!(parse_cpu_stat(cpu), Some(1_234_567));
    assert_eq!(parse_cpu_stat("user_usec 1\n"), None);
    assert_eq!(parse_cpuacct_usage("987654321\n"), Some(987_654));
    assert_eq!(parse_cpuacct_usage("x\n"), None);
    let v2 = "anon 4096000\nfile 9000000\nkernel 1\nfile_mapped 8192\nfile_dirty 0\n";
    assert_eq!(parse_memory_stat_v2(v2), Some(4_096_000 + 8192));
    assert_eq!(parse_memory_stat_v2("anon 1\n"), None, "both or absent");
    // `anon_thp` is not `anon`: whole keys only.
    assert_eq!(parse_memory_stat_v2("anon_thp 5\nfile_mapped 1\n"), None);
    let v1 = "cache 100\nrss 200\nmapped_file 30\ntotal_cache 1000\ntotal_rss 2000\ntotal_mapped_file 300\n";
    assert_eq!(parse_memory_stat_v1(v1), Some(2300), "the folder and below");
    assert_eq!(
        parse_memory_stat_v2(&format!("anon {}\nfile_mapped 1\n", u64::MAX)),
        None,
        "an overflow is no figure"
    );
    assert_eq!(parse_procs("12\n 13\nx\n0\n\n14\n"), vec![12, 13, 14]);
}

#[test]
fn a_slurm_job_s_files_on_a_hybrid_host() {
    let text = "\
12:memory:/slurm/uid_1000/job_77/step_0/task_0
11:cpu,cpuacct:/slurm/uid_1000/job_77/step_0/task_0
3:pids:/system.slice/slurmd.service
1:name=systemd:/system.slice/slurmd.service
0::/system.slice/slurmd.service
";
    let identity = cgroup::identify(text).expect("a Slurm job");
    assert_eq!(
        (identity.kind, identity.id.as_str()),
        (JobKind::Slurm, "77")
    );
    let files = Files::find(&Mounts::parse(HYBRID_MOUNTS), text, &identity);
    assert_eq!(
        files.cpu,
        vec![CpuFile::V1(PathBuf::from(
            "/sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/job_77/cpuacct.usage"
        ))]
    );
    assert_eq!(
        files.memory,
        vec![MemoryFile::V1(PathBuf::from(
            "/sys/fs/cgroup/memory/slurm/uid_1000/job_77/memory.stat"
        ))]
    );
    assert_eq!(
        files.procs,
        Some(PathBuf::from("/sys/fs/cgroup/memory/slurm/uid_1000/job_77"))
    );
}

#[test]
fn a_v2_job_reads_v2_first_and_another_job_s_line_is_not_its_own() {
    let text = "\
9:memory:/docker/ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff
0::/system.slice/slurmstepd.scope/job_5/step_batch
";
    let identity = cgroup::identify(text).expect("a Slurm job");
    assert_eq!(identity.kind, JobKind::Slurm);
    let files = Files::find(&Mounts::parse(HYBRID_MOUNTS), text, &identity);
    let v2 = PathBuf::from("/sys/fs/cgroup/unified/system.slice/slurmstepd.scope/job_5");
    assert_eq!(files.cpu, vec![CpuFile::V2(v2.join("cpu.stat"))]);
    // The memory line names a container, not this job: not its memory.
    assert_eq!(files.memory, vec![MemoryFile::V2(v2.join("memory.stat"))]);
    assert_eq!(files.procs, Some(v2));
}

#[test]
fn a_job_s_processes_are_those_of_its_folders() {
    let dir = std::env::temp_dir().join(format!("vramio-cgroup-procs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let job = dir.join("job_1");
    for (sub, procs) in [
        ("", "10\n"),
        ("step_0", "11\n12\n"),
        ("step_0/task_0", "13\n"),
    ] {
        std::fs::create_dir_all(job.join(sub)).expect("mkdir");
        std::fs::write(job.join(sub).join("cgroup.procs"), procs).expect("write");
    }
    let files = Files {
        procs: Some(job.clone()),
        ..Files::default()
    };
    assert_eq!(
        files.processes(100, &mut OpenFiles::default(), &mut Walk::default()),
        Some((vec![10, 11, 12, 13], true))
    );
    assert_eq!(
        files.processes(2, &mut OpenFiles::default(), &mut Walk::default()),
        Some((vec![10, 11], false)),
        "capped"
    );
    // A folder removed while the walk ran (its list gone) hides nothing.
    std::fs::create_dir(job.join("step_extern")).expect("mkdir");
    assert_eq!(
        files.processes(100, &mut OpenFiles::default(), &mut Walk::default()),
        Some((vec![10, 11, 12, 13], true))
    );
    std::fs::create_dir(job.join("step_extern/x")).expect("mkdir");
    std::fs::write(job.join("step_extern/x/cgroup.procs"), "14\n").expect("write");
    assert_eq!(
        files.processes(100, &mut OpenFiles::default(), &mut Walk::default()),
        Some((vec![10, 11, 12, 13, 14], true))
    );
    let gone = Files {
        procs: Some(dir.join("nope")),
        ..Files::default()
    };
    assert_eq!(
        gone.processes(100, &mut OpenFiles::default(), &mut Walk::default()),
        None
    );
    std::fs::remove_dir_all(&dir).expect("rm");
}

#[test]
fn open_files_are_kept_on_cgroupfs_only_within_their_cap_and_swept() {
    // A test's folder: opened for every read, so a file written again is read again.
    let dir = std::env::temp_dir().join(format!("vramio-open-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join("cpu.stat");
    std::fs::write(&file, "usage_usec 1\n").expect("write");
    let mut open = OpenFiles::with_cap(8);
    assert_eq!(open.read(&file), Some("usage_usec 1\n"));
    std::fs::remove_file(&file).expect("rm");
    std::fs::write(&file, "usage_usec 2\n").expect("write");
    assert_eq!(open.read(&file), Some("usage_usec 2\n"));
    assert_eq!(open.kept_open(), 0, "not cgroupfs");
    assert_eq!(open.read(&dir.join("absent")), None);
    std::fs::remove_dir_all(&dir).expect("rm");
    // This host's own v2 root: kept open, up to the cap, closed once not read.
    let Some(v2) = Mounts::parse(&std::fs::read_to_string("/proc/self/mounts").expect("mounts")).v2
    else {
        return;
    };
    let stat = v2.join("cpu.stat");
    let mut open = OpenFiles::with_cap(1);
    assert!(open.read(&stat).and_then(parse_cpu_stat).is_some());
    assert_eq!(open.kept_open(), 1);
    assert!(
        open.read(&v2.join("cgroup.procs")).is_some(),
        "read past the cap"
    );
    assert_eq!(open.kept_open(), 1, "but not kept");
    open.sweep();
    assert_eq!(open.kept_open(), 1, "read since the last sweep");
    open.sweep();
    assert_eq!(open.kept_open(), 0, "not read since");
}

#[test]
fn a_walk_through_many_folders_stops_and_says_so() {
    let dir = std::env::temp_dir().join(format!("vramio-many-folders-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("cgroup.procs"), "1\n").expect("write");
    for i in 0..MAX_FOLDERS + 5 {
        std::fs::create_dir(dir.join(i.to_string())).expect("mkdir");
    }
    let files = Files {
        procs: Some(dir.clone()),
        ..Files::default()
    };
    assert_eq!(
        files.processes(100, &mut OpenFiles::default(), &mut Walk::default()),
        Some((vec![1], false))
    );
    std::fs::remove_dir_all(&dir).expect("rm");
}

/// Folders queued below a folder read late count against the cap too: two subtrees of 600
/// leaves each are not read past [`MAX_FOLDERS`] folders in all.
#[test]
fn a_walk_reads_at_most_the_cap_in_folders_across_subtrees() {
    let dir = std::env::temp_dir().join(format!("vramio-wide-folders-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("cgroup.procs"), "").expect("write");
    for side in ["a", "b"] {
        for i in 0..600u32 {
            let leaf = dir.join(side).join(i.to_string());
            std::fs::create_dir_all(&leaf).expect("mkdir");
            let pid = if side == "a" { 1 + i } else { 10_001 + i };
            std::fs::write(leaf.join("cgroup.procs"), format!("{pid}\n")).expect("write");
        }
    }
    let files = Files {
        procs: Some(dir.clone()),
        ..Files::default()
    };
    let (pids, whole) = files
        .processes(4096, &mut OpenFiles::default(), &mut Walk::default())
        .expect("listed");
    assert!(!whole);
    assert!(pids.len() < MAX_FOLDERS, "{} leaves read", pids.len());
    std::fs::remove_dir_all(&dir).expect("rm");
}

#[test]
fn a_v1_line_naming_another_job_gives_no_folder() {
    let text = "\
11:cpu,cpuacct:/slurm/uid_0/job_8/step_0
9:memory:/slurm/uid_0/job_7/step_0
0::/
";
    let identity = cgroup::identify(text).expect("a Slurm job");
    assert_eq!(identity.id, "8", "the first line that names one");
    assert_eq!(v1_dir(text, &identity, "memory"), None);
    assert_eq!(
        v1_dir(text, &identity, "cpuacct").as_deref(),
        Some("/slurm/uid_0/job_8")
    );
}
