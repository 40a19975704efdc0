//! The soak's checks at the end, from what the viewers, the chaos and the share link recorded:
//! fast viewers lost no frame, reconnecting viewers resumed without a gap, slow viewers' gaps were
//! all announced by `lagged`, every killed peer was back within its backoff bound, every revoked
//! link's session closed with 4403, and every host is up at the end.

use super::soak_http::Health;
use super::soak_peers::Outage;
use super::soak_report::Check;
use super::soak_share::{CLOSE_WITHIN, Cycle, SHARE_ENDED};
use super::soak_viewers::{Kind, Viewer};
use std::sync::Arc;
use std::time::Duration;

/// Totals over the viewers of one kind.
#[derive(Default)]
struct Totals {
    viewers: usize,
    frames: u64,
    backfills: u64,
    resets: u64,
    lagged: u64,
    skipped: u64,
    gaps: u64,
    connections: u64,
    messages: u64,
    dropped: u64,
    /// A few gap and drop descriptions, with the viewer's id.
    examples: Vec<String>,
    /// Viewers that never got a frame.
    starved: usize,
}

fn totals(viewers: &[Arc<Viewer>], kind: Kind) -> Totals {
    let mut t = Totals::default();
    for v in viewers.iter().filter(|v| v.kind == kind) {
        let s = v.seen();
        t.viewers += 1;
        t.frames += s.frames;
        t.backfills += s.backfills;
        t.resets += s.resets;
        t.lagged += s.lagged;
        t.skipped += s.skipped;
        t.gaps += s.gaps;
        t.connections += s.connections;
        t.messages += s.messages;
        t.dropped += s.dropped.len() as u64;
        t.starved += usize::from(s.frames == 0);
        let mine = s
            .gap_examples
            .iter()
            .map(|g| format!("viewer {}: gap {g}", v.id))
            .chain(s.dropped.iter().map(|d| format!("viewer {}: {d}", v.id)));
        t.examples.extend(mine.take(3));
    }
    t.examples.truncate(6);
    t
}

impl Totals {
    fn line(&self) -> String {
        let mut s = format!(
            "{} viewers, {} connections, {} messages, {} frames, {} backfills, {} resets, {} lagged ({} frames \
             skipped), {} gaps, {} dropped by the hub or the socket",
            self.viewers,
            self.connections,
            self.messages,
            self.frames,
            self.backfills,
            self.resets,
            self.lagged,
            self.skipped,
            self.gaps,
            self.dropped
        );
        if !self.examples.is_empty() {
            s.push_str(&format!("; e.g. {}", self.examples.join("; ")));
        }
        s
    }
}

pub fn viewers(viewers: &[Arc<Viewer>]) -> Vec<Check> {
    let fast = totals(viewers, Kind::Fast);
    let recon = totals(viewers, Kind::Reconnecting);
    let slow = totals(viewers, Kind::Slow);
    vec![
        Check::new(
            "fast viewers lost no frame (no lagged, seq +1 per host but across a reset, never dropped)",
            fast.lagged == 0 && fast.gaps == 0 && fast.dropped == 0 && fast.starved == 0,
            fast.line(),
        ),
        Check::new(
            "reconnecting viewers resumed with no gap (subscribe since)",
            recon.gaps == 0 && recon.starved == 0,
            recon.line(),
        ),
        Check::new(
            "slow viewers' gaps all announced by lagged",
            slow.gaps <= slow.lagged && slow.starved == 0,
            slow.line(),
        ),
        // The session's own promise (`WRITE_TIMEOUT`: "lag alone never drops a client"): these
        // read all along, only slower than the hub sends.
        Check::new(
            "slow viewers never dropped by the hub",
            slow.dropped == 0,
            format!("{} drops seen by the slow viewers", slow.dropped),
        ),
    ]
}

/// Prints one line per outage and checks each was back within its bound.
pub fn outages(outages: &[Outage]) -> Vec<Check> {
    println!(
        "\nkilled peers (down: kill to listening again; back: listening to `up` in /api/health):"
    );
    let mut late = Vec::new();
    let mut worst_margin = f64::INFINITY;
    let mut back_max = Duration::ZERO;
    for o in outages {
        let back = o
            .back
            .map_or("never".to_owned(), |b| format!("{:.1} s", b.as_secs_f64()));
        println!(
            "  {:<16} down {:>5.1} s  back after {:>7}  bound {:>5.1} s{}{}",
            o.peer,
            o.down.as_secs_f64(),
            back,
            o.bound.as_secs_f64(),
            if o.seen_out { "" } else { "  (never seen out)" },
            o.error
                .as_deref()
                .map(|e| format!("  {e}"))
                .unwrap_or_default()
        );
        match o.back {
            Some(b) if o.error.is_none() && b <= o.bound => {
                worst_margin = worst_margin.min((o.bound - b).as_secs_f64());
                back_max = back_max.max(b);
            }
            _ => late.push(format!(
                "{} ({back}, bound {:.1} s)",
                o.peer,
                o.bound.as_secs_f64()
            )),
        }
    }
    let unseen = outages.iter().filter(|o| !o.seen_out).count();
    let detail = format!(
        "{} kills, back after at most {:.1} s, closest to its bound by {:.1} s; {} not seen \
         down in /api/health (polled every 250 ms){}",
        outages.len(),
        back_max.as_secs_f64(),
        if worst_margin.is_finite() {
            worst_margin
        } else {
            0.0
        },
        unseen,
        if late.is_empty() {
            String::new()
        } else {
            format!("; LATE: {}", late.join(", "))
        }
    );
    vec![Check::new(
        "every killed peer back up within its backoff bound",
        late.is_empty() && !outages.is_empty(),
        detail,
    )]
}

pub fn shares(cycles: &[Cycle]) -> Vec<Check> {
    let bad: Vec<String> = cycles
        .iter()
        .filter_map(|c| {
            c.closed
                .as_ref()
                .err()
                .map(|e| format!("{:?}: {e}", c.host))
        })
        .collect();
    let slowest = cycles
        .iter()
        .filter_map(|c| c.closed.as_ref().ok())
        .max()
        .copied()
        .unwrap_or_default();
    let messages: u64 = cycles.iter().map(|c| c.messages).sum();
    let one_host = cycles.iter().filter(|c| c.host.is_some()).count();
    let mut detail = format!(
        "{} links ({one_host} for one host) revoked, {messages} messages read before the revokes, \
         close {SHARE_ENDED} at most {:.1} ms after the DELETE was answered (limit {:?})",
        cycles.len(),
        slowest.as_secs_f64() * 1000.0,
        CLOSE_WITHIN
    );
    if !bad.is_empty() {
        detail.push_str(&format!("; FAILED: {}", bad.join("; ")));
    }
    vec![Check::new(
        format!("every revoked share link's session closed with {SHARE_ENDED}"),
        bad.is_empty() && !cycles.is_empty(),
        detail,
    )]
}

pub fn final_health(health: Option<&Health>, names: &[String]) -> Check {
    let not_up: Vec<String> = names
        .iter()
        .filter(|n| health.and_then(|h| h.hosts.get(*n)).map(String::as_str) != Some("up"))
        .cloned()
        .collect();
    Check::new(
        "every host up at the end",
        not_up.is_empty(),
        if not_up.is_empty() {
            format!("{} hosts up", names.len())
        } else {
            format!("not up: {}", not_up.join(", "))
        },
    )
}
