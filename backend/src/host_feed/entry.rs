//! One published frame (its `frame` message encoded once, with and without user names) and the
//! latest diagnosis (its `diagnosis` message encoded once, and typed).

use super::encoded::Encoded;
use shared::Frame;
use shared::diagnosis::Diagnosis;
use shared::privacy::Hider;
use std::sync::{Arc, OnceLock};

/// The key of this server's user-name stand-ins ([`Hider`]): random per process, so a stand-in
/// cannot be looked up from a list of names, and the same in every frame, diagnosis and scrape.
pub fn hider_key() -> u64 {
    static KEY: OnceLock<u64> = OnceLock::new();
    *KEY.get_or_init(|| {
        let mut b = [0u8; 8];
        // Without randomness the stand-ins are still distinct per user, only guessable.
        let _ = getrandom::fill(&mut b);
        u64::from_le_bytes(b)
    })
}

/// A hider for `users`, with this server's key.
pub fn hider<'a>(users: impl IntoIterator<Item = &'a str>) -> Hider {
    Hider::new(users.into_iter().map(str::to_owned), hider_key())
}

/// `{"type":"frame","host":<host>,"frame":` for the hub's host.
pub(super) fn frame_msg_prefix(host: &str) -> String {
    let host = serde_json::to_string(host).unwrap_or_else(|_| "\"\"".into());
    format!(r#"{{"type":"frame","host":{host},"frame":"#)
}

/// One published frame: its sequence number, time, and the `frame` message encoded once.
#[derive(Debug)]
pub struct Entry {
    pub seq: u64,
    pub t_ms: u64,
    message: Encoded,
    /// Bytes of `message` before the frame object.
    prefix_len: usize,
    /// The users it names (its processes' and jobs'), once each.
    users: Box<[String]>,
    /// The message without user names, made on first demand (a share link that hides them).
    without_users: OnceLock<Encoded>,
    /// The frame's chart sample as JSON, made on first demand (a page's first backfill).
    sample: OnceLock<String>,
}

impl Entry {
    pub(super) fn new(seq: u64, frame: &Frame, message: String, prefix_len: usize) -> Entry {
        let mut users: Vec<String> = frame.users().map(str::to_owned).collect();
        users.sort_unstable();
        users.dedup();
        Entry {
            seq,
            t_ms: frame.t_ms,
            message: Encoded::from(message),
            prefix_len,
            users: users.into_boxed_slice(),
            without_users: OnceLock::new(),
            sample: OnceLock::new(),
        }
    }

    /// The whole `{"type":"frame","frame":{...}}` message, cheap to clone for every session.
    pub fn message(&self) -> Encoded {
        self.message.clone()
    }
    /// Just the frame's JSON object (for `/api/snapshot` and backfill).
    pub fn frame_json(&self) -> &str {
        self.frame_part(self.message.as_str())
    }

    /// [`Entry::message`], or with `show_users` false the same frame without user names.
    pub fn message_for(&self, show_users: bool) -> Encoded {
        if show_users || self.users.is_empty() {
            return self.message.clone();
        }
        self.without_users().clone()
    }

    /// [`Entry::frame_json`], or with `show_users` false the frame without user names.
    pub fn frame_json_for(&self, show_users: bool) -> &str {
        if show_users || self.users.is_empty() {
            return self.frame_json();
        }
        self.frame_part(self.without_users().as_str())
    }

    /// The frame's chart sample ([`shared::history::Sample`]) as JSON.
    pub fn sample_json(&self) -> &str {
        self.sample.get_or_init(|| {
            // Decoding what this hub encoded cannot fail; if it ever did, the sample is empty.
            let sample = serde_json::from_str::<Frame>(self.frame_json())
                .map(|f| shared::history::Sample::of(&f))
                .unwrap_or(shared::history::Sample {
                    seq: self.seq,
                    t_ms: self.t_ms,
                    gpus: Vec::new(),
                    disks: Vec::new(),
                });
            serde_json::to_string(&sample).unwrap_or_default()
        })
    }

    fn without_users(&self) -> &Encoded {
        self.without_users.get_or_init(|| {
            // Decoding what this hub encoded cannot fail; if it ever did, the viewer gets a
            // frame with no GPUs rather than one with user names.
            let mut frame: Frame = serde_json::from_str(self.frame_json())
                .unwrap_or_else(|_| Frame::empty("", self.seq, self.t_ms, 0));
            frame.hide_users(&hider(self.users()));
            let mut message = String::with_capacity(self.message.len());
            message.push_str(&self.message.as_str()[..self.prefix_len]);
            message.push_str(&serde_json::to_string(&frame).unwrap_or_else(|_| "{}".into()));
            message.push('}');
            Encoded::from(message)
        })
    }
}

impl Entry {
    /// The users the frame names.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.users.iter().map(String::as_str)
    }

    fn frame_part<'a>(&self, message: &'a str) -> &'a str {
        &message[self.prefix_len..message.len() - 1]
    }
}

