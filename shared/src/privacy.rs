//! User names kept from viewers who may not see them (docs/jobs.md#user-names-and-share-links): a
//! job's name can hold its owner's (`jupyter-ana-singleuser.service`), so dropping the `user`
//! fields alone is not enough. A [`Hider`] replaces each whole word equal to a user name with a
//! stand-in of its own (`…3fa9c1`), the same wherever that user appears, so two users' jobs stay
//! two jobs and a frame's jobs still find their verdicts.

use crate::diagnosis::Diagnosis;
use crate::frame::Frame;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};

/// What every stand-in starts with.
pub const HIDDEN: &str = "…";

/// Letters, digits and `_` make up a word: `ana` is hidden in `jupyter-ana-singleuser.service`
/// and `ana.smith`, not in `banana` or `ana_x`.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// User names and their stand-ins.
#[derive(Clone, Debug, Default)]
pub struct Hider {
    /// Names that are one word, looked up word by word.
    words: HashMap<String, String>,
    /// Names with other characters (`ana.smith`), searched for, longest first.
    others: Vec<(String, String)>,
}

impl Hider {
    /// Hides `users`; each stand-in is `…` and six hex digits of a hash keyed by `key` (a
    /// server's own secret, so a stand-in cannot be looked up from a list of names).
    pub fn new(users: impl IntoIterator<Item = String>, key: u64) -> Hider {
        let mut h = Hider::default();
        for user in users {
            if user.is_empty() {
                continue;
            }
            let stand_in = stand_in(&user, key);
            // The name as written, and as the launchers that put it in unit names escape it.
            let mut forms = vec![
                systemd_escape(&user),
                escapism(&user, false),
                escapism(&user, true),
                user,
            ];
            forms.sort();
            forms.dedup();
            for form in forms {
                if form.chars().all(word_char) {
                    h.words.insert(form, stand_in.clone());
                } else if !h.others.iter().any(|(u, _)| *u == form) {
                    h.others.push((form, stand_in.clone()));
                }
            }
        }
        h.others.sort_by_key(|o| std::cmp::Reverse(o.0.len()));
        h
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty() && self.others.is_empty()
    }

    /// `text` with each whole word that is a user name replaced by that user's stand-in.
    pub fn hide(&self, text: &mut String) {
        for (user, stand_in) in &self.others {
            if text.contains(user.as_str()) {
                *text = replace_whole(text, user, stand_in);
            }
        }
        if self.words.is_empty() {
            return;
        }
        let mut out = String::new();
        let mut done = 0;
        let mut start = None;
        for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
            match (word_char(c), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    // The word, or its tail past an escape that leads it (`\x2dana`,
                    // `-2eana`): a name escaped after another's character is a name too.
                    let s = [s, s + escape_len(&text[..s], &text[s..i])]
                        .into_iter()
                        .find(|&from| self.words.contains_key(&text[from..i]));
                    if let Some(s) = s {
                        out.push_str(&text[done..s]);
                        out.push_str(&self.words[&text[s..i]]);
                        done = i;
                    }
                    start = None;
                }
                _ => {}
            }
        }
        if done > 0 {
            out.push_str(&text[done..]);
            *text = out;
        }
    }
}

/// Whether the two hex digits leading `w` escape an ASCII punctuation or space byte, as the
/// launchers write one (not a letter or digit: `-de` in `jupyter-deana` is no escape).
fn escaped_punct(w: &str) -> bool {
    let b = w.as_bytes();
    if b.len() < 2 {
        return false;
    }
    let digit = |c: u8| char::from(c).to_digit(16);
    let (Some(hi), Some(lo)) = (digit(b[0]), digit(b[1])) else {
        return false;
    };
    let byte = hi * 16 + lo;
    matches!(byte, 0x20..=0x2f | 0x3a..=0x40 | 0x5b..=0x60 | 0x7b..=0x7e)
}

/// The length of the escape that leads `word` where `before` ends in its introducer: `x` and
/// two hex digits after a `\\` (systemd), two hex digits after a `-` (escapism), each of an
/// ASCII punctuation byte; 0 otherwise.
fn escape_len(before: &str, word: &str) -> usize {
    let hex2 = escaped_punct;
    if before.ends_with('\\') && word.starts_with('x') && hex2(&word[1..]) {
        3
    } else if before.ends_with('-') && hex2(word) {
        2
    } else {
        0
    }
}

/// Whether the text before a match (`done` then `pending`) ends in a whole escape (`\\x2d`,
/// `-2e`), which ends the word before it as a non-word character would.
fn ends_in_escape(done: &str, pending: &str) -> bool {
    let tail: String = done
        .chars()
        .chain(pending.chars())
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let b = tail.as_bytes();
    let n = b.len();
    (n == 4 && b[0] == b'\\' && b[1] == b'x' && escaped_punct(&tail[2..]))
        || (n >= 3
            && b[n - 3] == b'-'
            && tail.is_char_boundary(n - 2)
            && escaped_punct(&tail[n - 2..]))
}

