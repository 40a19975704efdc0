//! The replay bar (under `vramio replay`): where the player is in the recording, at what speed,
//! and the verdict timeline under it, coloured by severity, from `GET /api/replay` (polled once a
//! second; absent on a live server, which answers 404). The admin plays, pauses, sets the speed,
//! drags the playhead to any moment, or clicks a stretch of the timeline to jump to where that
//! verdict began; the server then sends that moment's history and diagnosis (`reset`), which the
//! rest of the page shows as it shows live data.

use crate::api;
use crate::diag::text::local_tz;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::access::{Role, SessionInfo};
use shared::diagnosis::words::{clock_text, severity_text, verdict_text};
use shared::replay::{ReplayControl, ReplayInfo, Segment};
use std::time::Duration;

/// One segment of the timeline as drawn: left edge and width in percent of the span, its CSS
/// class and its tooltip.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    pub left_pct: f64,
    pub width_pct: f64,
    pub class: String,
    pub title: String,
}

/// Where each segment goes on a bar from `start_ms` to `end_ms`; a segment of one frame still
/// gets a visible sliver.
pub fn layout(start_ms: u64, end_ms: u64, segments: &[Segment]) -> Vec<Drawn> {
    let span = end_ms.saturating_sub(start_ms).max(1) as f64;
    let pct = |t: u64| (t.saturating_sub(start_ms) as f64 / span * 100.0).clamp(0.0, 100.0);
    segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // A segment reaches the next one's start, so the bar has no gaps between them.
            let to = segments.get(i + 1).map_or(s.to_ms, |n| n.from_ms);
            let left = pct(s.from_ms);
            Drawn {
                left_pct: left,
                width_pct: (pct(to) - left).max(0.3),
                class: format!("replay-seg sev-{}", s.severity.id()),
                title: format!(
                    "{} ({}) from {}",
                    verdict_text(s.verdict),
                    severity_text(s.severity),
                    clock_text(s.from_ms, shared::diagnosis::words::Tz::UTC)
                ),
            }
        })
        .collect()
}

/// How far the player is, in percent of the span.
pub fn progress_pct(info: &ReplayInfo) -> f64 {
    let span = info.end_ms.saturating_sub(info.start_ms).max(1) as f64;
    info.position_ms.map_or(0.0, |p| {
        (p.saturating_sub(info.start_ms) as f64 / span * 100.0).clamp(0.0, 100.0)
    })
}

/// The speeds the bar offers, as `POST /api/replay` takes them, and as `ReplayInfo.speed` says
/// them.
const SPEEDS: [(&str, &str, Option<f64>); 4] = [
    ("1x", "1", Some(1.0)),
    ("10x", "10", Some(10.0)),
    ("60x", "60", Some(60.0)),
    ("max", "max", None),
];

/// Jumps the admin asked for: one at a time to the server; while one is on its way, the newest
/// moment asked for waits, and older ones are dropped (a drag asks for many).
#[derive(Clone, Copy)]
struct Jumps {
    /// The moment being dragged to or jumped to, shown at once; `None` once the server is there.
    target: RwSignal<Option<u64>>,
    in_flight: StoredValue<bool>,
    queued: StoredValue<Option<u64>>,
    info: RwSignal<Option<ReplayInfo>>,
}

impl Jumps {
    fn to(self, t_ms: u64) {
        self.target.set(Some(t_ms));
        if self.in_flight.get_value() {
            self.queued.set_value(Some(t_ms));
            return;
        }
        self.in_flight.set_value(true);
        self.send(t_ms);
    }

    fn send(self, t_ms: u64) {
        spawn_local(async move {
            let control = ReplayControl {
                seek_ms: Some(t_ms),
                ..ReplayControl::default()
            };
            if let Ok(i) = api::steer_replay(&control).await {
                self.info.set(Some(i));
            }
            match self.queued.try_update_value(Option::take).flatten() {
                Some(next) => self.send(next),
                None => {
                    self.in_flight.set_value(false);
                    self.target.set(None);
                }
            }
        });
    }
}

