//! The overview a viewer of several hosts gets whatever it selected ([`Overview`]): every host's
//! latest `summary` right after `hello`, then each new one; a viewer that falls behind the fleet's
//! channel is sent every host's latest again. A viewer of one host gets none.

use super::Ended;
use super::socket::text;
use crate::host_feed::fleet::{Fleet, SummaryMsg};
use axum::extract::ws::Message;
use tokio::sync::broadcast::{self, error::RecvError};

pub struct Overview {
    fleet: Fleet,
    /// `None` for a session of one host.
    summaries: Option<broadcast::Receiver<SummaryMsg>>,
}

impl Overview {
    /// Starts watching `fleet`'s summaries, if it has more than one host.
    pub fn watch(fleet: &Fleet) -> Overview {
        Overview {
            fleet: fleet.clone(),
            summaries: (fleet.len() > 1).then(|| fleet.watch_summaries()),
        }
    }

    /// Every host's latest summary (none for one host).
    pub fn latest(&self) -> Vec<Message> {
        match self.summaries {
            Some(_) => self
                .fleet
                .latest_summaries()
                .into_iter()
                .map(|m| text(&m))
                .collect(),
            None => Vec::new(),
        }
    }

    /// The next summaries to send, in one write; never for one host. Cancel-safe.
    pub async fn next(&mut self) -> Result<Vec<Message>, Ended> {
        let Some(rx) = &mut self.summaries else {
            return std::future::pending().await;
        };
        match rx.recv().await {
            Ok(m) => Ok(vec![text(&m.message)]),
            Err(RecvError::Lagged(_)) => Ok(self.latest()),
            Err(RecvError::Closed) => Err(Ended::ServerShutdown),
        }
    }
}
