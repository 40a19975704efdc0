//! The stored history on the page (docs/history.md#on-the-page): which range the charts show
//! (live, or a stored range asked of `GET /api/history`), the chart series built from an answer,
//! and rewinding the page to a stored moment (`GET /api/history/moment`).

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

/// Points asked per series: about one per pixel of a wide chart.
pub const POINTS: usize = 1200;

/// The series the charts draw (`only=`): nothing else is fetched.
pub const CHART_SERIES: &str = "gpu:mem_used_bytes,gpu:mem_total_bytes,gpu:util_pct,\
    disk:read_bytes_per_sec,disk:write_bytes_per_sec,disk:util_pct";

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
    /// Bumped by each request, so a late answer to an older one is dropped.
    asked: StoredValue<u64>,
}

pub fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

impl History {
    pub fn new() -> Self {
        History {
            range: RwSignal::new(Range::Live),
            span: RwSignal::new(None),
            answer: RwSignal::new(None),
            error: RwSignal::new(None),
            loading: RwSignal::new(false),
            asked: StoredValue::new(0),
        }
    }

    /// Shows `range` of `host`, asking the server for it.
    pub fn show(self, host: Option<String>, range: Range) {
        self.range.set(range);
        let Some((from, to)) = range.span(now_ms()) else {
            self.span.set(None);
            self.answer.set(None);
            self.error.set(None);
            return;
        };
        let n = self.asked.get_value() + 1;
        self.asked.set_value(n);
        self.loading.set(true);
        spawn_local(async move {
            let got = crate::api::history(host.as_deref(), from, to, POINTS, CHART_SERIES).await;
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

impl Default for History {
    fn default() -> Self {
        History::new()
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
                let mut points = Vec::new();
                let mut band = Vec::new();
                for &(t, lo, mean, hi) in &s.points {
                    let tot = total.points.iter().find(|p| p.0 == t).map(|p| p.2);
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
    fn ranges_end_now_or_where_dragged() {
        assert_eq!(Range::Live.span(10), None);
        assert_eq!(Range::Last(5).span(10), Some((5, 10)));
        assert_eq!(Range::Between(3, 3).span(10), Some((3, 1003)));
    }
}
