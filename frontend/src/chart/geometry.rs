//! Pure chart geometry: series in, SVG path strings, axis ticks and cursor readings out.
//!
//! The chart component (`chart.rs`) calls [`layout`] once per data update and [`readings`] on hover;
//! nothing here knows what the numbers measure. Coordinates are in a fixed viewBox
//! ([`VIEW_W`] x [`VIEW_H`]) that the SVG stretches to its box.

use std::fmt::Write as _;

/// ViewBox width; x positions are rounded to 0.1 of it, far below a pixel on any screen.
pub const VIEW_W: f64 = 1000.0;
/// ViewBox height.
pub const VIEW_H: f64 = 200.0;

/// One line on a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    /// Any CSS colour.
    pub color: String,
    /// `(t_ms, value)`, oldest first; `None` is a gap in the line.
    pub points: Vec<(u64, Option<f64>)>,
    /// `(t_ms, min, max)` where a point stands for many samples (stored history): drawn as a
    /// band around the line, so a spike stays visible. Empty for live data.
    pub band: Vec<(u64, f64, f64)>,
}

/// Everything the component draws for one data update.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Left edge of the time axis, ms since the epoch.
    pub t_start: u64,
    /// Right edge of the time axis (the newest point), ms since the epoch.
    pub t_end: u64,
    /// Value at the top of the plot.
    pub y_top: f64,
    /// Tick values from 0 to `y_top`, bottom first.
    pub y_ticks: Vec<f64>,
    /// `(colour, d)` per series, in series order.
    pub paths: Vec<(String, String)>,
    /// `(colour, d)` of each series' min-to-max band, for those that have one.
    pub bands: Vec<(String, String)>,
}

/// A tick step of 1, 2, 2.5 or 5 times a power of ten such that four steps cover `max`.
pub fn nice_top(max: f64) -> f64 {
    if !max.is_finite() || max <= 0.0 {
        return 1.0;
    }
    let raw = max / 4.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude);
    step * 4.0
}

/// Lays out `series` over the `window_ms` that ends at their newest point. `y_max` fixes the top
/// (e.g. 100 for percentages); otherwise it is a [`nice_top`] of the largest value. Consecutive
/// points further apart than `max_gap_ms` are not joined.
pub fn layout(series: &[Series], window_ms: u64, y_max: Option<f64>, max_gap_ms: u64) -> Layout {
    let t_end = series
        .iter()
        .filter_map(|s| s.points.last().map(|p| p.0))
        .max()
        .unwrap_or(0);
    layout_span(
        series,
        (t_end.saturating_sub(window_ms), t_end),
        y_max,
        max_gap_ms,
    )
}

/// [`layout`] over a given span `(t_start, t_end)` (a stored range), bands included.
pub fn layout_span(
    series: &[Series],
    (t_start, t_end): (u64, u64),
    y_max: Option<f64>,
    max_gap_ms: u64,
) -> Layout {
    fn visible(s: &Series, t_start: u64, t_end: u64) -> &[(u64, Option<f64>)] {
        let from = s.points.partition_point(|p| p.0 < t_start);
        let to = s.points.partition_point(|p| p.0 <= t_end);
        &s.points[from..to.max(from)]
    }
    fn visible_band(s: &Series, t_start: u64, t_end: u64) -> &[(u64, f64, f64)] {
        let from = s.band.partition_point(|p| p.0 < t_start);
        let to = s.band.partition_point(|p| p.0 <= t_end);
        &s.band[from..to.max(from)]
    }
    let y_top = y_max.unwrap_or_else(|| {
        let max = series
            .iter()
            .flat_map(|s| {
                visible(s, t_start, t_end)
                    .iter()
                    .filter_map(|p| p.1)
                    .chain(visible_band(s, t_start, t_end).iter().map(|b| b.2))
            })
            .fold(0.0, f64::max);
        nice_top(max)
    });
    let y_ticks = (0..=4).map(|i| y_top * f64::from(i) / 4.0).collect();
    let window = t_end.saturating_sub(t_start).max(1) as f64;
    let x_of = |t: u64| (t.saturating_sub(t_start)) as f64 / window * VIEW_W;
    let y_of = |v: f64| VIEW_H - (v / y_top).clamp(0.0, 1.02) * VIEW_H;
    let paths = series
        .iter()
        .map(|s| {
            let d = path_d(visible(s, t_start, t_end), max_gap_ms, x_of, y_of);
            (s.color.clone(), d)
        })
        .collect();
    let bands = series
        .iter()
        .filter(|s| !s.band.is_empty())
        .map(|s| {
            let d = band_d(visible_band(s, t_start, t_end), max_gap_ms, x_of, y_of);
            (s.color.clone(), d)
        })
        .collect();
    Layout {
        t_start,
        t_end,
        y_top,
        y_ticks,
        paths,
        bands,
    }
}

