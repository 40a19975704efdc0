//! Text for the views: every reading becomes a short string here, and a missing reading is "—".
//!
//! Pure functions only (called by `views/*`, tested natively). Sizes use `shared::units::format_bytes`
//! so the page and the CLI print the same figures.

use shared::diagnosis::words;
use shared::units::{Bytes, BytesPerSec, Percent, format_bytes};
use shared::{MountKind, Source, SourceError};

/// What the page shows for a value that could not be read. Never "0".
pub const DASH: &str = words::DASH;

/// `97%`, `4.5%`; one decimal only where it matters (under 10), as in the diagnosis' words.
pub fn pct(p: Percent) -> String {
    words::percent_text(p.0)
}

pub fn opt_pct(p: Option<Percent>) -> String {
    p.map_or_else(|| DASH.to_owned(), pct)
}

pub fn opt_bytes(b: Option<Bytes>) -> String {
    b.map_or_else(|| DASH.to_owned(), format_bytes)
}

/// A throughput in MiB/s with one decimal (what `iostat -m` prints), so rows compare at a glance.
pub fn opt_mib_s(r: Option<BytesPerSec>) -> String {
    r.map_or_else(
        || DASH.to_owned(),
        |r| format!("{:.1} MiB/s", r.as_mib_per_sec().max(0.0)),
    )
}

/// A plain number: no decimals from 100 on, one below.
pub fn num(v: f64) -> String {
    words::number_text(v)
}

pub fn opt_num(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), num)
}

pub fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), |v| format!("{} ms", num(v)))
}

pub fn opt_temp(c: Option<f64>) -> String {
    c.map_or_else(|| DASH.to_owned(), |c| format!("{c:.0} °C"))
}

/// `250 / 400 W`, with a dash for whichever side is missing.
pub fn power(draw: Option<f64>, limit: Option<f64>) -> String {
    let side = |w: Option<f64>| w.map_or_else(|| DASH.to_owned(), |w| format!("{w:.0}"));
    match (draw, limit) {
        (None, None) => DASH.to_owned(),
        _ => format!("{} / {} W", side(draw), side(limit)),
    }
}

/// How long ago, for the footer and host-status lines: `0.4 s`, `12 s`, `3 min`, `2 h`.
pub fn age(ms: f64) -> String {
    let ms = ms.max(0.0);
    if ms < 10_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else if ms < 120_000.0 {
        format!("{:.0} s", ms / 1000.0)
    } else if ms < 2.0 * 3_600_000.0 {
        format!("{:.0} min", ms / 60_000.0)
    } else {
        format!("{:.0} h", ms / 3_600_000.0)
    }
}

/// Axis label for GiB values.
pub fn axis_gib(v: f64) -> String {
    if v >= 10.0 || v == 0.0 {
        format!("{v:.0} GiB")
    } else {
        format!("{v:.1} GiB")
    }
}

/// Axis label for percentages.
pub fn axis_pct(v: f64) -> String {
    format!("{v:.0}%")
}

/// Axis label for MiB/s values.
pub fn axis_mib_s(v: f64) -> String {
    if v >= 10.0 || v == 0.0 {
        format!("{v:.0} MiB/s")
    } else {
        format!("{v:.1} MiB/s")
    }
}

pub fn mount_kind(kind: MountKind) -> &'static str {
    match kind {
        MountKind::LocalNvme => "NVMe",
        MountKind::LocalSsd => "SSD",
        MountKind::LocalHdd => "HDD",
        MountKind::Local => "local",
        MountKind::Network => "network",
        MountKind::Tmpfs => "tmpfs",
        MountKind::Overlay => "overlay",
        MountKind::Other => "other",
    }
}

pub fn rotational(r: Option<bool>) -> &'static str {
    match r {
        Some(true) => "rotational",
        Some(false) => "non-rotational",
        None => DASH,
    }
}

/// The `item` the sampler uses for GPU `index` in `SourceError`s.
pub fn gpu_item(index: u32) -> String {
    format!("gpu {index}")
}

