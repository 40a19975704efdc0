//! `serve`'s sampling threads: the thread that leads a tick reads NVML itself, and a standby thread
//! takes the tick over if NVML passes the deadline.
//!
//! Reading NVML on a reader thread of its own ([`super::deadline`]) costs two thread wake-ups a
//! tick (ask, answer) on top of the sampler's own. Here the leader reads the fast sources, then
//! calls NVML with the tick's state unlocked and a timer (a `timerfd`) armed for the deadline, and
//! disarms it when NVML answers: the standby, blocked on the timer, never wakes while NVML
//! answers in time. When the timer fires first, the standby takes the waiting frame, publishes it
//! with the GPUs marked as not answering (as [`Sampler::tick`] does), and leads from then on. The
//! thread stuck in NVML, once it returns, hands over its late reading (the next frame carries it,
//! as a reading that landed late does with the reader thread) and the GPU source, and stands by.
//! The two threads change roles that way after every hang; there is never a third.

use super::deadline::Polled;
use super::sampler::{Begun, Sampler, SamplerConfig};
use super::sources::{GpuReading, Sources};
use super::ticker::{Stop, Ticker};
use crate::host_feed::HostFeed;
use crate::host_feed::diagnoser::Diagnoser;
use rustix::fd::OwnedFd;
use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
    timerfd_settime,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The tick's state, held by whichever thread leads.
struct Lead {
    sampler: Sampler,
    /// Taken by the leader while it sleeps until the next tick, so the lock is free then (for
    /// a thread back from a hung call to hand over its reading).
    ticker: Option<Ticker>,
    hub: HostFeed,
    diagnoser: Diagnoser,
    /// The frame waiting for the leader's NVML call, and when the call began.
    pending: Option<(Begun, Instant)>,
    /// When the call of a thread that was taken over began, while it is still in it.
    stuck_since: Option<Instant>,
    /// That thread's reading, once it returned, for the next frame.
    late: Option<(GpuReading, Duration)>,
}

impl Lead {
    /// The GPU part of a tick whose leader cannot read NVML: a late reading, or still busy.
    fn gpus_without_asking(&mut self) -> Polled<GpuReading> {
        match self.late.take() {
            Some((reading, took)) => Polled::Fresh(reading, took),
            None => Polled::Busy {
                for_: self.stuck_since.map_or(Duration::ZERO, |at| at.elapsed()),
            },
        }
    }

    fn publish(&mut self, begun: Begun, gpus: Polled<GpuReading>) {
        let frame = self.sampler.finish(begun, gpus);
        self.diagnoser.publish_to(&self.hub, frame);
    }
}

struct Shared {
    lead: Mutex<Lead>,
    /// Fires at the deadline of a running NVML call; the standby waits on it.
    alarm: OwnedFd,
    stop: Arc<Stop>,
    /// Times the standby woke (a takeover, or an alarm a call beat by a hair).
    wakes: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Lead> {
        self.lead.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Arms the alarm to fire `after` from now (zero disarms it).
    fn arm(&self, after: Duration) {
        let value = Timespec {
            tv_sec: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(after.subsec_nanos()),
        };
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let spec = Itimerspec {
            it_interval: zero,
            it_value: value,
        };
        if let Err(e) = timerfd_settime(&self.alarm, TimerfdTimerFlags::empty(), &spec) {
            tracing::error!(error = %e, "cannot set the sampler's deadline timer");
        }
    }

    /// Blocks until the alarm fires.
    fn wait_alarm(&self) {
        let mut expirations = [0u8; 8];
        loop {
            match rustix::io::read(&self.alarm, &mut expirations) {
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    // Not expected of a timerfd; sleep rather than spin.
                    tracing::error!(error = %e, "cannot wait on the sampler's deadline timer");
                    std::thread::sleep(Duration::from_secs(1));
                    return;
                }
                Ok(_) => return,
            }
        }
    }
}

enum Role {
    Lead,
    StandBy,
}

