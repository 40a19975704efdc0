//! Presentational helpers for the diagnosis views: the ids the test hooks carry (snake_case
//! exactly as serialized), `data-severity` / `data-answer` values, the browser's time zone for
//! the words, and how-to prose split into code spans. Every word a person reads about a
//! diagnosis comes from `shared::diagnosis::words`.

use shared::diagnosis::words::Tz;
use shared::diagnosis::{Answer, Metric, NodeId, ProjectionKind, RuleId, Severity, SuggestionId};

/// A unit enum's serialized string (snake_case), or "" if it is not one.
fn wire_str(v: serde_json::Result<serde_json::Value>) -> String {
    match v {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Wire ids (snake_case exactly as serialized), for the test hooks: `gpu_memory`, `dev_shm`,
/// `stage_on_local_nvme`, `time_to_full_disk`.
pub trait WireId: Copy {
    fn wire_id(self) -> String;
}

macro_rules! wire_id_by_serde {
    ($($t:ty),*) => {$(
        impl WireId for $t {
            fn wire_id(self) -> String {
                wire_str(serde_json::to_value(self))
            }
        }
    )*};
}

wire_id_by_serde!(NodeId, RuleId, SuggestionId, ProjectionKind, Metric);

/// The wire id of `value` (see [`WireId`]).
pub fn wire_id<T: WireId>(value: &T) -> String {
    value.wire_id()
}

/// `ok|warning|critical|unknown`: the `data-severity` value and the `sev-*` class suffix.
pub fn severity_attr(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "ok",
        Severity::Warning => "warning",
        Severity::Critical => "critical",
        Severity::Unknown => "unknown",
    }
}

/// `yes|no|unknown`: the `data-answer` value and the `ans-*` class suffix.
pub fn answer_attr(a: Answer) -> &'static str {
    match a {
        Answer::Yes => "yes",
        Answer::No => "no",
        Answer::Unknown => "unknown",
    }
}

/// The browser's offset from UTC, so times of day in the words read as the user's clock.
pub fn local_tz() -> Tz {
    #[cfg(target_arch = "wasm32")]
    {
        // Minutes *behind* UTC, e.g. -60 in Paris in winter; always whole minutes.
        let behind = js_sys::Date::new_0().get_timezone_offset();
        Tz::east_of_utc(-(behind.round().clamp(-1440.0, 1440.0) as i32))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Tz::UTC
    }
}

/// Splits prose with `inline code` (the catalogue's how-to texts) into `(is_code, text)` runs.
/// An unmatched backtick is kept as text.
pub fn code_spans(text: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let pieces: Vec<&str> = text.split('`').collect();
    let closed = pieces.len() % 2 == 1;
    for (i, piece) in pieces.iter().enumerate() {
        let is_code = i % 2 == 1 && (closed || i + 1 < pieces.len());
        if piece.is_empty() {
            continue;
        }
        if i % 2 == 1 && !is_code {
            out.push((false, format!("`{piece}")));
        } else {
            out.push((is_code, (*piece).to_owned()));
        }
    }
    out
}

/// The first code span of a how-to: the snippet its Copy button copies.
pub fn first_code(text: &str) -> Option<String> {
    code_spans(text)
        .into_iter()
        .find_map(|(is_code, t)| is_code.then_some(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::Verdict;

    #[test]
    fn ids_are_the_wire_ids() {
        assert_eq!(wire_id(&NodeId::CheckpointStall), "checkpoint_stall");
        assert_eq!(
            wire_id(&RuleId::GpuMemoryNotHeldByJob),
            "gpu_memory_not_held_by_job"
        );
        assert_eq!(
            wire_id(&SuggestionId::StageOnLocalNvme),
            "stage_on_local_nvme"
        );
        assert_eq!(
            wire_id(&ProjectionKind::TimeToFullDisk),
            "time_to_full_disk"
        );
        let wire = |v: serde_json::Result<serde_json::Value>| {
            v.ok().and_then(|v| v.as_str().map(str::to_owned))
        };
        for v in Verdict::ALL {
            assert_eq!(wire(serde_json::to_value(v)).as_deref(), Some(v.id()));
        }
        for s in [
            Severity::Ok,
            Severity::Warning,
            Severity::Critical,
            Severity::Unknown,
        ] {
            assert_eq!(
                wire(serde_json::to_value(s)).as_deref(),
                Some(severity_attr(s))
            );
        }
        for a in [Answer::Yes, Answer::No, Answer::Unknown] {
            assert_eq!(
                wire(serde_json::to_value(a)).as_deref(),
                Some(answer_attr(a))
            );
        }
    }

    #[test]
    fn natively_times_of_day_are_utc() {
        assert_eq!(local_tz(), Tz::UTC);
    }

    #[test]
    fn how_to_prose_splits_into_code_spans() {
        let t = "Run `export A=1` before the job; TensorFlow: `tf.x()`.";
        assert_eq!(
            code_spans(t),
            vec![
                (false, "Run ".to_owned()),
                (true, "export A=1".to_owned()),
                (false, " before the job; TensorFlow: ".to_owned()),
                (true, "tf.x()".to_owned()),
                (false, ".".to_owned()),
            ]
        );
        assert_eq!(first_code(t).as_deref(), Some("export A=1"));
        assert_eq!(first_code("no code here"), None);
        assert_eq!(
            code_spans("half `open"),
            vec![(false, "half ".to_owned()), (false, "`open".to_owned())]
        );
    }
}
