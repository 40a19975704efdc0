//! One peer's message stream, decoded: `hello` must speak this protocol, frames (live or
//! backfilled) go to the sink in seq order exactly once, diagnoses are passed on, and the newest
//! seq seen is kept so a reconnect resumes with `since_seq` and leaves no gap.

use super::PeerSink;
use shared::{PROTOCOL_VERSION, ServerMsg};

/// Why a peer's stream is unusable.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("protocol error: the peer speaks protocol {0}, this vramio speaks {PROTOCOL_VERSION}")]
    Version(u32),
    #[error("protocol error: {0}")]
    Bad(String),
    /// A hub, or a `serve --peer`: its frames are several machines'. Merging them under one name
    /// would interleave them; the hub shows why instead.
    #[error(
        "the peer serves {} hosts ({}): it is itself a hub or a `serve --peer`; add its hosts \
         to this hub's peers instead",
        .0.len(),
        .0.iter().take(8).map(String::as_str).collect::<Vec<_>>().join(", ")
    )]
    ManyHosts(Vec<String>),
}

/// The state of one peer's stream across reconnects.
#[derive(Debug, Default)]
pub struct Feed {
    /// The newest frame seq handed to the sink (the peer's numbering).
    pub last_seq: Option<u64>,
    /// The peer's sampling interval, from its latest `hello` (links time their reads by it).
    pub interval: Option<std::time::Duration>,
    /// Whether this connection's `hello` came.
    greeted: bool,
    /// The peer's server start, from its latest `hello` (see `ServerMsg::Hello::instance`).
    instance: Option<String>,
    /// The one host the peer serves, from its latest `hello`.
    host: Option<String>,
    /// How many of the peer's frames the hub keeps: the most a backfill brings.
    keep: Option<u64>,
    /// The hub's questions on the wire on this connection.
    pub pending: super::query::Pending,
}

impl Feed {
    /// A feed for a hub that keeps `frames` of this peer's history: its backfills ask for no more.
    pub fn keeping(frames: usize) -> Feed {
        Feed {
            keep: Some(u64::try_from(frames).unwrap_or(u64::MAX)),
            ..Feed::default()
        }
    }

    /// Call on every new connection, before its first message.
    pub fn reconnected(&mut self) {
        self.greeted = false;
        // Questions asked on the connection before are not answered on this one.
        self.pending = super::query::Pending::default();
    }