/// Leads one tick; what this thread does next.
fn lead(shared: &Shared) -> Option<Role> {
    // Only the leader takes the ticker, and it is put back before the standby can lead.
    let mut ticker = shared.lock().ticker.take()?;
    let ticked = ticker.tick(None);
    let mut lead = shared.lock();
    lead.ticker = Some(ticker);
    // Stopped while asleep, or just after waking: stop_and_join may have returned already.
    if ticked.is_none() || shared.stop.is_stopped() {
        return None;
    }
    let begun = lead.sampler.begin();
    let source = match lead.late {
        Some(_) => None,
        None => lead.sampler.take_gpu(),
    };
    let Some(mut source) = source else {
        let gpus = lead.gpus_without_asking();
        lead.publish(begun, gpus);
        return Some(Role::Lead);
    };
    let started = Instant::now();
    let until = begun.deadline.saturating_duration_since(started);
    lead.pending = Some((begun, started));
    drop(lead);
    // A deadline already passed still fires at once (zero would disarm).
    shared.arm(until.max(Duration::from_nanos(1)));
    let reading = source.sample();
    let took = started.elapsed();
    shared.arm(Duration::ZERO);

    let mut lead = shared.lock();
    lead.sampler.put_gpu(source);
    lead.stuck_since = None;
    if shared.stop.is_stopped() {
        return None;
    }
    match lead.pending.take() {
        Some((begun, _)) => {
            lead.publish(begun, Polled::Fresh(reading, took));
            Some(Role::Lead)
        }
        // The standby took this tick over: it leads now.
        None => {
            lead.late = Some((reading, took));
            Some(Role::StandBy)
        }
    }
}

/// Waits for the alarm; takes the tick over when the leader's NVML call passed its deadline.
fn stand_by(shared: &Shared) -> Option<Role> {
    shared.wait_alarm();
    shared.wakes.fetch_add(1, Ordering::Relaxed);
    if shared.stop.is_stopped() {
        return None;
    }
    let mut lead = shared.lock();
    if shared.stop.is_stopped() {
        return None;
    }
    let now = Instant::now();
    // An alarm from a call that answered just in time, or already re-armed for a later one.
    if lead
        .pending
        .as_ref()
        .is_none_or(|(begun, _)| now < begun.deadline)
    {
        return Some(Role::StandBy);
    }
    let (begun, started) = lead.pending.take()?;
    lead.stuck_since = Some(started);
    lead.publish(
        begun,
        Polled::Busy {
            for_: started.elapsed(),
        },
    );
    Some(Role::Lead)
}

fn run(shared: &Shared, mut role: Role) {
    while let Some(next) = match role {
        Role::Lead => lead(shared),
        Role::StandBy => stand_by(shared),
    } {
        role = next;
    }
}

/// The running sampling threads.
pub struct Running {
    shared: Arc<Shared>,
}

impl Running {
    /// A handle that stops the threads (e.g. from a signal handler task).
    pub fn stopper(&self) -> Arc<Stop> {
        self.shared.stop.clone()
    }

    /// How many times the standby woke: it sleeps while NVML answers within the deadline.
    pub fn standby_wakes(&self) -> u64 {
        self.shared.wakes.load(Ordering::Relaxed)
    }

    /// Stops the threads and waits for the current tick to end: no frame is published after
    /// this returns. A thread stuck in NVML is not waited for; it ends when NVML returns.
    pub fn stop_and_join(self) {
        self.shared.stop.stop();
        // Wakes the standby.
        self.shared.arm(Duration::from_nanos(1));
        // Whoever leads checks the stop under this lock before it publishes.
        drop(self.shared.lock());
    }
}

/// Starts sampling `sources` on the shared [`Ticker`] (missed ticks are skipped, not bunched),
/// each frame published to `hub` and diagnosed by `diagnoser`, until stopped.
pub fn spawn(
    sources: Sources,
    config: SamplerConfig,
    hub: HostFeed,
    diagnoser: Diagnoser,
) -> std::io::Result<Running> {
    let stop = Stop::new();
    let ticker = Ticker::new(config.interval, stop.clone());
    let sampler = Sampler::inline(sources, config)?;
    let alarm = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::CLOEXEC)?;
    let shared = Arc::new(Shared {
        lead: Mutex::new(Lead {
            sampler,
            ticker: Some(ticker),
            hub,
            diagnoser,
            pending: None,
            stuck_since: None,
            late: None,
        }),
        alarm,
        stop,
        wakes: AtomicU64::new(0),
    });
    let running = Running { shared };
    for (name, role) in [
        ("vramio-sampler", Role::Lead),
        ("vramio-standby", Role::StandBy),
    ] {
        let shared = running.shared.clone();
        let started = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(&shared, role));
        if let Err(e) = started {
            // No thread is left running without a handle to stop it.
            running.stop_and_join();
            return Err(e);
        }
    }
    Ok(running)
}

#[cfg(test)]
#[path = "standby_tests.rs"]
mod tests;
