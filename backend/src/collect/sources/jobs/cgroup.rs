//! Which job a process belongs to, from the text of its `/proc/<pid>/cgroup` (docs/jobs.md#1-what-a-job-is).
//!
//! Each line is `hierarchy-ID:controller-list:path`: `0::/path` for the cgroup v2 hierarchy, one
//! line per v1 hierarchy otherwise (a hybrid host has both). The paths are matched, in order of
//! precedence, against the layouts that Slurm, the kubelet, container runtimes and systemd create:
//!
//! - Slurm: `job_<id>` (after `uid_<n>` on v1) directly below a top-level `slurm` or
//!   `slurm_<node>`, or below `system.slice/[<node>_]slurmstepd.scope`, with its `step_<name>`
//!   (`step_0`, `step_batch`, `step_extern` for ssh sessions adopted by `pam_slurm_adopt`);
//! - a Kubernetes pod: `pod<uid>` below a top-level `kubepods` (cgroupfs driver) or
//!   `kubepods[-<qos>]-pod<uid>.slice` below `kubepods.slice` (systemd driver, `_` for `-` in the
//!   uid), and the container below it;
//! - a container: a top-level `docker/<id>`, a `docker-`, `cri-containerd-` or `crio-` scope
//!   directly in `system.slice`, a `libpod-` scope in `machine.slice` or in a user's own manager
//!   (rootless Podman);
//! - a systemd unit: the deepest `<name>.service` that is not a launcher (sshd, cron, the user
//!   manager, ...), whose processes belong to many people's work.
//!
//! Only root (or systemd on root's behalf) makes the top-level folders and `system.slice`'s
//! children, so a user cannot pass their processes off as a Slurm job, a pod or a system
//! container from inside a cgroup they were delegated. Each identity also carries the folder that
//! named it, and jobs are told apart by it, so a same-named job elsewhere is never merged in.
//!
//! Pure: the reader in `super::procs` hands it the file's text. The `proc_files` fuzz target runs
//! it.

use shared::JobKind;

/// Who a process belongs to, as its cgroup tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub kind: JobKind,
    pub id: String,
    pub step: Option<String>,
    /// The folder that named the job (the path up to the job's component), on whichever
    /// hierarchy it was found.
    pub dir: String,
    /// The job's own cgroup in the v2 hierarchy (the path up to the component that named the job),
    /// where its pressure files are; absent when the job was found on a v1 line only.
    pub v2_dir: Option<String>,
}

/// Units whose processes are the work of many jobs: their processes are grouped by process tree.
const LAUNCHER_UNITS: &[&str] = &[
    "sshd.service",
    "ssh.service",
    "cron.service",
    "crond.service",
    "atd.service",
    "containerd.service",
    "docker.service",
    "slurmd.service",
    "jupyterhub.service",
    "tmux.service",
    "screen.service",
    "init.scope",
];

/// A layout: the identity a path's components name, and how many components lead to the job.
type Matcher = fn(&[&str]) -> Option<(Identity, usize)>;

/// The job `text` (a whole `/proc/<pid>/cgroup`) names, if any. Malformed lines are skipped.
pub fn identify(text: &str) -> Option<Identity> {
    // The v2 line first: on a hybrid host it is the hierarchy systemd and the runtimes manage.
    // A file has one; should a hostile one have more, the first is the v2 path, as in `v2_path`.
    let v1 = text.lines().filter_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, _controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        (id != "0" && path.starts_with('/')).then_some((path, false))
    });
    let paths: Vec<(&str, bool)> = v2_path(text)
        .map(|p| (p, true))
        .into_iter()
        .chain(v1)
        .collect();
    let matchers: [Matcher; 4] = [slurm, pod, container, unit];
    matchers.iter().find_map(|m| {
        paths.iter().find_map(|(path, v2)| {
            let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
            // `.` or `..` never name a real cgroup (the kernel writes `..` only for cgroups
            // outside vramio's own cgroup namespace): such a path names no job.
            if parts.iter().any(|p| *p == "." || *p == "..") {
                return None;
            }
            let (mut identity, depth) = m(&parts)?;
            identity.dir = format!("/{}", parts[..depth].join("/"));
            if *v2 {
                identity.v2_dir = Some(identity.dir.clone());
            }
            Some(identity)
        })
    })
}

/// The v2 path of the process (`0::/path`), for its pressure files.
pub fn v2_path(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|line| line.strip_prefix("0::"))
        .filter(|p| p.starts_with('/'))
}

fn identity(kind: JobKind, id: &str, step: Option<String>) -> Identity {
    Identity {
        kind,
        id: id.to_owned(),
        step,
        dir: String::new(),
        v2_dir: None,
    }
}

