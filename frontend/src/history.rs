//! The stored history on the page (docs/history.md#on-the-page): which range the charts show
//! (live, or a stored range asked of `GET /api/history`), the chart series built from an answer,
//! a job's whole run (found in its own stored series), and rewinding the page to a stored moment
//! (`GET /api/history/moment`).

use crate::chart::Series;
use crate::series::color;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::stored::{Answer, Moment};
use std::sync::Arc;

/// The ranges the control offers, after `live`: label and length.
pub const RANGES: [(&str, u64); 5] = [
    ("1 h", 3_600_000),
    ("6 h", 6 * 3_600_000),
    ("24 h", 24 * 3_600_000),
    ("7 d", 7 * 86_400_000),
    ("30 d", 30 * 86_400_000),
];

/// Points asked per series at most: about one per pixel of a wide chart.
pub const POINTS: usize = 1200;
/// Points asked at least, however narrow the charts (but for a range asked in hours, which has
/// one a hour).
pub const MIN_POINTS: usize = 200;

/// Points asked for a range of `span_ms` whose charts are `pixels` wide (device pixels of a plot;
/// `None` before one is drawn): one a pixel, [`MIN_POINTS`] to [`POINTS`] (more would be drawn
/// over each other, and each point keeps its min-to-max band, so a spike is not lost), or one an
/// hour (at most [`POINTS`]) where the points are over half an hour anyway: 30 days are 720 hour
/// points, read from the hour tier in a tenth of the time the minutes take.
pub fn points_for(span_ms: u64, pixels: Option<usize>) -> usize {
    let n = pixels.map_or(POINTS, |p| p.clamp(MIN_POINTS, POINTS));
    if span_ms / n as u64 > 1_800_000 {
        // Whole hours, never a bucket of one hour here and two there.
        usize::try_from(span_ms / 3_600_000)
            .unwrap_or(POINTS)
            .clamp(1, POINTS)
    } else {
        n
    }
}

/// The width of the charts' plot in device pixels, where one is on the page.
fn plot_pixels() -> Option<usize> {
    let window = web_sys::window()?;
    let plot = window.document()?.query_selector(".plot").ok()??;
    let px = f64::from(plot.client_width()) * window.device_pixel_ratio();
    // Rounded to whole tens: a resize by a pixel asks the same points.
    (px >= 1.0).then(|| (px / 10.0).ceil() as usize * 10)
}

/// The series the charts draw (`only=`): nothing else is fetched.
pub const CHART_SERIES: &str = "gpu:mem_used_bytes,gpu:mem_total_bytes,gpu:util_pct,\
    disk:read_bytes_per_sec,disk:write_bytes_per_sec,disk:util_pct";

/// A job's own series, drawn beside the charts while its run is shown.
pub const JOB_SERIES: &str = "job:read_bytes_per_sec,job:write_bytes_per_sec,job:cpu_pct,\
    job_gpu:mem_used_bytes,job_gpu:util_pct";

/// What a job's run is found by: the GPU memory it held (a job is listed while it holds some).
const JOB_FIND: &str = "job_gpu:mem_used_bytes";
/// How far back a run is looked for: the hour tier's year.
const JOB_FIND_BACK_MS: u64 = 366 * 86_400_000;
/// Points per pass while a run is looked for; each pass narrows the range to what it found.
const JOB_FIND_POINTS: usize = 400;

/// The job whose run is shown: its key (`kind:id`, as the Jobs table has it) and its label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRun {
    pub key: String,
    pub label: String,
}

pub use shared::series::of_job;

/// The latest run of the job `key` in `answer`: its last point, and back from it while its
/// points are no further apart than `max_gap_ms` (a key seen again after a gap, a pid reused by
/// another process, is another run).
pub fn run_span(answer: &Answer, key: &str, max_gap_ms: u64) -> Option<(u64, u64)> {
    let mut times: Vec<u64> = answer
        .series
        .iter()
        .filter(|s| of_job(key, &s.item))
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    times.sort_unstable();
    times.dedup();
    let last = *times.last()?;
    let mut first = last;
    for &t in times.iter().rev().skip(1) {
        if first - t > max_gap_ms {
            break;
        }
        first = t;
    }
    Some((first, last))
}