/// Messages of `source` errors that belong to `item` (a GPU, a mount point, a device).
pub fn item_errors(errors: &[SourceError], source: Source, item: &str) -> Vec<String> {
    errors
        .iter()
        .filter(|e| e.source == source && e.item.as_deref() == Some(item))
        .map(|e| e.message.clone())
        .collect()
}

/// Messages of `source` errors for the section header: those about the whole source and those
/// whose item is not on the page (so no error is ever dropped).
pub fn section_errors(errors: &[SourceError], source: Source, items: &[String]) -> Vec<String> {
    errors
        .iter()
        .filter(|e| e.source == source)
        .filter(|e| e.item.as_ref().is_none_or(|i| !items.contains(i)))
        .map(|e| match &e.item {
            Some(item) => format!("{item}: {}", e.message),
            None => e.message.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(source: Source, item: Option<&str>, message: &str) -> SourceError {
        SourceError {
            source,
            item: item.map(str::to_owned),
            message: message.to_owned(),
        }
    }

    #[test]
    fn missing_values_are_dashes_never_zero() {
        assert_eq!(opt_pct(None), "—");
        assert_eq!(opt_bytes(None), "—");
        assert_eq!(opt_mib_s(None), "—");
        assert_eq!(opt_ms(None), "—");
        assert_eq!(opt_temp(None), "—");
        assert_eq!(opt_num(None), "—");
        assert_eq!(power(None, None), "—");
        assert_eq!(power(Some(250.4), None), "250 / — W");
        assert_eq!(rotational(None), "—");
    }

    #[test]
    fn formats_readings() {
        assert_eq!(opt_pct(Some(Percent(97.0))), "97%");
        assert_eq!(opt_pct(Some(Percent(4.54))), "4.5%");
        assert_eq!(opt_pct(Some(Percent(0.0))), "0%");
        assert_eq!(opt_bytes(Some(Bytes::from_mib(512))), "512 MiB");
        assert_eq!(
            opt_mib_s(Some(BytesPerSec(12.34 * 1024.0 * 1024.0))),
            "12.3 MiB/s"
        );
        assert_eq!(opt_ms(Some(1.25)), "1.2 ms");
        assert_eq!(opt_num(Some(1234.4)), "1234");
        assert_eq!(opt_temp(Some(64.6)), "65 °C");
        assert_eq!(power(Some(250.0), Some(400.0)), "250 / 400 W");
        assert_eq!(axis_mib_s(2.5), "2.5 MiB/s");
        assert_eq!(axis_pct(50.0), "50%");
    }

    #[test]
    fn ages_pick_a_readable_unit() {
        assert_eq!(age(400.0), "0.4 s");
        assert_eq!(age(-5.0), "0.0 s");
        assert_eq!(age(12_000.0), "12 s");
        assert_eq!(age(180_000.0), "3 min");
        assert_eq!(age(3.0 * 3_600_000.0), "3 h");
    }

    #[test]
    fn errors_go_where_they_belong() {
        let errors = vec![
            err(Source::Gpu, Some("gpu 1"), "lost"),
            err(Source::Gpu, None, "nvml slow"),
            err(Source::Gpu, Some("gpu 9"), "gone"),
            err(Source::Mounts, Some("/data"), "stale NFS handle"),
        ];
        assert_eq!(
            item_errors(&errors, Source::Gpu, &gpu_item(1)),
            vec!["lost"]
        );
        assert!(item_errors(&errors, Source::Gpu, "gpu 0").is_empty());
        let on_page = vec![gpu_item(0), gpu_item(1)];
        assert_eq!(
            section_errors(&errors, Source::Gpu, &on_page),
            vec!["nvml slow", "gpu 9: gone"]
        );
        assert_eq!(
            item_errors(&errors, Source::Mounts, "/data"),
            vec!["stale NFS handle"]
        );
        assert!(section_errors(&errors, Source::Mounts, &["/data".to_owned()]).is_empty());
        assert!(section_errors(&errors, Source::System, &[]).is_empty());
    }
}