    /// The `subscribe` line to send first on a (re)connection.
    pub fn subscribe_msg(&self) -> String {
        let msg = shared::ClientMsg::Subscribe {
            hosts: None,
            since_seq: self.last_seq,
            since: None,
            // The hub keeps whole frames: it serves them on, to its own viewers and /metrics.
            samples: false,
            max_frames: self.keep,
        };
        serde_json::to_string(&msg).unwrap_or_else(|_| r#"{"type":"subscribe"}"#.to_owned())
    }

    /// Decodes one message (a WebSocket text message or one stdout line) and feeds `sink`.
    pub fn apply(&mut self, text: &str, sink: &dyn PeerSink) -> Result<(), ProtocolError> {
        let msg = ServerMsg::from_json(text).map_err(|e| {
            ProtocolError::Bad(format!(
                "cannot read a message ({e}): {:?}",
                text.chars().take(60).collect::<String>()
            ))
        })?;
        if !self.greeted && !matches!(msg, ServerMsg::Hello { .. }) {
            return Err(ProtocolError::Bad("the first message was not hello".into()));
        }
        let msg = match msg {
            ServerMsg::HistoryAnswer { .. }
            | ServerMsg::MomentAnswer { .. }
            | ServerMsg::QueryFailed { .. } => {
                self.pending.answer(msg);
                return Ok(());
            }
            other => other,
        };
        match msg {
            ServerMsg::Hello {
                protocol,
                interval_ms,
                hosts,
                instance,
                ..
            } => {
                if protocol != PROTOCOL_VERSION {
                    return Err(ProtocolError::Version(protocol));
                }
                let host = match hosts.as_slice() {
                    [one] => one.clone(),
                    [] => return Err(ProtocolError::Bad("the peer serves no host".into())),
                    many => return Err(ProtocolError::ManyHosts(many.to_vec())),
                };
                // Another start of the peer (or another machine answering to its name): its
                // frames are numbered anew, so the host starts over, as after a replay's jump.
                let restarted =
                    instance.is_some() && self.instance.is_some() && instance != self.instance;
                if restarted || self.host.as_ref().is_some_and(|h| *h != host) {
                    self.last_seq = None;
                    sink.reset();
                }
                self.instance = instance;
                self.host = Some(host);
                self.greeted = true;
                self.interval = Some(std::time::Duration::from_millis(interval_ms));
                sink.link(shared::HostState::Up, None);
            }
            ServerMsg::Backfill { host, frames } => {
                self.same_host(&host)?;
                for f in frames {
                    self.frame(f, sink);
                }
            }
            ServerMsg::Frame { host, frame } => {
                self.same_host(&host)?;
                self.frame(*frame, sink);
            }
            ServerMsg::Diagnosis { host, diagnosis } => {
                self.same_host(&host)?;
                sink.diagnosis(*diagnosis);
            }
            ServerMsg::Reset { host, .. } => {
                self.same_host(&host)?;
                sink.reset();
            }
            // Chart samples of a peer's jump: the hub keeps frames, so its history of that peer
            // starts over at the whole frames that follow.
            ServerMsg::History { host, .. } => self.same_host(&host)?,
            // The far side's own view of its sampler; the hub judges staleness by arrivals.
            ServerMsg::HostStatus { .. }
            | ServerMsg::Summary { .. }
            | ServerMsg::Lagged { .. }
            | ServerMsg::Pong
            | ServerMsg::HistoryAnswer { .. }
            | ServerMsg::MomentAnswer { .. }
            | ServerMsg::QueryFailed { .. } => {}
            ServerMsg::Error { code, message } => {
                tracing::debug!(?code, %message, "peer refused a message");
            }
        }
        Ok(())
    }

    /// A message about a host other than the one `hello` named is never merged into it.
    fn same_host(&self, host: &str) -> Result<(), ProtocolError> {
        match &self.host {
            Some(h) if h == host => Ok(()),
            _ => Err(ProtocolError::Bad(format!(
                "a message about host {:?}, which the peer's hello did not name",
                host.chars().take(60).collect::<String>()
            ))),
        }
    }

    fn frame(&mut self, frame: shared::Frame, sink: &dyn PeerSink) {
        if self.last_seq.is_some_and(|s| frame.seq <= s) {
            return;
        }
        self.last_seq = Some(frame.seq);
        sink.frame(frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::Diagnosis;
    use shared::{Frame, HostState};
    use std::sync::Mutex;

    #[derive(Default)]
    struct Collect {
        seqs: Mutex<Vec<u64>>,
        links: Mutex<Vec<HostState>>,
        resets: Mutex<u32>,
    }

    impl PeerSink for Collect {
        fn link(&self, state: HostState, _error: Option<String>) {
            self.links.lock().expect("lock").push(state);
        }
        fn frame(&self, frame: Frame) {
            self.seqs.lock().expect("lock").push(frame.seq);
        }
        fn diagnosis(&self, _diagnosis: Diagnosis) {}
        fn reset(&self) {
            *self.resets.lock().expect("lock") += 1;
        }
    }

    fn frame_msg(seq: u64) -> String {
        serde_json::to_string(&ServerMsg::Frame {
            host: "h".into(),
            frame: Box::new(Frame::empty("h", seq, seq * 1000, 1000)),
        })
        .expect("json")
    }

    #[test]
    fn frames_pass_once_in_order_across_a_reconnect() {
        let sink = Collect::default();
        let mut feed = Feed::default();
        let hello = hello(&["h"], "i");
        assert!(feed.apply(&frame_msg(1), &sink).is_err(), "hello first");
        feed.apply(&hello, &sink).expect("hello");
        assert_eq!(feed.interval, Some(std::time::Duration::from_secs(1)));
        for s in [1, 2, 3] {
            feed.apply(&frame_msg(s), &sink).expect("frame");
        }
        feed.reconnected();
        assert!(feed.subscribe_msg().contains("\"since_seq\":3"));
        feed.apply(&hello, &sink).expect("hello again");
        let backfill = serde_json::to_string(&ServerMsg::Backfill {
            host: "h".into(),
            frames: (2..=5)
                .map(|s| Frame::empty("h", s, s * 1000, 1000))
                .collect(),
        })
        .expect("json");
        feed.apply(&backfill, &sink).expect("backfill");
        assert_eq!(*sink.seqs.lock().expect("lock"), vec![1, 2, 3, 4, 5]);
        assert_eq!(
            *sink.links.lock().expect("lock"),
            vec![HostState::Up, HostState::Up]
        );
    }

    fn hello(hosts: &[&str], instance: &str) -> String {
        serde_json::to_string(&ServerMsg::hello(
            hosts.iter().map(|h| (*h).to_owned()).collect(),
            1000,
            "x",
            instance,
        ))
        .expect("json")
    }

    /// A peer that started again (a new `instance` in its hello) numbers its frames anew, maybe
    /// below the last seq seen: the host starts over and takes them (they were dropped as old,
    /// and the host showed "stale" while its frames arrived).
    #[test]
    fn a_restarted_peer_starts_the_host_over() {
        let sink = Collect::default();
        let mut feed = Feed::default();
        feed.apply(&hello(&["h"], "first"), &sink).expect("hello");
        for s in [500, 501] {
            feed.apply(&frame_msg(s), &sink).expect("frame");
        }
        feed.reconnected();
        feed.apply(&hello(&["h"], "first"), &sink)
            .expect("same start");
        assert_eq!(
            *sink.resets.lock().expect("lock"),
            0,
            "a reconnect alone resets nothing"
        );
        feed.reconnected();
        feed.apply(&hello(&["h"], "second"), &sink)
            .expect("new start");
        for s in [1, 2] {
            feed.apply(&frame_msg(s), &sink).expect("frame");
        }
        assert_eq!(*sink.resets.lock().expect("lock"), 1);
        assert_eq!(*sink.seqs.lock().expect("lock"), vec![500, 501, 1, 2]);
        assert!(feed.subscribe_msg().contains("\"since_seq\":2"));
    }

    /// A hub that keeps 120 frames of a peer asks for no more in a backfill.
    #[test]
    fn the_subscribe_asks_for_the_share_the_hub_keeps() {
        let msg: shared::ClientMsg =
            serde_json::from_str(&Feed::keeping(120).subscribe_msg()).expect("json");
        assert!(
            matches!(
                msg,
                shared::ClientMsg::Subscribe {
                    max_frames: Some(120),
                    ..
                }
            ),
            "{msg:?}"
        );
        assert!(!Feed::default().subscribe_msg().contains("max_frames"));
    }

    /// A peer that serves several hosts (a hub, `serve --peer`) is refused with why; a message
    /// about a host its hello did not name is an error, never merged.
    #[test]
    fn a_peer_of_many_hosts_is_refused_never_merged() {
        let sink = Collect::default();
        let mut feed = Feed::default();
        let e = feed
            .apply(&hello(&["gpu1", "gpu2"], "i"), &sink)
            .expect_err("many hosts");
        assert!(matches!(e, ProtocolError::ManyHosts(_)), "{e}");
        assert!(e.to_string().contains("gpu1, gpu2"), "{e}");
        let mut feed = Feed::default();
        feed.apply(&hello(&["gpu1"], "i"), &sink).expect("one host");
        let other = serde_json::to_string(&ServerMsg::Frame {
            host: "gpu2".into(),
            frame: Box::new(Frame::empty("gpu2", 9, 9000, 1000)),
        })
        .expect("json");
        let e = feed.apply(&other, &sink).expect_err("another host");
        assert!(e.to_string().contains("gpu2"), "{e}");
        assert!(sink.seqs.lock().expect("lock").is_empty());
    }

    #[test]
    fn garbage_and_other_protocols_are_errors() {
        let sink = Collect::default();
        let mut feed = Feed::default();
        let e = feed.apply("\u{0}\u{1}garbage", &sink).expect_err("garbage");
        assert!(e.to_string().starts_with("protocol error"), "{e}");
        let old =
            r#"{"type":"hello","protocol":2,"version":"0.1.0","hosts":["h"],"interval_ms":1000}"#;
        assert_eq!(feed.apply(old, &sink), Err(ProtocolError::Version(2)));
    }
}