/// What the charts show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// The live 15 minutes, from the socket.
    Live,
    /// The last `ms` up to now.
    Last(u64),
    /// A stretch picked by dragging.
    Between(u64, u64),
}

impl Range {
    /// `(from_ms, to_ms)` at `now_ms`; `None` live.
    pub fn span(self, now_ms: u64) -> Option<(u64, u64)> {
        match self {
            Range::Live => None,
            Range::Last(ms) => Some((now_ms.saturating_sub(ms), now_ms)),
            Range::Between(a, b) => Some((a, b.max(a + 1000))),
        }
    }
}

/// The history state of the page, provided by context.
#[derive(Clone, Copy)]
pub struct History {
    pub range: RwSignal<Range>,
    /// The span of the answer shown.
    pub span: RwSignal<Option<(u64, u64)>>,
    pub answer: RwSignal<Option<Arc<Answer>>>,
    pub error: RwSignal<Option<String>>,
    pub loading: RwSignal<bool>,
    /// The job whose whole run is shown, with its own series beside the charts.
    pub job: RwSignal<Option<JobRun>>,
    /// Whether this page may read the stored history: not for a share link made live only
    /// (the server refuses it too; the page then offers none of it).
    pub stored: bool,
    /// Bumped by each request, so a late answer to an older one is dropped.
    asked: StoredValue<u64>,
}

pub fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

impl History {
    pub fn new(stored: bool) -> Self {
        History {
            stored,
            range: RwSignal::new(Range::Live),
            span: RwSignal::new(None),
            answer: RwSignal::new(None),
            error: RwSignal::new(None),
            loading: RwSignal::new(false),
            job: RwSignal::new(None),
            asked: StoredValue::new(0),
        }
    }

    /// Shows `range` of `host`, asking the server for it (a job's run shown before is left).
    pub fn show(self, host: Option<String>, range: Range) {
        self.job.set(None);
        self.load(host, range);
    }

    /// Shows `range` of `host`, the job's series too while a job's run is shown (a zoom).
    pub fn zoom(self, host: Option<String>, range: Range) {
        self.load(host, range);
    }

    /// Shows the whole run of `job` on `host`: from its first stored point to its last (or
    /// now), with its own series beside the charts. The run is looked for over the last year at
    /// a coarse step, then again from where it began at a finer one.
    pub fn show_job(self, host: Option<String>, job: JobRun) {
        let n = self.bump();
        self.loading.set(true);
        spawn_local(async move {
            let found = find_run(host.as_deref(), &job.key).await;
            if self.asked.get_value() != n {
                return;
            }
            match found {
                Ok(Some((from, to))) => {
                    self.job.set(Some(job));
                    self.load(host, Range::Between(from, to));
                }
                Ok(None) => {
                    self.loading.set(false);
                    self.error.set(Some(format!(
                        "No stored history of {}: the history was not kept while it ran, or this link does not show jobs' history.",
                        job.label
                    )));
                }
                Err(e) => {
                    self.loading.set(false);
                    self.error.set(Some(e.to_string()));
                }
            }
        });
    }

    fn bump(self) -> u64 {
        let n = self.asked.get_value() + 1;
        self.asked.set_value(n);
        n
    }