/// One closed SVG path per run of band points: along the maxima, back along the minima. A run
/// of one point is a thin vertical bar.
pub fn band_d(
    band: &[(u64, f64, f64)],
    max_gap_ms: u64,
    x_of: impl Fn(u64) -> f64,
    y_of: impl Fn(f64) -> f64,
) -> String {
    let mut d = String::with_capacity(band.len() * 28);
    let mut start = 0;
    for i in 1..=band.len() {
        let breaks = i == band.len() || band[i].0.saturating_sub(band[i - 1].0) > max_gap_ms;
        if !breaks {
            continue;
        }
        let run = &band[start..i];
        for (k, &(t, _, hi)) in run.iter().enumerate() {
            push_xy(&mut d, if k == 0 { 'M' } else { 'L' }, x_of(t), y_of(hi));
        }
        if run.len() == 1 {
            let _ = write!(d, "h0.5");
        }
        for &(t, lo, _) in run.iter().rev() {
            push_xy(&mut d, 'L', x_of(t), y_of(lo));
        }
        d.push('Z');
        start = i;
    }
    d
}

/// Appends `cmd`, `x` and `y` to a path: `M12.3 45.6`.
fn push_xy(d: &mut String, cmd: char, x: f64, y: f64) {
    d.push(cmd);
    push_tenths(d, x);
    d.push(' ');
    push_tenths(d, y);
}

/// Appends `v` with one decimal, as `{:.1}` writes it for the viewBox's numbers (a tie may round
/// the other way, a tenth of a viewBox unit), without `core::fmt`'s float formatting: a week's
/// charts write half a million of them, and that formatting was most of their layout time
/// (docs/performance.md#history).
pub fn push_tenths(d: &mut String, v: f64) {
    let tenths = (v * 10.0).round();
    // Far outside any viewBox: the general formatting (NaN, infinities, huge values).
    if tenths.is_nan() || tenths.abs() >= 1e15 {
        let _ = write!(d, "{v:.1}");
        return;
    }
    // Exact: |tenths| < 1e15 fits an i64.
    let t = tenths as i64;
    if t < 0 {
        d.push('-');
    }
    let a = t.unsigned_abs();
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut whole = a / 10;
    loop {
        at -= 1;
        digits[at] = b'0' + (whole % 10) as u8;
        whole /= 10;
        if whole == 0 {
            break;
        }
    }
    for &b in &digits[at..] {
        d.push(char::from(b));
    }
    d.push('.');
    d.push(char::from(b'0' + (a % 10) as u8));
}

/// One SVG path for a run of points: `M` starts each stretch, `L` continues it; a lone point gets a
/// tiny segment so a round line cap shows it as a dot.
pub fn path_d(
    points: &[(u64, Option<f64>)],
    max_gap_ms: u64,
    x_of: impl Fn(u64) -> f64,
    y_of: impl Fn(f64) -> f64,
) -> String {
    let mut d = String::with_capacity(points.len() * 14);
    let mut prev_t: Option<u64> = None;
    let mut run = 0usize;
    for &(t, v) in points {
        let Some(v) = v else {
            if run == 1 {
                d.push_str("h0.1");
            }
            prev_t = None;
            run = 0;
            continue;
        };
        let joined = prev_t.is_some_and(|p| t.saturating_sub(p) <= max_gap_ms);
        if !joined && run == 1 {
            d.push_str("h0.1");
        }
        let cmd = if joined { 'L' } else { 'M' };
        push_xy(&mut d, cmd, x_of(t), y_of(v));
        run = if joined { run + 1 } else { 1 };
        prev_t = Some(t);
    }
    if run == 1 {
        d.push_str("h0.1");
    }
    d
}

