//! `/proc/<pid>/cgroup` texts as Slurm, the kubelet, container runtimes and systemd leave them,
//! on cgroup v1, v2 and hybrid hosts.

use super::*;

const CID: &str = "3f4e8a0c9b2d1e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f";
const UID: &str = "0b5c3c4e-2a51-4d8e-9b0e-6f4f8d2a1c77";

fn id(text: &str) -> Option<(JobKind, String, Option<String>, Option<String>)> {
    identify(text).map(|i| (i.kind, i.id, i.step, i.v2_dir))
}

fn some(
    kind: JobKind,
    id: &str,
    step: Option<&str>,
    v2_dir: Option<&str>,
) -> Option<(JobKind, String, Option<String>, Option<String>)> {
    Some((
        kind,
        id.to_owned(),
        step.map(str::to_owned),
        v2_dir.map(str::to_owned),
    ))
}

#[test]
fn slurm_on_cgroup_v2_names_the_job_and_step() {
    let text = "0::/system.slice/slurmstepd.scope/job_4412/step_0/user/task_0\n";
    assert_eq!(
        id(text),
        some(
            JobKind::Slurm,
            "4412",
            Some("0"),
            Some("/system.slice/slurmstepd.scope/job_4412")
        )
    );
}

#[test]
fn slurm_with_several_slurmd_on_a_node() {
    let text = "0::/system.slice/node07_slurmstepd.scope/job_91/step_batch/user/task_0\n";
    assert_eq!(
        id(text),
        some(
            JobKind::Slurm,
            "91",
            Some("batch"),
            Some("/system.slice/node07_slurmstepd.scope/job_91")
        )
    );
}

#[test]
fn slurm_adopted_ssh_session_is_the_extern_step() {
    let text = "0::/system.slice/slurmstepd.scope/job_4412/step_extern/user/task_special\n";
    assert_eq!(id(text).map(|i| i.2), Some(Some("extern".into())));
}

#[test]
fn slurm_on_cgroup_v1_reads_any_controller_line() {
    let text = "\
12:pids:/slurm/uid_1000/job_77/step_0/task_0
11:memory:/slurm/uid_1000/job_77/step_0/task_0
4:devices:/slurm/uid_1000/job_77/step_0
1:name=systemd:/system.slice/slurmd.service
";
    assert_eq!(id(text), some(JobKind::Slurm, "77", Some("0"), None));
    let node = "6:memory:/slurm_node3/uid_0/job_8_2/step_1\n";
    assert_eq!(id(node), some(JobKind::Slurm, "8_2", Some("1"), None));
}

#[test]
fn a_job_directory_outside_slurm_is_not_a_slurm_job() {
    assert_eq!(id("0::/batch/job_12/step_0\n"), None);
    assert_eq!(id("0::/system.slice/slurmstepd.scope/job_/step_0\n"), None);
    assert_eq!(id("0::/system.slice/slurmstepd.scope/job_x1\n"), None);
}

#[test]
fn kubernetes_pods_with_either_cgroup_driver() {
    let systemd = format!(
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{CID}.scope\n",
        UID.replace('-', "_")
    );
    assert_eq!(
        id(&systemd),
        some(
            JobKind::Pod,
            UID,
            Some(CID),
            Some(&format!(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice",
                UID.replace('-', "_")
            ))
        )
    );
    let cgroupfs = format!("11:memory:/kubepods/besteffort/pod{UID}/{CID}\n");
    assert_eq!(id(&cgroupfs), some(JobKind::Pod, UID, Some(CID), None));
    let guaranteed = format!("0::/kubepods/pod{UID}/{CID}\n");
    assert_eq!(id(&guaranteed).map(|i| i.1), Some(UID.to_owned()));
}