    fn load(self, host: Option<String>, range: Range) {
        self.range.set(range);
        // Whatever was asked before (a range, a job's run being looked for) is answered late.
        let n = self.bump();
        let Some((from, to)) = range.span(now_ms()) else {
            self.loading.set(false);
            self.span.set(None);
            self.answer.set(None);
            self.error.set(None);
            return;
        };
        self.loading.set(true);
        // A job's run: its own series beside the charts, and no other job's.
        let job = self
            .job
            .with_untracked(|j| j.as_ref().map(|j| j.key.clone()));
        let only = if job.is_some() {
            format!("{CHART_SERIES},{JOB_SERIES}")
        } else {
            CHART_SERIES.to_owned()
        };
        spawn_local(async move {
            let points = points_for(to - from, plot_pixels());
            let got =
                crate::api::history(host.as_deref(), from, to, points, &only, job.as_deref()).await;
            if self.asked.get_value() != n {
                return;
            }
            self.loading.set(false);
            match got {
                Ok(a) => {
                    self.error.set(None);
                    self.span.set(Some((from, to)));
                    self.answer.set(Some(Arc::new(a)));
                }
                Err(e) => self.error.set(Some(e.to_string())),
            }
        });
    }
}

/// Where the run of the job `key` began and ended (its last point, or now): `None` when nothing
/// of it is stored (or the viewer's link leaves jobs out).
async fn find_run(
    host: Option<&str>,
    key: &str,
) -> Result<Option<(u64, u64)>, crate::api::ApiFailure> {
    let now = now_ms();
    let (mut from, mut to) = (now.saturating_sub(JOB_FIND_BACK_MS), now);
    let mut found = None;
    for _ in 0..4 {
        let answer =
            crate::api::history(host, from, to, JOB_FIND_POINTS, JOB_FIND, Some(key)).await?;
        let step = answer.step_ms.max(1000);
        // Two points apart: a period without a point between them is a pause, more is a gap.
        let Some((first, last)) = run_span(&answer, key, 3 * step) else {
            break;
        };
        found = Some((first, last.saturating_add(step).min(now)));
        // Narrowed to the run, with a step's margin each side, and asked again finer.
        let (next_from, next_to) = (
            first.saturating_sub(step),
            last.saturating_add(2 * step).min(now),
        );
        if step <= 1000 || (next_from <= from && next_to >= to) {
            break;
        }
        (from, to) = (next_from.max(from), next_to.min(to));
    }
    Ok(found)
}

impl Default for History {
    fn default() -> Self {
        History::new(true)
    }
}

pub fn use_history() -> History {
    use_context::<History>().unwrap_or_default()
}

/// One chart's worth of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    GpuMemoryPct,
    GpuUtilPct,
    DiskReadMibS,
    DiskWriteMibS,
    DiskUtilPct,
}

const MIB: f64 = 1_048_576.0;

/// The series of `answer` for `chart`: the mean as the line, min to max as the band.
pub fn series(answer: &Answer, chart: Chart) -> Vec<Series> {
    use shared::series::Scope;
    let (scope, metric, scale) = match chart {
        Chart::GpuMemoryPct => (Scope::Gpu, "mem_used_bytes", 1.0),
        Chart::GpuUtilPct => (Scope::Gpu, "util_pct", 1.0),
        Chart::DiskReadMibS => (Scope::Disk, "read_bytes_per_sec", 1.0 / MIB),
        Chart::DiskWriteMibS => (Scope::Disk, "write_bytes_per_sec", 1.0 / MIB),
        Chart::DiskUtilPct => (Scope::Disk, "util_pct", 1.0),
    };
    let mut items: Vec<&str> = answer
        .series
        .iter()
        .filter(|s| s.scope == scope && s.metric == metric)
        .map(|s| s.item.as_str())
        .collect();
    // GPUs by index, disks by name.
    items.sort_by_key(|i| (i.parse::<u64>().unwrap_or(u64::MAX), i.to_string()));
    items.dedup();
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let find = |m: &str| {
                answer
                    .series
                    .iter()
                    .find(|s| s.scope == scope && s.item == *item && s.metric == m)
            };
            let s = find(metric)?;
            let label = match scope {
                Scope::Gpu => format!("GPU {item}"),
                _ => (*item).to_owned(),
            };
            let (points, band) = if chart == Chart::GpuMemoryPct {
                // Used over total at each point (total is steady; a point without it is a gap).
                let total = find("mem_total_bytes")?;
                let mut points = Vec::with_capacity(s.points.len());
                let mut band = Vec::with_capacity(s.points.len());
                // Both ascending: one walk along the totals, not a search for each point.
                let mut totals = total.points.iter().peekable();
                for &(t, lo, mean, hi) in &s.points {
                    while totals.next_if(|p| p.0 < t).is_some() {}
                    let tot = totals.peek().filter(|p| p.0 == t).map(|p| p.2);
                    match tot.filter(|t| *t > 0.0) {
                        Some(tot) => {
                            points.push((t, Some(mean / tot * 100.0)));
                            band.push((t, lo / tot * 100.0, hi / tot * 100.0));
                        }
                        None => points.push((t, None)),
                    }
                }
                (points, band)
            } else {
                (
                    s.points.iter().map(|p| (p.0, Some(p.2 * scale))).collect(),
                    s.points
                        .iter()
                        .map(|p| (p.0, p.1 * scale, p.3 * scale))
                        .collect(),
                )
            };
            Some(Series {
                label,
                color: color(i),
                points,
                band,
            })
        })
        .collect()
}