/// `name` as systemd escapes it in a unit name (`systemd-escape`): each byte other than an ASCII
/// letter, digit, `:`, `_` or a `.` that does not lead becomes `\xNN`, so `ana-smith`'s
/// template unit instance (`notebook@ana\x2dsmith.service`) reads `ana\x2dsmith`.
fn systemd_escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, b) in name.bytes().enumerate() {
        if b.is_ascii_alphanumeric() || b == b':' || b == b'_' || (b == b'.' && i > 0) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// `name` as JupyterHub's spawners escape it (the `escapism` package, safe characters ASCII
/// lowercase letters and digits, `-` the escape, hex digits in `upper` case as the package
/// writes them, or lowered as KubeSpawner leaves them): `ana.smith` is `jupyter-ana-2esmith`.
fn escapism(name: &str, upper: bool) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_lowercase() || b.is_ascii_digit() {
            out.push(char::from(b));
        } else if upper {
            out.push_str(&format!("-{b:02X}"));
        } else {
            out.push_str(&format!("-{b:02x}"));
        }
    }
    out
}

/// `…` and six hex digits of `user` hashed with `key`.
fn stand_in(user: &str, key: u64) -> String {
    let mut h = DefaultHasher::new();
    h.write_u64(key);
    h.write(user.as_bytes());
    format!("{HIDDEN}{:06x}", h.finish() & 0xff_ffff)
}

/// `text` with each occurrence of `user` that is not part of a longer word replaced.
fn replace_whole(text: &str, user: &str, stand_in: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find(user) {
        let prev = if ends_in_escape(&out, &rest[..at]) {
            None
        } else {
            rest[..at].chars().next_back().or(before)
        };
        let after = rest[at + user.len()..].chars().next();
        if !prev.is_some_and(word_char) && !after.is_some_and(word_char) {
            out.push_str(&rest[..at]);
            out.push_str(stand_in);
            before = user.chars().next_back();
            rest = &rest[at + user.len()..];
        } else {
            // Step past the match's first character only: `anana` holds `ana` twice.
            let step = at + user.chars().next().map_or(1, char::len_utf8);
            out.push_str(&rest[..step]);
            before = rest[..step].chars().next_back();
            rest = &rest[step..];
        }
    }
    out.push_str(rest);
    out
}

impl Frame {
    /// The users named in this frame: its jobs' and its GPU processes'.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.jobs.iter().filter_map(|j| j.user.as_deref()).chain(
            self.gpus
                .iter()
                .flat_map(|g| g.processes.iter().flatten())
                .filter_map(|p| p.user.as_deref()),
        )
    }

    /// Drops every `user` field and hides the user names in the jobs' ids, steps and names and
    /// in the GPU processes' names.
    pub fn hide_users(&mut self, hider: &Hider) {
        for p in self
            .gpus
            .iter_mut()
            .flat_map(|g| g.processes.iter_mut().flatten())
        {
            p.user = None;
            if let Some(name) = &mut p.name {
                hider.hide(name);
            }
        }
        for job in &mut self.jobs {
            job.user = None;
            hider.hide(&mut job.id);
            for text in [&mut job.step, &mut job.name].into_iter().flatten() {
                hider.hide(text);
            }
        }
    }
}

/// Keys whose values are the wire's enum values, never names: left as they are.
const ENUM_KEYS: &[&str] = &[
    "kind",
    "verdict",
    "severity",
    "node",
    "answer",
    "rule",
    "metric",
    "unit",
    "comparison",
    "cause",
    // A suggestion's id (a job's id is hidden field by field, not through the walk).
    "id",
];

impl Diagnosis {
    /// The users its job verdicts carry.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.jobs.iter().filter_map(|j| j.user.as_deref())
    }

    /// This diagnosis with the job verdicts' user names hidden: each job's and its contention's
    /// id, step and label field by field, and every text of its findings and path; the `user`
    /// fields dropped. The host's own part never names a job and is kept as it is.
    pub fn without_users(&self, hider: &Hider) -> Diagnosis {
        let mut d = self.clone();
        for job in &mut d.jobs {
            job.user = None;
            hider.hide(&mut job.id);
            hider.hide(&mut job.label);
            if let Some(step) = &mut job.step {
                hider.hide(step);
            }
            if let Some(c) = &mut job.contention {
                hider.hide(&mut c.id);
                hider.hide(&mut c.label);
                if let Some(step) = &mut c.step {
                    hider.hide(step);
                }
            }
            // Findings and path through their JSON, so a text added later is covered too.
            let walked = serde_json::to_value((&job.path, &job.findings)).map(|mut v| {
                hide_in_value(&mut v, hider);
                v
            });
            match walked.and_then(serde_json::from_value) {
                Ok((path, findings)) => {
                    job.path = path;
                    job.findings = findings;
                }
                // The walk leaves enum values alone, so this does not happen; were it ever to,
                // the viewer gets the verdict without its words rather than a name.
                Err(_) => {
                    job.path.clear();
                    job.findings.clear();
                }
            }
        }
        d
    }
}

fn hide_in_value(v: &mut serde_json::Value, hider: &Hider) {
    match v {
        serde_json::Value::String(s) => hider.hide(s),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| hide_in_value(i, hider)),
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if !ENUM_KEYS.contains(&k.as_str()) {
                    hide_in_value(v, hider);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[path = "privacy_tests.rs"]
mod tests;