#[test]
fn containers_of_each_runtime() {
    for text in [
        format!("0::/system.slice/docker-{CID}.scope\n"),
        format!("9:memory:/docker/{CID}\n"),
        format!("0::/machine.slice/libpod-{CID}.scope/container\n"),
        format!("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{CID}.scope\n"),
        format!("0::/system.slice/cri-containerd-{CID}.scope\n"),
        format!("0::/system.slice/crio-{CID}.scope\n"),
    ] {
        assert_eq!(
            id(&text).map(|i| (i.0, i.1)),
            Some((JobKind::Container, CID.to_owned())),
            "{text}"
        );
    }
    // A short or non-hex id is some other scope.
    assert_eq!(id("0::/system.slice/docker-abc.scope\n"), None);
}

#[test]
fn systemd_units_but_not_launchers_or_sessions() {
    assert_eq!(
        id("0::/system.slice/train-llm.service\n"),
        some(
            JobKind::Unit,
            "train-llm.service",
            None,
            Some("/system.slice/train-llm.service")
        )
    );
    let user_unit = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/finetune.service\n";
    assert_eq!(id(user_unit).map(|i| i.1), Some("finetune.service".into()));
    for text in [
        "0::/user.slice/user-1000.slice/session-3.scope\n",
        "0::/system.slice/sshd.service\n",
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/tmux-spawn-1.scope\n",
        "0::/init.scope\n",
        "0::/\n",
        "1:name=systemd:/system.slice/cron.service\n",
    ] {
        assert_eq!(id(text), None, "{text}");
    }
}

#[test]
fn slurm_wins_over_the_unit_its_daemon_runs_in_on_a_hybrid_host() {
    let text = "\
1:name=systemd:/system.slice/slurmd.service
0::/system.slice/slurmstepd.scope/job_5/step_0
";
    assert_eq!(id(text).map(|i| i.0), Some(JobKind::Slurm));
}

#[test]
fn malformed_lines_are_skipped() {
    for text in ["", "garbage", "0:", "0::relative/path", "::::", "\n\n0::"] {
        assert_eq!(id(text), None, "{text:?}");
    }
    assert_eq!(v2_path("1:cpu:/a\n0::/b/c\n"), Some("/b/c"));
    assert_eq!(v2_path("1:cpu:/a\n"), None);
    // Hierarchy 0 with controllers is neither the v2 line nor a v1 one (v1 hierarchies count
    // from 1): skipped (found by the proc_files fuzz target).
    let odd = "0:memory:/system.slice/slurmstepd.scope/job_3/step_0\n0::/other\n";
    assert_eq!(id(odd), None);
    // Of two v2 lines the first is the path (found by the fuzz target too).
    let two = "0::/\n0::/system.slice/slurmstepd.scope/job_4/step_0\n";
    assert_eq!(id(two), None);
}

#[test]
fn a_user_cannot_pass_off_a_cgroup_of_their_own_as_a_job() {
    // What `systemd-run --user --scope --unit=...` or a delegated subtree can make.
    let mine = "0::/user.slice/user-1000.slice/user@1000.service/app.slice";
    for text in [
        format!("{mine}/docker-{CID}.scope\n"),
        format!("{mine}/slurmstepd.scope/job_4412/step_0\n"),
        format!(
            "{mine}/kubepods-burstable-pod{}.slice\n",
            UID.replace('-', "_")
        ),
        "0::/system.slice/foo.service/slurmstepd.scope/job_4412/step_0\n".to_string(),
        format!("0::/system.slice/foo.service/docker/{CID}\n"),
        format!("0::/batch/kubepods/pod{UID}/{CID}\n"),
    ] {
        let found = id(&text);
        assert!(
            found.as_ref().is_none_or(|f| f.0 == JobKind::Unit),
            "{text} gave {found:?}"
        );
    }
    // A unit is told apart by its folder: a user's train.service is not the system's.
    let user =
        identify("0::/user.slice/user-1000.slice/user@1000.service/app.slice/train.service\n");
    let system = identify("0::/system.slice/train.service\n");
    let (user, system) = (user.expect("a unit"), system.expect("a unit"));
    assert_eq!(user.id, system.id);
    assert_ne!(user.dir, system.dir);
}

#[test]
fn dot_components_name_no_job() {
    assert_eq!(
        id("0::/../../system.slice/slurmstepd.scope/job_1/step_0\n"),
        None
    );
    assert_eq!(id("0::/system.slice/./train.service\n"), None);
}