/// One chart of a job's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobChart {
    /// The GPU memory it holds, per GPU, in GiB.
    GpuMemoryGib,
    /// Its GPUs' utilization (where the figure is its own).
    GpuUtilPct,
    /// Its reads and writes, MiB/s.
    IoMibS,
    /// Its CPU, percent of one core.
    CpuPct,
}

const GIB: f64 = 1_073_741_824.0;

/// The series of the job `key` in `answer` for `chart`.
pub fn job_series(answer: &Answer, key: &str, chart: JobChart) -> Vec<Series> {
    use shared::series::Scope;
    let pick: Vec<(Scope, &str, f64)> = match chart {
        JobChart::GpuMemoryGib => vec![(Scope::JobGpu, "mem_used_bytes", 1.0 / GIB)],
        JobChart::GpuUtilPct => vec![(Scope::JobGpu, "util_pct", 1.0)],
        JobChart::IoMibS => vec![
            (Scope::Job, "read_bytes_per_sec", 1.0 / MIB),
            (Scope::Job, "write_bytes_per_sec", 1.0 / MIB),
        ],
        JobChart::CpuPct => vec![(Scope::Job, "cpu_pct", 1.0)],
    };
    let mut found: Vec<&shared::stored::SeriesPoints> = answer
        .series
        .iter()
        .filter(|s| of_job(key, &s.item) && pick.iter().any(|p| p.0 == s.scope && p.1 == s.metric))
        .collect();
    // By metric as asked, then by GPU (`kind:id@0` before `kind:id@1`).
    found.sort_by_key(|s| {
        let at = pick.iter().position(|p| p.0 == s.scope && p.1 == s.metric);
        let place = s.item.rsplit_once('@').map(|(_, p)| p.to_owned());
        (at, place.as_deref().map(|p| p.len()), place)
    });
    found
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let scale = pick
                .iter()
                .find(|p| p.0 == s.scope && p.1 == s.metric)
                .map_or(1.0, |p| p.2);
            let label = match (s.scope, chart) {
                (Scope::JobGpu, _) => s
                    .item
                    .rsplit_once('@')
                    .map_or_else(|| "GPU".to_owned(), |(_, p)| format!("GPU {p}")),
                (_, JobChart::IoMibS) => s.metric.trim_end_matches("_bytes_per_sec").to_owned(),
                _ => "CPU".to_owned(),
            };
            Series {
                label,
                color: color(i),
                points: s.points.iter().map(|p| (p.0, Some(p.2 * scale))).collect(),
                band: s
                    .points
                    .iter()
                    .map(|p| (p.0, p.1 * scale, p.3 * scale))
                    .collect(),
            }
        })
        .collect()
}

/// Points further apart than this are not joined on a stored range: three points' width.
pub fn gap_ms(answer: &Answer) -> u64 {
    answer.step_ms.max(1000) * 3
}

