//! `Chart`: a generic live time-series chart drawn as SVG, one `<path>` per series.
//!
//! Fed by any `Signal<Vec<Series>>` (the views pass GPU and disk series built in `series.rs`); it
//! knows nothing about what it draws. Each data update builds every path string once (see
//! [`geometry::layout`]); hovering shows the values at the cursor in a small HTML overlay, as are the
//! axis labels, so the stretched SVG never distorts text.

pub mod geometry;

pub use geometry::Series;

use geometry::{VIEW_H, VIEW_W};
use leptos::prelude::*;

/// A live chart of `series` over the last `window_ms`.
#[component]
pub fn Chart(
    /// Heading above the plot.
    #[prop(into)]
    title: String,
    /// The lines to draw; the chart redraws when this changes.
    #[prop(into)]
    series: Signal<Vec<Series>>,
    /// Formats a y value for the axis, legend and tooltip.
    y_format: fn(f64) -> String,
    /// Fixed top of the y axis (100 for percentages); auto-scaled when absent.
    #[prop(default = None)]
    y_max: Option<f64>,
    /// Width of the time axis.
    window_ms: u64,
    /// Points further apart than this are not joined (missed frames show as gaps).
    #[prop(into)]
    max_gap_ms: Signal<u64>,
    /// A stored range to draw instead of the last `window_ms` (`(from_ms, to_ms)`), while it is
    /// `Some`.
    #[prop(optional, into)]
    span: Option<Signal<Option<(u64, u64)>>>,
    /// Dragging across the plot asks for that stretch (zoom).
    #[prop(default = None)]
    on_zoom: Option<Callback<(u64, u64)>>,
    /// A click on the plot asks for that moment (rewind).
    #[prop(default = None)]
    on_pick: Option<Callback<u64>>,
) -> impl IntoView {
    let span = move || span.and_then(|s| s.get());
    let layout = Memo::new(move |_| {
        let gap = max_gap_ms.get();
        match span() {
            Some(range) => series.with(|s| geometry::layout_span(s, range, y_max, gap)),
            None => series.with(|s| geometry::layout(s, window_ms, y_max, gap)),
        }
    });
    let title_for_file = title.clone();
    let legend = Memo::new(move |_| {
        series.with(|s| {
            let latest = geometry::latest_values(s);
            s.iter()
                .zip(latest)
                .map(|(s, v)| (s.label.clone(), s.color.clone(), v))
                .collect::<Vec<_>>()
        })
    });
    // Cursor position as a share of the plot width, while the pointer is over it.
    let hover = RwSignal::new(None::<f64>);
    let plot = NodeRef::<leptos::html::Div>::new();
    // Where a drag began, as a share of the plot width.
    let drag = RwSignal::new(None::<f64>);
    let frac_of = move |ev: &leptos::ev::MouseEvent| -> Option<f64> {
        let el = plot.get()?;
        let rect = el.get_bounding_client_rect();
        (rect.width() > 0.0)
            .then(|| ((f64::from(ev.client_x()) - rect.left()) / rect.width()).clamp(0.0, 1.0))
    };
    let on_move = move |ev: leptos::ev::MouseEvent| {
        if let Some(frac) = frac_of(&ev) {
            hover.set(Some(frac));
        }
    };
    let t_at = move |frac: f64| {
        layout.with(|l| l.t_start + (frac * l.t_end.saturating_sub(l.t_start) as f64) as u64)
    };
    let interactive = on_zoom.is_some() || on_pick.is_some();
    let on_down = move |ev: leptos::ev::MouseEvent| {
        if interactive && ev.button() == 0 {
            drag.set(frac_of(&ev));
        }
    };
    let on_up = move |ev: leptos::ev::MouseEvent| {
        let Some(start) = drag.get_untracked() else {
            return;
        };
        drag.set(None);
        let Some(end) = frac_of(&ev) else { return };
        if (end - start).abs() > 0.01 {
            if let Some(z) = on_zoom {
                let (a, b) = (start.min(end), start.max(end));
                z.run((t_at(a), t_at(b)));
            }
        } else if let Some(p) = on_pick {
            p.run(t_at(end));
        }
    };
    let selection = move || {
        let (a, b) = (drag.get()?, hover.get()?);
        let (lo, hi) = (a.min(b), a.max(b));
        Some(format!("{:.1}", lo * VIEW_W)).map(|x| (x, format!("{:.1}", (hi - lo) * VIEW_W)))
    };
    let tooltip = move || {
        let frac = hover.get()?;
        let (t_start, t_end) = layout.with(|l| (l.t_start, l.t_end));
        let (back, readings) = series.with(|s| {
            let back = ((1.0 - frac) * t_end.saturating_sub(t_start) as f64) as u64;
            let t = t_end.saturating_sub(back);
            (back, geometry::readings(s, t, max_gap_ms.get()))
        });
        let when = if span().is_some() {
            shared::diagnosis::words::clock_text(
                t_end.saturating_sub(back),
                crate::diag::text::local_tz(),
            )
        } else {
            geometry::ago(back)
        };
        let rows = legend.with(|l| {
            l.iter()
                .zip(readings)
                .map(|((label, color, _), v)| {
                    let value = v.map_or_else(|| crate::format::DASH.to_owned(), y_format);
                    view! {
                        <div class="tip-row">
                            <span class="swatch" style:background=color.clone()></span>
                            <span class="tip-label">{label.clone()}</span>
                            <span class="tip-value">{value}</span>
                        </div>
                    }
                })
                .collect_view()
        });
        let side = if frac > 0.6 { "tip tip-left" } else { "tip" };
        Some(view! {
            <div class=side style:left=format!("{:.2}%", frac * 100.0)>
                <div class="tip-time">{when}</div>
                {rows}
            </div>
        })
    };
    let cursor_x = move || hover.get().map(|f| format!("{:.1}", f * VIEW_W));
    let view_box = format!("0 0 {VIEW_W} {VIEW_H}");
    view! {
        <figure class="chart" data-testid="chart">
            <figcaption class="chart-title">
                {title}
                <span class="chart-save">
                    <button
                        type="button"
                        class="link-button"
                        title="Save this chart as SVG"
                        on:click={
                            let name = title_for_file.clone();
                            move |_| save_chart(&name, layout, legend, y_format, span(), window_ms, false)
                        }
                    >
                        "SVG"
                    </button>
                    <button
                        type="button"
                        class="link-button"
                        title="Save this chart as PNG"
                        on:click={
                            let name = title_for_file.clone();
                            move |_| save_chart(&name, layout, legend, y_format, span(), window_ms, true)
                        }
                    >
                        "PNG"
                    </button>
                </span>
            </figcaption>
            <div
                class="plot"
                node_ref=plot
                class:pickable=interactive
                on:mousemove=on_move
                on:mousedown=on_down
                on:mouseup=on_up
                on:mouseleave=move |_| {
                    hover.set(None);
                    drag.set(None);
                }
            >
                <svg viewBox=view_box preserveAspectRatio="none" aria-hidden="true">
                    {move || {
                        layout
                            .with(|l| {
                                l.y_ticks
                                    .iter()
                                    .map(|v| {
                                        let y = format!("{:.1}", VIEW_H - v / l.y_top * VIEW_H);
                                        view! {
                                            <line
                                                class="grid"
                                                x1="0"
                                                x2=VIEW_W.to_string()
                                                y1=y.clone()
                                                y2=y
                                                vector-effect="non-scaling-stroke"
                                            />
                                        }
                                    })
                                    .collect_view()
                            })
                    }}
                    {move || {
                        layout
                            .with(|l| {
                                l.bands
                                    .iter()
                                    .map(|(color, d)| {
                                        view! {
                                            <path class="band" d=d.clone() fill=color.clone() />
                                        }
                                    })
                                    .collect_view()
                            })
                    }}
                    {move || {
                        selection()
                            .map(|(x, w)| {
                                view! {
                                    <rect
                                        class="zoom-sel"
                                        x=x
                                        y="0"
                                        width=w
                                        height=VIEW_H.to_string()
                                    />
                                }
                            })
                    }}
                    {move || {
                        layout
                            .with(|l| {
                                l.paths
                                    .iter()
                                    .map(|(color, d)| {
                                        view! {
                                            <path
                                                class="line"
                                                d=d.clone()
                                                stroke=color.clone()
                                                vector-effect="non-scaling-stroke"
                                            />
                                        }
                                    })
                                    .collect_view()
                            })
                    }}
                    {move || {
                        cursor_x()
                            .map(|x| {
                                view! {
                                    <line
                                        class="cursor"
                                        x1=x.clone()
                                        x2=x
                                        y1="0"
                                        y2=VIEW_H.to_string()
                                        vector-effect="non-scaling-stroke"
                                    />
                                }
                            })
                    }}
                </svg>
                <div class="y-labels">
                    {move || {
                        layout
                            .with(|l| {
                                l.y_ticks
                                    .iter()
                                    .map(|v| {
                                        let bottom = format!("{:.1}%", v / l.y_top * 100.0);
                                        view! {
                                            <span class="y-label" style:bottom=bottom>
                                                {y_format(*v)}
                                            </span>
                                        }
                                    })
                                    .collect_view()
                            })
                    }}
                </div>
                {tooltip}
            </div>
            <div class="x-labels">
                {move || {
                    let labels = match span() {
                        Some((a, b)) => geometry::span_labels(a, b, crate::diag::text::local_tz()),
                        None => geometry::x_labels(window_ms),
                    };
                    labels.into_iter().map(|l| view! { <span>{l}</span> }).collect_view()
                }}
            </div>
            <ul class="legend">
                {move || {
                    legend
                        .get()
                        .into_iter()
                        .map(|(label, color, v)| {
                            let value = v.map_or_else(|| crate::format::DASH.to_owned(), y_format);
                            view! {
                                <li>
                                    <span class="swatch" style:background=color></span>
                                    {label}
                                    " "
                                    <span class="legend-value">{value}</span>
                                </li>
                            }
                        })
                        .collect_view()
                }}
            </ul>
        </figure>
    }
}

/// Saves the chart as a standalone SVG, or as a PNG drawn from it.
fn save_chart(
    title: &str,
    layout: Memo<geometry::Layout>,
    legend: Memo<Vec<(String, String, Option<f64>)>>,
    y_format: fn(f64) -> String,
    span: Option<(u64, u64)>,
    window_ms: u64,
    png: bool,
) {
    let x_labels = match span {
        Some((a, b)) => geometry::span_labels(a, b, crate::diag::text::local_tz()),
        None => geometry::x_labels(window_ms),
    };
    let legend: Vec<(String, String)> = legend.with_untracked(|l| {
        l.iter()
            .map(|(label, color, _)| (label.clone(), color.clone()))
            .collect()
    });
    let svg =
        layout.with_untracked(|l| geometry::standalone_svg(title, l, &legend, y_format, &x_labels));
    let file = crate::download::file_name(title);
    if png {
        crate::download::png(&svg, &format!("{file}.png"));
    } else {
        crate::download::svg(&svg, &format!("{file}.svg"));
    }
}
