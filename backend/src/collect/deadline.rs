//! [`DeadlineReader`]: a blocking reader on a thread of its own, asked for one reading at a time
//! and waited for until a deadline. Used for the sources that can hang (NVML, calls on mounts not
//! known to be local): a hung call blocks only its worker, which answers "busy" until it returns,
//! and no second request is queued behind it.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

/// Runs a blocking source on a thread of its own; the sampler asks and waits a bounded time.
pub struct DeadlineReader<T> {
    ask: SyncSender<()>,
    answers: Receiver<(T, Duration)>,
    busy_since: Option<Instant>,
}

pub enum Polled<T> {
    Fresh(T, Duration),
    /// Still working on a request made `for_` ago.
    Busy {
        for_: Duration,
    },
    /// The worker thread is gone (it panicked).
    Dead,
}

impl<T: Send + 'static> DeadlineReader<T> {
    /// Starts the thread `name`, which runs `read` once per request.
    pub fn spawn(
        name: &str,
        mut read: impl FnMut() -> T + Send + 'static,
    ) -> std::io::Result<Self> {
        let (ask, asked) = mpsc::sync_channel::<()>(1);
        let (answer, answers) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                while asked.recv().is_ok() {
                    let start = Instant::now();
                    let value = read();
                    if answer.send((value, start.elapsed())).is_err() {
                        break;
                    }
                }
            })?;
        Ok(DeadlineReader {
            ask,
            answers,
            busy_since: None,
        })
    }

    /// Starts a read unless one is still running.
    pub fn request(&mut self) -> bool {
        if self.busy_since.is_some() {
            return true;
        }
        match self.ask.try_send(()) {
            Ok(()) => {
                self.busy_since = Some(Instant::now());
                true
            }
            Err(_) => false,
        }
    }

    /// Waits until `deadline` for the running read.
    pub fn wait(&mut self, deadline: Instant) -> Polled<T> {
        let Some(since) = self.busy_since else {
            return Polled::Dead;
        };
        let left = deadline.saturating_duration_since(Instant::now());
        match self.answers.recv_timeout(left) {
            Ok((value, cost)) => {
                self.busy_since = None;
                Polled::Fresh(value, cost)
            }
            Err(RecvTimeoutError::Timeout) => Polled::Busy {
                for_: since.elapsed(),
            },
            Err(RecvTimeoutError::Disconnected) => Polled::Dead,
        }
    }
}
