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
    #[prop(optional)]
    y_max: Option<f64>,
    /// Width of the time axis.
    window_ms: u64,
    /// Points further apart than this are not joined (missed frames show as gaps).
    #[prop(into)]
    max_gap_ms: Signal<u64>,
) -> impl IntoView {
    let layout = Memo::new(move |_| {
        series.with(|s| geometry::layout(s, window_ms, y_max, max_gap_ms.get()))
    });
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
    let on_move = move |ev: leptos::ev::MouseEvent| {
        if let Some(el) = plot.get() {
            let rect = el.get_bounding_client_rect();
            if rect.width() > 0.0 {
                let frac = (f64::from(ev.client_x()) - rect.left()) / rect.width();
                hover.set(Some(frac.clamp(0.0, 1.0)));
            }
        }
    };
    let tooltip = move || {
        let frac = hover.get()?;
        let (back, readings) = series.with(|s| {
            let t_end = layout.with(|l| l.t_end);
            let back = ((1.0 - frac) * window_ms as f64) as u64;
            let t = t_end.saturating_sub(back);
            (back, geometry::readings(s, t, max_gap_ms.get()))
        });
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
                <div class="tip-time">{geometry::ago(back)}</div>
                {rows}
            </div>
        })
    };
    let cursor_x = move || hover.get().map(|f| format!("{:.1}", f * VIEW_W));
    let view_box = format!("0 0 {VIEW_W} {VIEW_H}");
    view! {
        <figure class="chart" data-testid="chart">
            <figcaption class="chart-title">{title}</figcaption>
            <div
                class="plot"
                node_ref=plot
                on:mousemove=on_move
                on:mouseleave=move |_| hover.set(None)
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
                {geometry::x_labels(window_ms)
                    .into_iter()
                    .map(|l| view! { <span>{l}</span> })
                    .collect_view()}
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