/// Slurm's `job_<id>` below one of its roots; the depth ends at the job (its cgroup holds every
/// step).
fn slurm(parts: &[&str]) -> Option<(Identity, usize)> {
    let first = *parts.first()?;
    let root = if first == "slurm" || first.starts_with("slurm_") {
        0
    } else if first == "system.slice"
        && parts
            .get(1)
            .is_some_and(|p| *p == "slurmstepd.scope" || p.ends_with("_slurmstepd.scope"))
    {
        1
    } else {
        return None;
    };
    // v1 puts the owner's uid between the root and the job.
    let at = if parts.get(root + 1).is_some_and(|p| p.starts_with("uid_")) {
        root + 2
    } else {
        root + 1
    };
    let id = parts
        .get(at)?
        .strip_prefix("job_")
        .filter(|id| is_slurm_id(id))?;
    let step = parts
        .get(at + 1)
        .and_then(|p| p.strip_prefix("step_"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    Some((identity(JobKind::Slurm, id, step), at + 1))
}

/// A job id: digits, or an array task's `<id>_<index>`.
fn is_slurm_id(id: &str) -> bool {
    !id.is_empty()
        && id.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        && id.as_bytes()[0] != b'_'
}

/// A pod below `kubepods`, with the container below the pod.
fn pod(parts: &[&str]) -> Option<(Identity, usize)> {
    if !parts.first()?.starts_with("kubepods") {
        return None;
    }
    let (at, uid) = parts.iter().enumerate().find_map(|(i, p)| {
        // systemd driver: kubepods-burstable-pod<uid with _>.slice; cgroupfs: pod<uid>.
        let uid = match p.strip_suffix(".slice") {
            Some(slice) => slice.rsplit_once("-pod").map(|(_, uid)| uid)?,
            None => p.strip_prefix("pod")?,
        };
        let uid = uid.replace('_', "-");
        is_uid(&uid).then_some((i, uid))
    })?;
    let container = parts.get(at + 1).and_then(|p| container_id(p));
    Some((identity(JobKind::Pod, &uid, container), at + 1))
}

/// A pod UID: 36 characters of hex digits and dashes.
fn is_uid(uid: &str) -> bool {
    uid.len() == 36 && uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// A container's scope (`docker-<id>.scope` and the like) or its bare id.
fn container_id(part: &str) -> Option<String> {
    let bare = part.strip_suffix(".scope").map_or(part, |scope| {
        ["cri-containerd-", "docker-", "libpod-", "crio-"]
            .iter()
            .find_map(|prefix| scope.strip_prefix(prefix))
            .unwrap_or(scope)
    });
    is_container_id(bare).then(|| bare.to_owned())
}

/// Runtimes name containers by 64 hex digits.
fn is_container_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A runtime's scope where only the system (or, for rootless Podman, the user's own manager) makes
/// it, or a top-level `docker/<id>` (cgroupfs driver).
fn container(parts: &[&str]) -> Option<(Identity, usize)> {
    if parts.first() == Some(&"docker") {
        let id = container_id(parts.get(1)?)?;
        return Some((identity(JobKind::Container, &id, None), 2));
    }
    let system = matches!(parts.first(), Some(&"system.slice" | &"machine.slice"));
    let (i, scope) = if system {
        (1, *parts.get(1)?)
    } else {
        // Rootless Podman: user.slice/user-N.slice/user@N.service/.../libpod-<id>.scope.
        let manager = parts.iter().position(|p| p.starts_with("user@"))?;
        parts
            .iter()
            .enumerate()
            .skip(manager + 1)
            .find(|(_, p)| p.starts_with("libpod-"))
            .map(|(i, p)| (i, *p))?
    };
    if !scope.ends_with(".scope") {
        return None;
    }
    let id = container_id(scope)?;
    Some((identity(JobKind::Container, &id, None), i + 1))
}

/// The deepest service that is not a launcher and not the user manager (`user@1000.service`).
fn unit(parts: &[&str]) -> Option<(Identity, usize)> {
    parts.iter().enumerate().rev().find_map(|(i, p)| {
        let name = p.strip_suffix(".service")?;
        let usable = !name.is_empty()
            && !name.starts_with("user@")
            && !name.starts_with("user-runtime-dir@")
            && !name.starts_with("getty@")
            && !name.starts_with("serial-getty@")
            && !name.starts_with("systemd-")
            && !LAUNCHER_UNITS.contains(p);
        usable.then(|| (identity(JobKind::Unit, p, None), i + 1))
    })
}

#[cfg(test)]
#[path = "cgroup_tests.rs"]
mod tests;