/// The value of each series at time `t`: its nearest point within `max_dist_ms`, or `None`.
pub fn readings(series: &[Series], t: u64, max_dist_ms: u64) -> Vec<Option<f64>> {
    series
        .iter()
        .map(|s| nearest(&s.points, t, max_dist_ms).and_then(|i| s.points[i].1))
        .collect()
}

/// The newest value of each series (`None` when the newest point is a gap: missing now).
pub fn latest_values(series: &[Series]) -> Vec<Option<f64>> {
    series
        .iter()
        .map(|s| s.points.last().and_then(|p| p.1))
        .collect()
}

/// Labels under the time axis at 0, 1/3, 2/3 and all of the window, oldest first.
pub fn x_labels(window_ms: u64) -> Vec<String> {
    (0..=3u64).rev().map(|k| ago(window_ms * k / 3)).collect()
}

/// Escapes text for SVG.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A chart as a standalone SVG document (a saved chart): the title, the y ticks, the bands and
/// lines of `layout`, the time labels and a legend, with every style inline.
pub fn standalone_svg(
    title: &str,
    layout: &Layout,
    legend: &[(String, String)],
    y_format: fn(f64) -> String,
    x_labels: &[String],
) -> String {
    const LEFT: f64 = 70.0;
    const TOP: f64 = 34.0;
    let legend_rows = legend.len().div_ceil(4).max(1) as f64;
    let (w, h) = (
        LEFT + VIEW_W + 20.0,
        TOP + VIEW_H + 30.0 + 20.0 * legend_rows,
    );
    let mut out = String::with_capacity(4096);
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12"><rect width="{w}" height="{h}" fill="white"/><text x="{LEFT}" y="20" font-size="15" font-weight="bold">{}</text><g transform="translate({LEFT},{TOP})">"#,
        xml(title)
    );
    for v in &layout.y_ticks {
        let y = VIEW_H - v / layout.y_top * VIEW_H;
        let _ = write!(
            out,
            r##"<line x1="0" x2="{VIEW_W}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="-6" y="{:.1}" text-anchor="end">{}</text>"##,
            y + 4.0,
            xml(&y_format(*v))
        );
    }
    for (color, d) in &layout.bands {
        let _ = write!(
            out,
            r#"<path d="{d}" fill="{}" fill-opacity="0.2"/>"#,
            xml(color)
        );
    }
    for (color, d) in &layout.paths {
        let _ = write!(
            out,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.5" stroke-linejoin="round" stroke-linecap="round"/>"#,
            xml(color)
        );
    }
    let n = x_labels.len().max(2) - 1;
    for (i, label) in x_labels.iter().enumerate() {
        let x = VIEW_W * i as f64 / n as f64;
        let anchor = match i {
            0 => "start",
            i if i == n => "end",
            _ => "middle",
        };
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
            VIEW_H + 18.0,
            xml(label)
        );
    }
    for (i, (label, color)) in legend.iter().enumerate() {
        let (x, y) = (
            (i % 4) as f64 * 250.0,
            VIEW_H + 40.0 + (i / 4) as f64 * 20.0,
        );
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{y:.1}">{}</text>"#,
            y - 9.0,
            xml(color),
            x + 14.0,
            xml(label)
        );
    }
    out.push_str("</g></svg>");
    out
}

/// Labels under the time axis of a stored span, oldest first: times of day, or days and times
/// past 24 hours.
pub fn span_labels(t_start: u64, t_end: u64, tz: shared::diagnosis::words::Tz) -> Vec<String> {
    use shared::diagnosis::words::{clock_text, day_clock_text};
    let span = t_end.saturating_sub(t_start);
    (0..=3u64)
        .map(|k| {
            let t = t_start + span * k / 3;
            if span > 86_400_000 {
                day_clock_text(t, tz)
            } else {
                clock_text(t, tz)
            }
        })
        .collect()
}

/// `now`, `-13 s`, `-5 min`, `-2 min 13 s`: how long before the newest point.
pub fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match (s / 60, s % 60) {
        (0, 0) => "now".to_owned(),
        (0, sec) => format!("-{sec} s"),
        (min, 0) => format!("-{min} min"),
        (min, sec) => format!("-{min} min {sec} s"),
    }
}

