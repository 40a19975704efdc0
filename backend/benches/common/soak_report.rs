//! The soak's figures: one row per sample (the hub's RSS, open fds, threads and held viewers from
//! /proc and `/api/health`, the frames its history rings hold, how many frames behind each kind
//! of viewer is), whether each quantity levelled off (the mean of the last third of the samples
//! against the middle third's, within a tolerance per quantity: printed, not an exit code), and
//! the checks, which decide the exit code.

use super::soak_viewers::{Kind, Viewer};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Frames behind, over the viewers of one kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct Behind {
    pub mean: f64,
    pub max: u64,
}

pub struct Sample {
    pub t_s: f64,
    pub rss_kib: u64,
    pub fds: u64,
    pub threads: u64,
    /// WebSocket viewers the hub holds a permit for (`/api/health` `viewers`).
    pub hub_viewers: u64,
    pub hosts_up: usize,
    /// Frames in the hub's history rings (counted from the peers' side).
    pub held_frames: u64,
    pub behind: BTreeMap<Kind, Behind>,
}

/// `(VmRSS KiB, open fds, threads)` of process `pid`.
pub fn proc_figures(pid: u32) -> (u64, u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    (field("VmRSS:"), fds, field("Threads:"))
}

/// Frames behind for the viewers of `kind` that have frames, against the hub's `newest` seqs.
pub fn behind_of(viewers: &[Arc<Viewer>], kind: Kind, newest: &BTreeMap<String, u64>) -> Behind {
    let all: Vec<u64> = viewers
        .iter()
        .filter(|v| v.kind == kind)
        .filter_map(|v| v.behind(newest))
        .collect();
    if all.is_empty() {
        return Behind::default();
    }
    Behind {
        mean: all.iter().sum::<u64>() as f64 / all.len() as f64,
        max: all.iter().copied().max().unwrap_or(0),
    }
}

pub fn print_header() {
    println!(
        "{:>6} {:>8} {:>5} {:>7} {:>7} {:>5} {:>6} | frames behind: {:>8} {:>12} {:>14} {:>5}",
        "t_s",
        "rss_MiB",
        "fds",
        "threads",
        "viewers",
        "up",
        "held",
        "fast max",
        "slow mean/max",
        "recon mean/max",
        "share"
    );
}

pub fn print_row(s: &Sample) {
    let b = |k: Kind| s.behind.get(&k).copied().unwrap_or_default();
    let (fast, slow, recon, share) = (
        b(Kind::Fast),
        b(Kind::Slow),
        b(Kind::Reconnecting),
        b(Kind::Share),
    );
    println!(
        "{:>6.0} {:>8.1} {:>5} {:>7} {:>7} {:>5} {:>6} | {:>23} {:>12} {:>14} {:>5}",
        s.t_s,
        s.rss_kib as f64 / 1024.0,
        s.fds,
        s.threads,
        s.hub_viewers,
        s.hosts_up,
        s.held_frames,
        fast.max,
        format!("{:.1}/{}", slow.mean, slow.max),
        format!("{:.1}/{}", recon.mean, recon.max),
        share.max,
    );
}

/// A quantity and how much its last third may exceed its middle third and still count as
/// levelled off: `last <= middle * (1 + rel) + abs`.
struct Level {
    name: &'static str,
    rel: f64,
    abs: f64,
    of: fn(&Sample) -> f64,
}

/// The tolerances, and why:
/// - RSS 10% + 8 MiB: the allocator keeps freed pages, so RSS wanders by a few MiB with no leak;
///   a leak of even 1 KiB per frame (16 frames/s) would add 3 MiB a third of a 10-minute run,
///   19 MiB of an hour's. The history rings grow RSS by design until they are full (15 minutes
///   per host here) or their host restarts: read RSS against `held frames`.
/// - held frames 10% + 500: what the rings hold levels off once kills empty them as fast as
///   they fill.
/// - fds +8: 100 viewers, 16 peers and reconnects in flight move the count by a few.
/// - threads +4: tokio's blocking pool (share-store writes) grows and shrinks on its own.
/// - held viewers +5: reconnecting viewers are between connections at any moment.
/// - frames behind 25% + 8 frames: a slow viewer's backlog saws between catch-ups.
const LEVELS: &[Level] = &[
    Level {
        name: "RSS MiB",
        rel: 0.10,
        abs: 8.0,
        of: |s| s.rss_kib as f64 / 1024.0,
    },
    Level {
        name: "held frames (hub's rings)",
        rel: 0.10,
        abs: 500.0,
        of: |s| s.held_frames as f64,
    },
    Level {
        name: "open fds",
        rel: 0.0,
        abs: 8.0,
        of: |s| s.fds as f64,
    },
    Level {
        name: "threads",
        rel: 0.0,
        abs: 4.0,
        of: |s| s.threads as f64,
    },
    Level {
        name: "held viewers",
        rel: 0.0,
        abs: 5.0,
        of: |s| s.hub_viewers as f64,
    },
    Level {
        name: "fast: frames behind (max)",
        rel: 0.25,
        abs: 8.0,
        of: |s| behind(s, Kind::Fast).max as f64,
    },
    Level {
        name: "slow: frames behind (mean)",
        rel: 0.25,
        abs: 8.0,
        of: |s| behind(s, Kind::Slow).mean,
    },
    Level {
        name: "slow: frames behind (max)",
        rel: 0.25,
        abs: 8.0,
        of: |s| behind(s, Kind::Slow).max as f64,
    },
    Level {
        name: "reconnecting: frames behind (mean)",
        rel: 0.25,
        abs: 8.0,
        of: |s| behind(s, Kind::Reconnecting).mean,
    },
];

fn behind(s: &Sample, k: Kind) -> Behind {
    s.behind.get(&k).copied().unwrap_or_default()
}

/// One check's outcome.
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

impl Check {
    pub fn new(name: impl Into<String>, ok: bool, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok,
            detail: detail.into(),
        }
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// Prints each quantity's thirds and whether it levelled off (a verdict to read, not a check:
/// a 10-minute run ends before the rings are full).
pub fn levelling(samples: &[Sample]) {
    println!(
        "\n{:<36} {:>9} {:>9} {:>9} {:>9} {:>9}  verdict (3rd third <= 2nd*(1+rel)+abs)",
        "quantity", "first", "1st 3rd", "2nd 3rd", "3rd 3rd", "last"
    );
    let third = samples.len() / 3;
    for l in LEVELS {
        let v: Vec<f64> = samples.iter().map(l.of).collect();
        let (a, b, c) = (
            mean(&v[..third]),
            mean(&v[third..2 * third]),
            mean(&v[2 * third..]),
        );
        let limit = b * (1.0 + l.rel) + l.abs;
        let verdict = if third == 0 {
            "too few samples".to_owned()
        } else if c <= limit {
            format!("levelled off (limit {limit:.1})")
        } else {
            format!("STILL RISING (limit {limit:.1})")
        };
        println!(
            "{:<36} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}  {verdict}",
            l.name,
            v.first().copied().unwrap_or(0.0),
            a,
            b,
            c,
            v.last().copied().unwrap_or(0.0),
        );
    }
}

/// Prints the checks; true when all passed.
pub fn print_checks(checks: &[Check]) -> bool {
    println!();
    for c in checks {
        let mark = if c.ok { "ok  " } else { "FAIL" };
        println!("{mark} {}: {}", c.name, c.detail);
    }
    checks.iter().all(|c| c.ok)
}
