//! Hiding user names: whole words only, a stand-in per user, frames and job verdicts alike.

use super::*;
use proptest::prelude::*;

fn hidden(text: &str, users: &[&str]) -> (String, Hider) {
    let h = Hider::new(users.iter().map(|u| (*u).to_owned()), 7);
    let mut t = text.to_owned();
    h.hide(&mut t);
    (t, h)
}

fn of(h: &Hider, user: &str) -> String {
    let mut t = user.to_owned();
    h.hide(&mut t);
    t
}

#[test]
fn whole_words_are_hidden_and_parts_of_words_are_not() {
    let (t, h) = hidden("unit jupyter-ana-singleuser.service", &["ana"]);
    let ana = of(&h, "ana");
    assert!(
        ana.starts_with(HIDDEN) && ana.len() == HIDDEN.len() + 6,
        "{ana}"
    );
    assert_eq!(t, format!("unit jupyter-{ana}-singleuser.service"));
    assert_eq!(hidden("banana anal ana_x", &["ana"]).0, "banana anal ana_x");
    assert_eq!(hidden("anana ana", &["ana"]).0, format!("anana {ana}"));
    assert_eq!(hidden("ana", &["ana"]).0, ana, "a whole text is hidden too");
    assert_eq!(hidden("x", &[""]).0, "x", "an empty name hides nothing");
    let (t, h) = hidden("jörg-jörg éjörg", &["jörg"]);
    let jorg = of(&h, "jörg");
    assert_eq!(t, format!("{jorg}-{jorg} éjörg"));
}

#[test]
fn a_name_as_launchers_escape_it_is_hidden_too() {
    let (t, h) = hidden(
        "jupyter-ana-2esmith jupyter-ana-2dsmith user-runtime-dir@ana\\x2dsmith.service jupyter--41l",
        &["ana.smith", "ana-smith", "Al"],
    );
    let (dot, dash, al) = (of(&h, "ana.smith"), of(&h, "ana-smith"), of(&h, "Al"));
    assert_eq!(
        t,
        format!("jupyter-{dot} jupyter-{dash} user-runtime-dir@{dash}.service jupyter-{al}"),
        "JupyterHub's escapism and systemd's escaping"
    );
    // A name right after an escape (another's `-` or `.` escaped) is a name too.
    let (t, h) = hidden(
        "user-runtime-dir@team\\x2dana.service jupyter-team-2dana jupyter-x-2ea.b x\\x2ea.b",
        &["ana", "a.b"],
    );
    let (ana, ab) = (of(&h, "ana"), of(&h, "a.b"));
    // Hex after a `-` that escapes no punctuation is part of the word: deana is not ana.
    assert_eq!(
        hidden("jupyter-deana run-12a.b", &["ana", "a.b"]).0,
        "jupyter-deana run-12a.b"
    );
    assert_eq!(
        t,
        format!(
            "user-runtime-dir@team\\x2d{ana}.service jupyter-team-2d{ana} jupyter-x-2e{ab} x\\x2e{ab}"
        ),
    );
    assert_eq!(escapism("ana.smith", false), "ana-2esmith");
    assert_eq!(escapism("ana.smith", true), "ana-2Esmith");
    assert_eq!(
        hidden("jupyter-ana-2Esmith", &["ana.smith"]).0,
        format!("jupyter-{dot}")
    );
    assert_eq!(systemd_escape("ana-smith"), "ana\\x2dsmith");
    assert_eq!(systemd_escape(".x"), "\\x2ex", "a leading dot is escaped");
}

#[test]
fn each_user_has_a_stand_in_of_its_own_and_longer_names_go_first() {
    let (t, h) = hidden(
        "jupyter-ana-singleuser jupyter-bob-singleuser ana.smith",
        &["ana", "bob", "ana.smith"],
    );
    let (ana, bob, smith) = (of(&h, "ana"), of(&h, "bob"), of(&h, "ana.smith"));
    assert_ne!(ana, bob, "two users' jobs stay two");
    assert_eq!(
        t,
        format!("jupyter-{ana}-singleuser jupyter-{bob}-singleuser {smith}")
    );
    assert!(!t.contains("smith"), "{t}");
    // The same user, the same stand-in, whatever else is hidden; another key, another one.
    assert_eq!(of(&Hider::new(["ana".to_owned()], 7), "ana"), ana);
    assert_ne!(of(&Hider::new(["ana".to_owned()], 8), "ana"), ana);
}

#[test]
fn a_frame_loses_its_users_and_the_user_parts_of_job_and_process_names() {
    let mut frame = Frame::empty("h", 1, 0, 1000);
    let mut gpu = crate::Gpu::unread(0, None, None, crate::GpuState::Ok);
    gpu.processes = Some(vec![crate::GpuProcess {
        pid: 7,
        presence: crate::Presence::Visible,
        name: Some("ana-train".into()),
        user: Some("ana".into()),
        used_bytes: None,
        mig: None,
    }]);
    frame.gpus.push(gpu);
    // A job of two owners has no user of its own: its processes' users are hidden all the same.
    frame.jobs.push(crate::Job {
        name: Some("ana-train".into()),
        ..crate::Job::new(
            crate::JobKind::Unit,
            "jupyter-ana-singleuser.service",
            vec![7],
        )
    });
    let h = Hider::new(frame.users().map(str::to_owned).collect::<Vec<_>>(), 1);
    frame.hide_users(&h);
    let text = serde_json::to_string(&frame).expect("encode");
    assert!(!text.contains("ana"), "{text}");
    let ana = of(&h, "ana");
    assert_eq!(
        frame.jobs[0].id,
        format!("jupyter-{ana}-singleuser.service")
    );
    assert_eq!(frame.jobs[0].name, Some(format!("{ana}-train")));
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !word_char(c))
}

proptest! {
    /// No whole word that is a user name is left, and nothing else changes: putting the names
    /// back where their stand-ins are gives the text again.
    #[test]
    fn no_whole_word_is_left(
        text in "[a-zé_. -]{0,40}",
        users in proptest::collection::vec("[a-zé]{1,4}(\\.[a-z]{1,2})?", 1..4),
    ) {
        let h = Hider::new(users.clone(), 3);
        let mut out = text.clone();
        h.hide(&mut out);
        for u in &users {
            prop_assert!(words(&out).all(|w| w != u), "{u} in {out}");
        }
        let mut back = out.clone();
        let mut sorted = users.clone();
        sorted.sort();
        sorted.dedup();
        for u in &sorted {
            back = back.replace(&of(&h, u), u);
        }
        prop_assert_eq!(back, text);
    }
}

mod props {
    use super::*;

    proptest! {
        /// Hostile text (any mix of escapes, punctuation and non-ASCII) never panics the hider,
        /// and a name after a separator or an escape of punctuation never survives it.
        #[test]
        fn hiding_never_panics_and_leaves_no_name_after_a_boundary(
            text in "[a-z2dxE\\\\_.@é -]{0,40}",
            user in "[a-z]{2,6}",
            sep in proptest::sample::select(vec![" ", "\\x2d", "-2d", "-2E", "@", "/"]),
        ) {
            let (t, _) = hidden(&format!("{text}{sep}{user} tail"), &[user.as_str()]);
            prop_assert!(!t.ends_with(&format!("{sep}{user} tail")), "{user} left in {t:?}");
            let _ = hidden(&text, &[user.as_str(), "é-x", "a.b", "2d"]);
        }
    }
}
