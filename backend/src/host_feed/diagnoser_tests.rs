//! Tests of the diagnoser's cadence, window and signature.

use super::*;

fn frame(t_ms: u64) -> Frame {
    Frame::empty("h", t_ms / 1000, t_ms, 1000)
}

#[test]
fn window_is_bounded_by_time() {
    let mut d = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
    for s in 0..30 {
        d.observe(frame(s * 1000));
    }
    assert_eq!(d.window_len(), 11);
}

#[test]
fn a_clock_step_back_starts_the_window_over() {
    let mut d = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
    for s in 0..5 {
        d.observe(frame(100_000 + s * 1000));
    }
    d.observe(frame(50_000));
    assert_eq!(d.window_len(), 1);
    // Frames an hour apart in the past of the newest would not all fit: the count bounds it.
    let mut d = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
    for _ in 0..100 {
        d.observe(frame(100_000));
    }
    assert_eq!(d.window_len(), 12);
}

#[test]
fn the_signature_ignores_figures_and_sees_every_decision() {
    let base = shared::diagnosis::diagnose(&[frame(0), frame(1000)], &Thresholds::default(), None);
    let mut figures = base.clone();
    figures.window_s = figures.window_s.map(|w| w + 1.0);
    figures.t_ms = figures.t_ms.map(|t| t + 1000);
    for n in &mut figures.path {
        for e in &mut n.evidence {
            e.value = e.value.map(|v| v + 1.0);
        }
    }
    assert_eq!(
        signature(&figures),
        signature(&base),
        "figures alone are no change"
    );

    let mut verdict = base.clone();
    verdict.verdict = Verdict::InputBoundDisk;
    assert_ne!(signature(&verdict), signature(&base));
    let mut severity = base.clone();
    severity.severity = Severity::Critical;
    assert_ne!(signature(&severity), signature(&base));
    let mut answer = base.clone();
    if let Some(n) = answer.path.first_mut() {
        n.answer = match n.answer {
            Answer::Yes => Answer::No,
            _ => Answer::Yes,
        };
    }
    assert_ne!(signature(&answer), signature(&base));
}

#[test]
fn a_restart_forgets_the_old_window_and_diagnoses_the_new_one() {
    let mut d = Diagnoser::new(Thresholds::default(), Duration::from_secs(10));
    for s in 0..30 {
        d.observe(frame(1_000_000 + s * 1000));
    }
    let at = d
        .restart(&[frame(5000), frame(6000), frame(7000)])
        .map(|x| x.t_ms);
    assert_eq!(at, Some(Some(7000)), "the diagnosis is the last frame's");
    assert_eq!(d.window_len(), 3);
    assert!(d.observe(frame(8000)).is_none(), "it counts as sent");
    assert!(d.restart(&[]).is_none());
}

#[test]
fn sends_on_first_then_only_on_change_or_resend_period() {
    let mut d = Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW);
    assert!(d.observe(frame(0)).is_some(), "the first diagnosis is sent");
    assert!(d.observe(frame(1000)).is_none(), "an unchanged one is not");
    d.sent = d.sent.take().map(|(s, at)| (s, at - RESEND_EVERY));
    assert!(d.observe(frame(2000)).is_some(), "re-sent after the period");
}

/// `t_ms` of the newest frame of each diagnosis made while `frames` are observed.
fn diagnosed(d: &mut Diagnoser, frames: impl IntoIterator<Item = Frame>) -> Vec<u64> {
    let mut at = Vec::new();
    for f in frames {
        d.observe(f);
        if let Some(t) = d.prev.as_ref().and_then(|p| p.t_ms)
            && at.last() != Some(&t)
        {
            at.push(t);
        }
    }
    at
}

#[test]
fn the_window_is_diagnosed_every_four_seconds_of_frame_time() {
    let mut d =
        Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
    let at_1hz = diagnosed(&mut d, (0..13).map(|s| frame(s * 1000)));
    assert_eq!(at_1hz, [0, 4000, 8000, 12_000]);
    assert_eq!(d.window_len(), 13, "every frame joins the window");

    // A jittery 1 Hz still diagnoses every fourth frame, not every fifth.
    let mut d =
        Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
    let jitter = [0, 1010, 1990, 3005, 3990, 5010, 6000, 6990, 8005];
    assert_eq!(diagnosed(&mut d, jitter.map(frame)), [0, 3990, 8005]);

    // At 10 Hz, every fortieth frame.
    let mut d =
        Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
    let fast = (0..81).map(|i| Frame::empty("h", 0, i * 100, 100));
    assert_eq!(diagnosed(&mut d, fast), [0, 4000, 8000]);

    // Frames farther apart than that are each diagnosed, and so is the first one after the
    // clock stepped back.
    let mut d =
        Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
    let slow = [0, 5000, 10_000].map(|t| Frame::empty("h", 0, t, 5000));
    assert_eq!(diagnosed(&mut d, slow), [0, 5000, 10_000]);
    let mut d =
        Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
    assert_eq!(
        diagnosed(&mut d, [50_000, 51_000, 20_000].map(frame)),
        [50_000, 20_000]
    );

    // An unchanged diagnosis is still re-sent within RESEND_EVERY: at the diagnosed frame
    // before it runs out, not the one after.
    let mut d =
        Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
    assert!(d.observe(frame(0)).is_some());
    let back = RESEND_EVERY - DIAGNOSE_EVERY;
    d.sent = d.sent.take().map(|(s, at)| (s, at - back));
    for t in [1000, 2000, 3000] {
        assert!(d.observe(frame(t)).is_none(), "not diagnosed at {t}");
    }
    assert!(d.observe(frame(4000)).is_some(), "re-sent {back:?} after");

    // Without a period (a replay), every frame.
    let mut d = Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW);
    assert_eq!(
        diagnosed(&mut d, (0..3).map(|s| frame(s * 1000))),
        [0, 1000, 2000]
    );
}
#[test]
fn a_frame_whose_sources_answer_differently_is_diagnosed_at_once() {
    use shared::frame::{Gpu, GpuState, NvmlStatus, Source, SourceError};
    let gpu = |state| Gpu::unread(0, None, None, state);
    let with_gpu = |t_ms, state| Frame {
        gpus: vec![gpu(state)],
        ..frame(t_ms)
    };
    let mut d =
        Diagnoser::new(Thresholds::default(), DEFAULT_WINDOW).diagnosing_every(DIAGNOSE_EVERY);
    let frames = [
        with_gpu(0, GpuState::Ok),
        with_gpu(1000, GpuState::Ok),
        // The GPU fell off the bus: at once, then the period runs from here.
        with_gpu(2000, GpuState::Lost),
        with_gpu(3000, GpuState::Lost),
        with_gpu(5000, GpuState::Lost),
        with_gpu(6000, GpuState::Lost),
        // Gone from the frame altogether.
        frame(7000),
        frame(8000),
        // NVML itself failed.
        Frame {
            nvml: NvmlStatus::Error {
                message: "lost".into(),
            },
            ..frame(9000)
        },
        // A source reported an error.
        Frame {
            errors: vec![SourceError {
                source: Source::Mounts,
                item: Some("/data".into()),
                message: "did not answer".into(),
            }],
            ..frame(10_000)
        },
        frame(11_000),
        frame(12_000),
    ];
    assert_eq!(
        diagnosed(&mut d, frames),
        [0, 2000, 6000, 7000, 9000, 10_000, 11_000]
    );
}
