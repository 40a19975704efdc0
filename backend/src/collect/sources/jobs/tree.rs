//! The job of a process that no cgroup names: the topmost ancestor of the same user below a shell,
//! a terminal multiplexer, sshd, a container shim or init (docs/jobs.md#1-what-a-job-is). `torchrun` above its
//! ranks, or `python train.py` above its DataLoader workers, is the job; the `bash` it was typed
//! into is not. Pure: the reader hands it a lookup of each pid's parent, owner and `comm`.
//! A job is shown by its top's `comm` ([`display_name`]), never its command line.

/// What the walk needs of one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub ppid: u32,
    pub uid: u32,
    /// `comm` (at most 15 bytes, as the kernel keeps it).
    pub comm: String,
}

/// Ancestors are followed at most this far (a pid loop in a racing `/proc` cannot spin).
const MAX_DEPTH: usize = 64;

/// Processes that start other people's work, or many jobs of one person: never part of a job.
const LAUNCHERS: &[&str] = &[
    "bash",
    "sh",
    "dash",
    "zsh",
    "fish",
    "ksh",
    "mksh",
    "tcsh",
    "csh",
    "tmux: server",
    "tmux",
    "screen",
    "SCREEN",
    "sshd",
    "sshd-session",
    "systemd",
    "init",
    "login",
    "su",
    "sudo",
    "slurmstepd",
    "slurmd",
    "containerd-shim",
    "conmon",
    "runc",
    "crun",
    "nohup",
    "setsid",
    "xargs",
    "parallel",
    "cron",
    "crond",
    "atd",
];

/// Whether `comm` names a launcher (interpreters run as `-bash` by login are one too).
pub fn is_launcher(comm: &str) -> bool {
    let comm = comm.strip_prefix('-').unwrap_or(comm);
    LAUNCHERS.contains(&comm) || comm.starts_with("containerd-shim")
}

/// The top of `pid`'s job: `pid` itself, or its highest ancestor reached through parents of the
/// same user that are not launchers. `look` answers `None` for a pid it cannot read (gone,
/// hidden): the walk stops below it.
pub fn top(pid: u32, first: &Node, mut look: impl FnMut(u32) -> Option<Node>) -> u32 {
    let (mut at, mut node) = (pid, first.clone());
    for _ in 0..MAX_DEPTH {
        if node.ppid <= 1 || node.ppid == at {
            break;
        }
        let Some(parent) = look(node.ppid) else { break };
        if parent.uid != node.uid || is_launcher(&parent.comm) {
            break;
        }
        (at, node) = (node.ppid, parent);
    }
    at
}

/// The name a job is shown by: its top's `comm` (at most 15 bytes, chosen by the process), with
/// control and bidirectional-override characters replaced, so it cannot move a terminal's cursor
/// or reorder a line. `None` for an empty one.
pub fn display_name(comm: &str) -> Option<String> {
    let bidi = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let name: String = comm
        .chars()
        .map(|c| if c.is_control() || bidi(c) { '?' } else { c })
        .collect();
    (!name.trim().is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn node(ppid: u32, uid: u32, comm: &str) -> Node {
        Node {
            ppid,
            uid,
            comm: comm.into(),
        }
    }

    fn table() -> HashMap<u32, Node> {
        HashMap::from([
            (1, node(0, 0, "systemd")),
            (100, node(1, 0, "sshd")),
            (200, node(100, 1000, "bash")),
            (300, node(200, 1000, "torchrun")),
            (301, node(300, 1000, "python")),
            (302, node(301, 1000, "pt_data_worker")),
            (400, node(1, 1000, "tmux: server")),
            (401, node(400, 1000, "-bash")),
            (402, node(401, 1000, "python")),
            (500, node(200, 0, "sudo")),
            (501, node(500, 0, "python")),
        ])
    }

    fn top_of(pid: u32) -> u32 {
        let t = table();
        top(pid, &t[&pid], |p| t.get(&p).cloned())
    }

    #[test]
    fn the_top_is_the_highest_same_user_ancestor_below_a_launcher() {
        assert_eq!(top_of(301), 300, "torchrun above its rank");
        assert_eq!(top_of(302), 300, "a worker belongs to its launcher's job");
        assert_eq!(top_of(402), 402, "a login shell in tmux is a launcher");
        assert_eq!(top_of(501), 501, "sudo stops the walk");
        assert_eq!(top_of(300), 300);
    }

    #[test]
    fn a_parent_of_another_user_or_unreadable_stops_the_walk() {
        let t = table();
        // 301's parent is hidden: it is its own top.
        assert_eq!(top(301, &t[&301], |_| None), 301);
        let mut other = t.clone();
        other.insert(300, node(200, 2000, "torchrun"));
        assert_eq!(top(301, &other[&301], |p| other.get(&p).cloned()), 301);
    }

    #[test]
    fn a_pid_loop_ends() {
        let looped = HashMap::from([(7, node(8, 5, "a")), (8, node(7, 5, "b"))]);
        let t = top(7, &looped[&7], |p| looped.get(&p).cloned());
        assert!(t == 7 || t == 8);
    }

    #[test]
    fn names_cannot_steer_a_terminal() {
        assert_eq!(display_name("python3"), Some("python3".into()));
        assert_eq!(display_name("a\x1b[2Jb\n"), Some("a?[2Jb?".into()));
        assert_eq!(display_name("x\u{202e}y"), Some("x?y".into()));
        assert_eq!(display_name(""), None);
        assert_eq!(display_name("  "), None);
    }
}