#[component]
pub fn ReplayBar() -> impl IntoView {
    let admin = use_context::<SessionInfo>().is_some_and(|s| s.role == Role::Admin);
    let info = RwSignal::new(None::<ReplayInfo>);
    let steer = move |control: ReplayControl| {
        spawn_local(async move {
            if let Ok(i) = api::steer_replay(&control).await {
                info.set(Some(i));
            }
        });
    };
    let jumps = Jumps {
        target: RwSignal::new(None),
        in_flight: StoredValue::new(false),
        queued: StoredValue::new(None),
        info,
    };
    let live = RwSignal::new(false);
    let replaying = use_context::<crate::views::status::Replaying>();
    let poll = move || {
        spawn_local(async move {
            match api::replay().await {
                Ok(i) => {
                    if let Some(r) = replaying
                        && !r.0.get_untracked()
                    {
                        r.0.set(true);
                    }
                    info.set(Some(i));
                }
                Err(e) if e.status() == Some(404) => live.set(true),
                Err(_) => {}
            }
        });
    };
    poll();
    if let Ok(handle) = set_interval_with_handle(
        move || {
            if !live.get_untracked() {
                poll();
            }
        },
        Duration::from_secs(1),
    ) {
        on_cleanup(move || handle.clear());
    }
    // The bar is built once the replay is known; its parts follow `info` on their own, so a drag
    // on the scrubber is never interrupted by a rebuild.
    let span = Memo::new(move |_| info.with(|i| i.as_ref().map(|i| (i.start_ms, i.end_ms))));
    let shown_at = move || {
        jumps
            .target
            .get()
            .or_else(|| info.with(|i| i.as_ref()?.position_ms))
    };
    let playing = move || info.with(|i| i.as_ref().is_some_and(|i| i.playing));
    let speed = move || info.with(|i| i.as_ref().map(|i| i.speed));
    let timeline = Memo::new(move |_| info.with(|i| i.as_ref().and_then(|i| i.timeline.clone())));
    move || {
        let (start_ms, end_ms) = span.get()?;
        let tz = local_tz();
        let at = move || shown_at().map_or("starting".to_owned(), |t| clock_text(t, tz));
        let speed_text = move || {
            speed()
                .flatten()
                .map_or("full speed".to_owned(), |x| format!("{x}x"))
        };
        let frames = info.with_untracked(|i| i.as_ref().map_or(0, |i| i.frames));
        let controls = admin.then(|| {
            view! {
                <span class="replay-controls">
                    <button
                        id="replay-toggle"
                        data-playing=move || if playing() { "true" } else { "false" }
                        on:click=move |_| {
                            steer(ReplayControl {
                                playing: Some(!playing()),
                                ..ReplayControl::default()
                            })
                        }
                    >
                        {move || if playing() { "Pause" } else { "Play" }}
                    </button>
                    {SPEEDS
                        .into_iter()
                        .map(|(label, value, x)| {
                            view! {
                                <button
                                    class="replay-speed-btn"
                                    data-speed=value
                                    aria-pressed=move || if speed() == Some(x) { "true" } else { "false" }
                                    on:click=move |_| {
                                        steer(ReplayControl {
                                            speed: Some(value.to_owned()),
                                            ..ReplayControl::default()
                                        })
                                    }
                                >
                                    {label}
                                </button>
                            }
                        })
                        .collect_view()}
                </span>
            }
        });
        let pct = move || {
            let position_ms = shown_at();
            info.with(|i| {
                i.as_ref().map_or(0.0, |i| {
                    progress_pct(&ReplayInfo {
                        position_ms,
                        timeline: None,
                        ..i.clone()
                    })
                })
            })
        };
        // The admin drags the playhead (any moment); a viewer watches it.
        let track = if admin {
            view! {
                <input
                    type="range"
                    class="replay-scrub"
                    id="replay-scrub"
                    aria-label="moment of the recording"
                    min=start_ms.to_string()
                    max=end_ms.to_string()
                    step="any"
                    prop:value=move || shown_at().unwrap_or(start_ms).to_string()
                    on:input=move |ev| {
                        if let Ok(t) = event_target_value(&ev).parse::<f64>() {
                            jumps.to(t.max(0.0) as u64);
                        }
                    }
                />
            }
            .into_any()
        } else {
            view! {
                <div class="replay-track">
                    <div class="replay-fill" style=move || format!("width:{:.2}%", pct())></div>
                </div>
            }
            .into_any()
        };
        let segments = move || {
            let all = timeline.get().unwrap_or_default();
            layout(start_ms, end_ms, &all)
                .into_iter()
                .zip(all)
                .map(|(d, seg)| {
                    let title = if admin {
                        format!("{} — click to jump there", d.title)
                    } else {
                        d.title
                    };
                    view! {
                        <span
                            class=d.class
                            data-from=seg.from_ms.to_string()
                            style=format!("left:{:.3}%;width:{:.3}%", d.left_pct, d.width_pct)
                            title=title
                            on:click=move |_| {
                                if admin {
                                    jumps.to(seg.from_ms);
                                }
                            }
                        ></span>
                    }
                })
                .collect_view()
        };
        Some(view! {
            <section class="replay-bar" id="replay-bar" class:can-jump=admin>
                <div class="replay-head">
                    <strong>"Replay"</strong>
                    <span class="replay-pos" id="replay-pos">{at}</span>
                    <span class="replay-speed" id="replay-speed">{speed_text}</span>
                    {controls}
                    <span class="replay-span">
                        {clock_text(start_ms, tz)} " – " {clock_text(end_ms, tz)}
                        {format!(", {frames} frames")}
                    </span>
                </div>
                {track}
                <div class="replay-timeline" id="replay-timeline" title="the verdict over the recording">
                    {segments}
                    <span class="replay-head-mark" style=move || format!("left:{:.3}%", pct())></span>
                </div>
                {move || timeline.with(Option::is_none).then(|| view! { <p class="replay-note">"Working out the verdict timeline…"</p> })}
            </section>
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::{Severity, Verdict};

    fn seg(from_ms: u64, to_ms: u64, verdict: Verdict, severity: Severity) -> Segment {
        Segment {
            from_ms,
            to_ms,
            verdict,
            severity,
        }
    }

    #[test]
    fn segments_fill_the_bar_in_time_and_colour_by_severity() {
        let t = [
            seg(0, 49_000, Verdict::Healthy, Severity::Ok),
            seg(
                50_000,
                100_000,
                Verdict::GpuMemoryPressure,
                Severity::Critical,
            ),
        ];
        let d = layout(0, 100_000, &t);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].left_pct, d[0].width_pct), (0.0, 50.0));
        assert_eq!((d[1].left_pct, d[1].width_pct), (50.0, 50.0));
        assert_eq!(d[1].class, "replay-seg sev-critical");
        assert!(d[1].title.contains("00:00"), "{}", d[1].title);
        // A one-frame segment is still visible.
        let one = layout(
            0,
            100_000,
            &[seg(100_000, 100_000, Verdict::NoData, Severity::Unknown)],
        );
        assert!(one[0].width_pct > 0.0 && one[0].left_pct == 100.0);
        assert!(layout(5, 5, &[]).is_empty());
    }

    #[test]
    fn progress_follows_the_position() {
        let mut i = ReplayInfo {
            start_ms: 1000,
            end_ms: 3000,
            position_ms: None,
            speed: Some(10.0),
            frames: 3,
            timeline: None,
            playing: true,
        };
        assert_eq!(progress_pct(&i), 0.0);
        i.position_ms = Some(2000);
        assert_eq!(progress_pct(&i), 50.0);
        i.position_ms = Some(9000);
        assert_eq!(progress_pct(&i), 100.0);
    }
}
