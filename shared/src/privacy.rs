//! User names kept from viewers who may not see them (docs/jobs.md#user-names-and-share-links): a
//! job's name can hold its owner's (`jupyter-ana-singleuser.service`), so hiding the `user` field
//! alone is not enough. Each word equal to a job's user becomes [`HIDDEN`] in that job's names,
//! and in every text of a diagnosis.

use crate::diagnosis::Diagnosis;
use crate::frame::Frame;
use std::borrow::Cow;

/// What stands where a user name was.
pub const HIDDEN: &str = "…";

/// Letters, digits and `_` make up a word: `ana` is hidden in `jupyter-ana-singleuser.service`
/// and `ana.smith`, not in `banana` or `input_bound_ana`.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` with each whole word `user` replaced by [`HIDDEN`]. A text that is only the user name
/// is kept: the wire's enum values are single words (`healthy`, `slurm`), and a job's user is
/// carried in its own field, never as a whole text.
pub fn hide_user<'a>(text: &'a str, user: &str) -> Cow<'a, str> {
    if user.is_empty() || text == user || !text.contains(user) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find(user) {
        let prev = rest[..at].chars().next_back().or(before);
        let after = rest[at + user.len()..].chars().next();
        let whole = !prev.is_some_and(word_char) && !after.is_some_and(word_char);
        if whole {
            out.push_str(&rest[..at]);
            out.push_str(HIDDEN);
        } else {
            // Step past the first character of the match only: `anana` holds `ana` twice.
            let step = at + user.chars().next().map_or(1, char::len_utf8);
            out.push_str(&rest[..step]);
            before = rest[..step].chars().next_back();
            rest = &rest[step..];
            continue;
        }
        before = user.chars().next_back();
        rest = &rest[at + user.len()..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// [`hide_user`] for each of `users`, in place.
fn hide_all(text: &mut String, users: &[String]) {
    for user in users {
        if let Cow::Owned(hidden) = hide_user(text, user) {
            *text = hidden;
        }
    }
}

/// The users named in `frame`: its jobs' and its GPU processes', sorted and once each.
fn frame_users(frame: &Frame) -> Vec<String> {
    let mut users: Vec<String> = frame
        .jobs
        .iter()
        .filter_map(|j| j.user.clone())
        .chain(
            frame
                .gpus
                .iter()
                .flat_map(|g| g.processes.iter().flatten())
                .filter_map(|p| p.user.clone()),
        )
        .collect();
    users.sort();
    users.dedup();
    users
}

impl Frame {
    /// Drops every user name: the processes' and jobs' `user` fields, and the user names inside
    /// the jobs' ids, steps and names.
    pub fn hide_users(&mut self) {
        let users = frame_users(self);
        for p in self
            .gpus
            .iter_mut()
            .flat_map(|g| g.processes.iter_mut().flatten())
        {
            p.user = None;
        }
        for job in &mut self.jobs {
            job.user = None;
            hide_all(&mut job.id, &users);
            for text in [&mut job.step, &mut job.name].into_iter().flatten() {
                hide_all(text, &users);
            }
        }
    }
}

impl Diagnosis {
    /// The users its jobs belong to, sorted and once each.
    pub fn users(&self) -> Vec<String> {
        let mut users: Vec<String> = self.jobs.iter().filter_map(|j| j.user.clone()).collect();
        users.sort();
        users.dedup();
        users
    }

    /// This diagnosis with every text holding a job's user name hidden ([`hide_user`]) and the
    /// jobs' `user` fields dropped. Every string is walked, so a text added later is covered too.
    pub fn without_users(&self) -> Diagnosis {
        let users = self.users();
        if users.is_empty() {
            return self.clone();
        }
        let hidden = serde_json::to_value(self).map(|mut v| {
            hide_in_value(&mut v, &users);
            v
        });
        let mut d = hidden
            .and_then(serde_json::from_value::<Diagnosis>)
            // What the walk leaves still decodes (enum values are kept whole); were it ever not
            // so, the viewer gets no job verdicts rather than user names.
            .unwrap_or_else(|_| Diagnosis {
                jobs: Vec::new(),
                ..self.clone()
            });
        for job in &mut d.jobs {
            job.user = None;
        }
        d
    }
}

fn hide_in_value(v: &mut serde_json::Value, users: &[String]) {
    match v {
        serde_json::Value::String(s) => hide_all(s, users),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| hide_in_value(i, users)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|i| hide_in_value(i, users)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_are_hidden_and_parts_of_words_are_not() {
        let h = |t: &str, u: &str| hide_user(t, u).into_owned();
        assert_eq!(
            h("unit jupyter-ana-singleuser.service", "ana"),
            "unit jupyter-…-singleuser.service"
        );
        assert_eq!(h("ana.smith@ana", "ana"), "….smith@…");
        assert_eq!(h("banana anal ana_x", "ana"), "banana anal ana_x");
        assert_eq!(h("anana ana", "ana"), "anana …");
        assert_eq!(h("ana", "ana"), "ana", "a whole text is an enum value");
        assert_eq!(h("input_bound_disk", "disk"), "input_bound_disk");
        assert_eq!(h("x", ""), "x");
        assert_eq!(h("jörg-jörg", "jörg"), "…-…");
        assert_eq!(h("éjörg jörgé", "jörg"), "éjörg jörgé");
    }

    #[test]
    fn a_frame_loses_its_users_and_the_user_parts_of_job_names() {
        let mut frame = Frame::empty("h", 1, 0, 1000);
        frame.jobs.push(crate::Job {
            kind: crate::JobKind::Unit,
            id: "jupyter-ana-singleuser.service".into(),
            step: None,
            name: Some("ana-train".into()),
            user: Some("ana".into()),
            gpus: Vec::new(),
            gpu_pids: vec![7],
            workers: None,
            rss_bytes: None,
            cpu_pct: None,
            io: None,
            io_absent: None,
            psi_io: None,
            psi_memory: None,
        });
        frame.hide_users();
        let text = serde_json::to_string(&frame).expect("encode");
        assert!(!text.contains("ana"), "{text}");
        assert_eq!(frame.jobs[0].id, "jupyter-…-singleuser.service");
        assert_eq!(frame.jobs[0].name.as_deref(), Some("…-train"));
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn words(text: &str) -> impl Iterator<Item = &str> {
        text.split(|c: char| !word_char(c))
    }

    proptest! {
        /// No whole word `user` is left (unless the text is only the name), nothing else
        /// changes, and a text without the name is the same text.
        #[test]
        fn no_whole_word_is_left(
            text in "[a-zé_. -]{0,40}",
            user in "[a-zé]{1,4}",
        ) {
            let out = hide_user(&text, &user);
            if text == user || !text.contains(user.as_str()) {
                prop_assert_eq!(out.as_ref(), text.as_str());
            } else {
                prop_assert!(words(&out).all(|w| w != user), "{out}");
                // Putting the name back where it was hidden gives the text again.
                let back = out.replace(HIDDEN, &user);
                prop_assert_eq!(back, text.clone());
            }
        }
    }
}