/// Rewinds the page to the stored moment nearest before `t_ms`.
pub fn rewind(
    store: crate::store::Store,
    host: Option<String>,
    t_ms: u64,
    error: RwSignal<Option<String>>,
) {
    spawn_local(async move {
        match crate::api::moment(host.as_deref(), t_ms).await {
            Ok(m) => store.rewind(Some(rewound(host.unwrap_or_default(), m))),
            Err(e) => error.set(Some(e.to_string())),
        }
    });
}

fn rewound(host: String, m: Moment) -> crate::store::Rewound {
    crate::store::Rewound {
        host,
        t_ms: m.t_ms,
        step_ms: m.step_ms,
        frame: crate::model::FrameRef(Arc::new(m.frame)),
        diagnosis: Arc::new(m.diagnosis),
    }
}

/// The stored segments as the replay bar's timeline draws them.
pub fn timeline(answer: &Answer) -> Vec<shared::replay::Segment> {
    answer
        .segments
        .iter()
        .map(|s| shared::replay::Segment {
            from_ms: s.from_ms,
            to_ms: s.to_ms,
            verdict: s.verdict,
            severity: s.severity,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::series::{Scope, Unit};
    use shared::stored::SeriesPoints;

    fn sp(
        scope: Scope,
        item: &str,
        metric: &str,
        points: Vec<(u64, f64, f64, f64)>,
    ) -> SeriesPoints {
        SeriesPoints {
            scope,
            item: item.into(),
            metric: metric.into(),
            unit: Unit::Bytes,
            points,
        }
    }

    fn answer(series: Vec<SeriesPoints>) -> Answer {
        Answer {
            from_ms: 0,
            to_ms: 120_000,
            step_ms: 60_000,
            tiers: Vec::new(),
            series,
            segments: Vec::new(),
            events: Vec::new(),
            notices: Vec::new(),
        }
    }

    #[test]
    fn gpu_memory_is_a_share_of_total_with_its_band_and_gaps() {
        let a = answer(vec![
            sp(
                Scope::Gpu,
                "1",
                "mem_used_bytes",
                vec![(0, 10.0, 40.0, 80.0), (60_000, 50.0, 50.0, 50.0)],
            ),
            sp(
                Scope::Gpu,
                "1",
                "mem_total_bytes",
                vec![(0, 100.0, 100.0, 100.0)],
            ),
            sp(Scope::Gpu, "0", "mem_used_bytes", vec![(0, 1.0, 1.0, 1.0)]),
            sp(Scope::Gpu, "0", "mem_total_bytes", vec![(0, 4.0, 4.0, 4.0)]),
        ]);
        let s = series(&a, Chart::GpuMemoryPct);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].label, "GPU 0");
        assert_eq!(s[1].points, vec![(0, Some(40.0)), (60_000, None)]);
        assert_eq!(s[1].band, vec![(0, 10.0, 80.0)]);
        // Totals at other moments than the used figures: each used point finds its own.
        let a = answer(vec![
            sp(
                Scope::Gpu,
                "0",
                "mem_used_bytes",
                vec![
                    (0, 1.0, 1.0, 1.0),
                    (60_000, 2.0, 2.0, 2.0),
                    (120_000, 3.0, 3.0, 3.0),
                ],
            ),
            sp(
                Scope::Gpu,
                "0",
                "mem_total_bytes",
                vec![
                    (0, 4.0, 4.0, 4.0),
                    (30_000, 8.0, 8.0, 8.0),
                    (120_000, 6.0, 6.0, 6.0),
                    (180_000, 6.0, 6.0, 6.0),
                ],
            ),
        ]);
        let s = series(&a, Chart::GpuMemoryPct);
        assert_eq!(
            s[0].points,
            vec![(0, Some(25.0)), (60_000, None), (120_000, Some(50.0))]
        );
    }

    #[test]
    fn disk_rates_are_in_mib_per_second() {
        let a = answer(vec![sp(
            Scope::Disk,
            "nvme0n1",
            "read_bytes_per_sec",
            vec![(0, 0.0, MIB, 4.0 * MIB)],
        )]);
        let s = series(&a, Chart::DiskReadMibS);
        assert_eq!(s[0].points, vec![(0, Some(1.0))]);
        assert_eq!(s[0].band, vec![(0, 0.0, 4.0)]);
        assert!(series(&a, Chart::DiskWriteMibS).is_empty());
    }

    #[test]
    fn a_run_spans_its_first_to_its_last_point_and_its_charts_are_its_own() {
        let a = answer(vec![
            sp(
                Scope::JobGpu,
                "process:7@1",
                "mem_used_bytes",
                vec![(60_000, GIB, 2.0 * GIB, 3.0 * GIB)],
            ),
            sp(
                Scope::JobGpu,
                "process:7@0",
                "mem_used_bytes",
                vec![(120_000, GIB, GIB, GIB)],
            ),
            sp(
                Scope::JobGpu,
                "process:70@0",
                "mem_used_bytes",
                vec![(0, GIB, GIB, GIB), (900_000, GIB, GIB, GIB)],
            ),
            sp(
                Scope::Job,
                "process:7",
                "write_bytes_per_sec",
                vec![(60_000, 0.0, MIB, 2.0 * MIB)],
            ),
            sp(
                Scope::Job,
                "process:7",
                "read_bytes_per_sec",
                vec![(60_000, 0.0, 4.0 * MIB, 8.0 * MIB)],
            ),
        ]);
        assert_eq!(run_span(&a, "process:7", 60_000), Some((60_000, 120_000)));
        assert_eq!(run_span(&a, "process:8", 60_000), None);
        // The pid's earlier run, long before, is another run.
        let b = answer(vec![sp(
            Scope::JobGpu,
            "process:7@0",
            "mem_used_bytes",
            [0, 1_000_000, 1_060_000, 1_120_000]
                .map(|t| (t, GIB, GIB, GIB))
                .to_vec(),
        )]);
        assert_eq!(
            run_span(&b, "process:7", 60_000),
            Some((1_000_000, 1_120_000))
        );
        assert_eq!(run_span(&b, "process:7", 10_000_000), Some((0, 1_120_000)));
        let mem = job_series(&a, "process:7", JobChart::GpuMemoryGib);
        let labels: Vec<&str> = mem.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["GPU 0", "GPU 1"]);
        assert_eq!(mem[1].points, vec![(60_000, Some(2.0))]);
        assert_eq!(mem[1].band, vec![(60_000, 1.0, 3.0)]);
        let io = job_series(&a, "process:7", JobChart::IoMibS);
        let labels: Vec<&str> = io.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["read", "write"]);
        assert_eq!(io[0].points, vec![(60_000, Some(4.0))]);
        assert!(job_series(&a, "process:7", JobChart::CpuPct).is_empty());
    }

    #[test]
    fn a_month_is_asked_in_hours_and_a_week_in_pixels() {
        // No chart drawn yet: as many as a wide one.
        assert_eq!(points_for(30 * 86_400_000, None), 720);
        assert_eq!(points_for(7 * 86_400_000, None), POINTS);
        assert_eq!(points_for(3_600_000, None), POINTS);
        assert_eq!(points_for(366 * 86_400_000, None), POINTS);
        // One a pixel of the plot, within bounds.
        assert_eq!(points_for(7 * 86_400_000, Some(410)), 410);
        assert_eq!(points_for(7 * 86_400_000, Some(3000)), POINTS);
        assert_eq!(points_for(3_600_000, Some(50)), MIN_POINTS);
        // A month: its hours, on a chart of any width.
        assert_eq!(points_for(30 * 86_400_000, Some(410)), 720);
        assert_eq!(points_for(30 * 86_400_000, Some(1000)), 720);
    }

    #[test]
    fn ranges_end_now_or_where_dragged() {
        assert_eq!(Range::Live.span(10), None);
        assert_eq!(Range::Last(5).span(10), Some((5, 10)));
        assert_eq!(Range::Between(3, 3).span(10), Some((3, 1003)));
    }
}