/// Index of the point nearest to `t` (binary search), if within `max_dist_ms`.
pub fn nearest(points: &[(u64, Option<f64>)], t: u64, max_dist_ms: u64) -> Option<usize> {
    let i = points.partition_point(|p| p.0 < t);
    let candidates = [i.checked_sub(1), (i < points.len()).then_some(i)];
    candidates
        .into_iter()
        .flatten()
        .min_by_key(|&j| points[j].0.abs_diff(t))
        .filter(|&j| points[j].0.abs_diff(t) <= max_dist_ms)
}

#[cfg(test)]
mod tests {
    #[test]
    fn tenths_are_written_as_the_general_formatting_writes_them() {
        let mut values = vec![
            0.0, 0.04, 0.06, 0.96, 1.0, 9.95001, 199.96, 999.94, 1000.0, 123456.78,
        ];
        // A wandering walk through the viewBox's range, as paths hold them.
        values.extend((0..20_000).map(|i| f64::from(i) * 0.0537 - 5.0));
        for v in values {
            let mut ours = String::new();
            push_tenths(&mut ours, v);
            let theirs = format!("{v:.1}");
            // Near a tie (75.55 is 75.5499... in binary, 755.5 once times ten) either way is
            // right to a tenth of a viewBox unit.
            if ((v * 10.0).abs().fract() - 0.5).abs() < 1e-6 {
                let (a, b): (f64, f64) = (
                    ours.parse().expect("a number"),
                    theirs.parse().expect("a number"),
                );
                assert!((a - b).abs() < 0.11, "{v}: {ours} {theirs}");
                continue;
            }
            // `{:.1}` keeps a minus on a value that rounds to zero (`-0.0`); a path does not need it.
            assert_eq!(
                ours,
                theirs
                    .strip_prefix("-0.0")
                    .map_or(theirs.clone(), |_| "0.0".into()),
                "{v}"
            );
        }
        for v in [f64::NAN, f64::INFINITY, 1e300] {
            let mut ours = String::new();
            push_tenths(&mut ours, v);
            assert_eq!(ours, format!("{v:.1}"));
        }
    }

    use super::*;

    fn series(points: Vec<(u64, Option<f64>)>) -> Series {
        Series {
            label: "s".into(),
            color: "red".into(),
            points,
            band: Vec::new(),
        }
    }

    #[test]
    fn a_span_is_laid_out_whole_with_its_bands() {
        let mut s = series(vec![
            (0, Some(10.0)),
            (60_000, Some(20.0)),
            (600_000, Some(5.0)),
        ]);
        s.band = vec![(0, 5.0, 40.0), (60_000, 10.0, 30.0), (600_000, 5.0, 5.0)];
        let l = layout_span(&[s], (0, 600_000), None, 120_000);
        assert_eq!((l.t_start, l.t_end), (0, 600_000));
        // The band's 40 sets the top, not the line's 20.
        assert_eq!(l.y_top, 40.0);
        assert_eq!(l.bands.len(), 1);
        // Two runs (the last point is past the gap): a polygon of two, a bar of one.
        assert_eq!(
            l.bands[0].1,
            "M0.0 0.0L100.0 50.0L100.0 150.0L0.0 175.0ZM1000.0 175.0h0.5L1000.0 175.0Z"
        );
        assert_eq!(band_d(&[], 1, |t| t as f64, |v| v), "");
    }

    #[test]
    fn a_saved_chart_is_a_whole_svg_with_its_text_escaped() {
        let mut s = series(vec![(0, Some(10.0)), (1000, Some(20.0))]);
        s.band = vec![(0, 5.0, 15.0), (1000, 10.0, 30.0)];
        let l = layout_span(&[s], (0, 1000), Some(100.0), 5000);
        let legend = vec![("nvme0n1 <a&b>".to_owned(), "#4e79a7".to_owned())];
        let svg = standalone_svg(
            "Disk \"read\"",
            &l,
            &legend,
            |v| format!("{v}%"),
            &["a".into(), "b".into()],
        );
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</g></svg>"));
        assert!(svg.contains("Disk &quot;read&quot;"));
        assert!(svg.contains("nvme0n1 &lt;a&amp;b&gt;"));
        assert!(svg.contains("fill-opacity=\"0.2\""), "the band");
        assert_eq!(svg.matches("<path").count(), 2);
        assert!(svg.contains(">100%<"));
    }

