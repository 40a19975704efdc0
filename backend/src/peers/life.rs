//! A peer's life: connect, stream until the link fails, report why, wait, try again. The wait is
//! jittered exponential backoff from 1 s to 60 s, back to 1 s after a link that streamed for a
//! while; a reconnect resumes from the [`Feed`]'s last seq, so it leaves no gap.

use super::PeerSink;
use super::feed::Feed;
use shared::HostState;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

pub const BACKOFF_START: Duration = Duration::from_secs(1);
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// A link that streamed at least this long resets the backoff.
pub const HEALTHY_AFTER: Duration = Duration::from_secs(10);

/// One way of reaching a peer (SSH, WebSocket). `run` connects, streams every message into
/// `feed`/`sink` (calling `sink.link(Up, None)` is the feed's job, on `hello`), and returns the
/// reason the link ended, in words for people ("Permission denied (publickey)", "unauthorized",
/// "connection refused", "protocol error: ...").
pub trait Link: Send + 'static {
    fn run<'a>(
        &'a mut self,
        feed: &'a mut Feed,
        sink: &'a dyn PeerSink,
    ) -> Pin<Box<dyn Future<Output = String> + Send + 'a>>;
}

/// A boxed link (what [`super::link_for`] gives) is a link.
impl<L: Link + ?Sized> Link for Box<L> {
    fn run<'a>(
        &'a mut self,
        feed: &'a mut Feed,
        sink: &'a dyn PeerSink,
    ) -> Pin<Box<dyn Future<Output = String> + Send + 'a>> {
        (**self).run(feed, sink)
    }
}

/// The delay before attempt `failures` (1-based) with `jitter` in 0..1: doubling from
/// [`BACKOFF_START`] to [`BACKOFF_MAX`], spread by up to +-20% so peers that failed together do
/// not come back together.
pub fn backoff(failures: u32, jitter: f64) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    let base = BACKOFF_START
        .saturating_mul(1u32 << doublings)
        .min(BACKOFF_MAX);
    let spread = 0.8 + 0.4 * jitter.clamp(0.0, 1.0);
    base.mul_f64(spread).min(BACKOFF_MAX)
}

fn jitter() -> f64 {
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX)
}

/// Runs `link` until `cancel` fires, keeping `sink` told how the link stands; `keep` is how many
/// of the peer's frames the hub holds (its backfills ask for no more).
pub async fn supervise(
    mut link: impl Link,
    sink: Arc<dyn PeerSink>,
    keep: usize,
    cancel: CancellationToken,
) {
    let mut feed = Feed::keeping(keep);
    let mut failures = 0u32;
    loop {
        sink.link(HostState::Connecting, None);
        feed.reconnected();
        let started = Instant::now();
        let reason = tokio::select! {
            () = cancel.cancelled() => return,
            reason = link.run(&mut feed, sink.as_ref()) => reason,
        };
        sink.link(HostState::Down, Some(reason));
        failures = if started.elapsed() >= HEALTHY_AFTER {
            1
        } else {
            failures.saturating_add(1)
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(backoff(failures, jitter())) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_one_second_to_a_minute_with_jitter() {
        let mid: Vec<u64> = (1..=8).map(|n| backoff(n, 0.5).as_secs()).collect();
        assert_eq!(mid, vec![1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(backoff(1, 0.0), Duration::from_millis(800));
        assert_eq!(backoff(1, 1.0), Duration::from_millis(1200));
        assert_eq!(backoff(u32::MAX, 1.0), BACKOFF_MAX);
    }
}