pub(super) const DIAGNOSIS_MSG_PREFIX: &str = r#"{"type":"diagnosis","host":"#;

/// The latest diagnosis, encoded once as a `diagnosis` message.
#[derive(Debug)]
pub struct DiagnosisEntry {
    /// Seq of the newest frame the diagnosis saw.
    pub seq: u64,
    pub(super) message: Encoded,
    /// Byte range of the diagnosis object inside `message`.
    pub(super) body: std::ops::Range<usize>,
    /// The same diagnosis, typed (for `/metrics`).
    pub(super) diagnosis: Arc<Diagnosis>,
    /// Every user the frames it covers name, and its verdicts' (a name inside a job's name is
    /// hidden whoever's job it is).
    pub(super) hider: Hider,
    /// The message without user names ([`Diagnosis::without_users`]), made on first demand;
    /// only when there are users to hide.
    pub(super) without_users: OnceLock<(Encoded, std::ops::Range<usize>)>,
}

impl DiagnosisEntry {
    pub fn message(&self) -> Encoded {
        self.message.clone()
    }
    /// Just the diagnosis' JSON object.
    pub fn diagnosis_json(&self) -> &str {
        &self.message.as_str()[self.body.clone()]
    }

    /// [`DiagnosisEntry::message`], or with `show_users` false the diagnosis without user names.
    pub fn message_for(&self, show_users: bool) -> Encoded {
        match self.hidden(show_users) {
            Some((message, _)) => message.clone(),
            None => self.message.clone(),
        }
    }

    /// [`DiagnosisEntry::diagnosis_json`], or with `show_users` false without user names.
    pub fn diagnosis_json_for(&self, show_users: bool) -> &str {
        match self.hidden(show_users) {
            Some((message, body)) => &message.as_str()[body.clone()],
            None => self.diagnosis_json(),
        }
    }

    /// The encoding without user names, where it differs from the plain one.
    fn hidden(&self, show_users: bool) -> Option<&(Encoded, std::ops::Range<usize>)> {
        if show_users || self.hider.is_empty() || self.diagnosis.jobs.is_empty() {
            return None;
        }
        Some(self.without_users.get_or_init(|| {
            let plain = self.message.as_str();
            let hidden = serde_json::to_string(&self.diagnosis.without_users(&self.hider))
                // Encoding a diagnosis cannot fail; were it ever to, the viewer gets none.
                .unwrap_or_else(|_| "null".into());
            let mut message = String::with_capacity(plain.len());
            message.push_str(&plain[..self.body.start]);
            let start = message.len();
            message.push_str(&hidden);
            let end = message.len();
            message.push_str(&plain[self.body.end..]);
            (Encoded::from(message), start..end)
        }))
    }
    pub fn diagnosis(&self) -> &Arc<Diagnosis> {
        &self.diagnosis
    }
}