    #[test]
    fn span_labels_show_times_of_day_then_days() {
        let tz = shared::diagnosis::words::Tz::UTC;
        let t0 = 1_764_504_200_000 - 1_764_504_200_000 % 3_600_000;
        assert_eq!(
            span_labels(t0, t0 + 3 * 3_600_000, tz),
            vec!["12:00 UTC", "13:00 UTC", "14:00 UTC", "15:00 UTC"]
        );
        assert_eq!(
            span_labels(t0, t0 + 3 * 86_400_000, tz)[3],
            "12-03 12:00 UTC"
        );
    }

    #[test]
    fn nice_tops_are_round() {
        assert_eq!(nice_top(97.0), 100.0);
        assert_eq!(nice_top(13.2), 20.0);
        assert_eq!(nice_top(0.3), 0.4);
        assert_eq!(nice_top(40.0), 40.0);
        assert_eq!(nice_top(0.0), 1.0);
        assert_eq!(nice_top(f64::NAN), 1.0);
    }

    #[test]
    fn gaps_break_the_line() {
        let pts = vec![
            (0, Some(0.0)),
            (1000, Some(50.0)),
            (2000, None),
            (3000, Some(100.0)),
            (4000, Some(100.0)),
            (60_000, Some(0.0)),
        ];
        let d = path_d(&pts, 5000, |t| t as f64 / 1000.0, |v| 100.0 - v);
        assert_eq!(d, "M0.0 100.0L1.0 50.0M3.0 0.0L4.0 0.0M60.0 100.0h0.1");
    }

    #[test]
    fn a_lone_point_is_a_dot() {
        let d = path_d(&[(0, Some(1.0)), (1, None)], 10, |t| t as f64, |v| v);
        assert_eq!(d, "M0.0 1.0h0.1");
        assert_eq!(path_d(&[], 10, |t| t as f64, |v| v), "");
    }

    #[test]
    fn layout_spans_the_window_ending_at_the_newest_point() {
        let s = series(vec![
            (0, Some(5.0)),
            (500_000, Some(10.0)),
            (1_000_000, Some(20.0)),
        ]);
        let l = layout(&[s], 600_000, None, 1_000_000);
        assert_eq!(l.t_end, 1_000_000);
        // The point at t = 0 is outside the window and does not count toward the top.
        assert_eq!(l.y_top, 20.0);
        assert_eq!(l.y_ticks, vec![0.0, 5.0, 10.0, 15.0, 20.0]);
        assert_eq!(l.paths[0].1, "M166.7 100.0L1000.0 0.0");
        let fixed = layout(&[], 600_000, Some(100.0), 1);
        assert_eq!(fixed.y_top, 100.0);
        assert!(fixed.paths.is_empty());
    }

    /// The size the page draws (its cost is `benches/chart_layout.rs`'s figure).
    #[test]
    fn sixteen_series_of_nine_hundred_points_are_laid_out_whole() {
        let all: Vec<Series> = (0..16)
            .map(|k| {
                series(
                    (0..900u64)
                        .map(|i| (i * 1000, Some((i + k) as f64 % 100.0)))
                        .collect(),
                )
            })
            .collect();
        let l = layout(&all, 900_000, Some(100.0), 5000);
        assert_eq!(l.paths.len(), 16);
        assert!(l.paths.iter().all(|(_, d)| d.matches('L').count() == 899));
    }

    #[test]
    fn readings_take_the_nearest_point() {
        let s = vec![
            series(vec![(0, Some(1.0)), (1000, Some(2.0)), (2000, None)]),
            series(vec![(10_000, Some(9.0))]),
        ];
        assert_eq!(readings(&s, 600, 1500), vec![Some(2.0), None]);
        assert_eq!(readings(&s, 1900, 1500), vec![None, None]);
        assert_eq!(readings(&s, 9000, 1500), vec![None, Some(9.0)]);
        assert_eq!(nearest(&[], 5, 5), None);
        assert_eq!(latest_values(&s), vec![None, Some(9.0)]);
    }

    #[test]
    fn time_labels_count_back_from_now() {
        assert_eq!(
            x_labels(900_000),
            vec!["-15 min", "-10 min", "-5 min", "now"]
        );
        assert_eq!(ago(133_000), "-2 min 13 s");
        assert_eq!(ago(13_400), "-13 s");
    }
}
