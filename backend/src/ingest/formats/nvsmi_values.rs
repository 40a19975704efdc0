//! Values as nvidia-smi prints them in all its formats (`--query-*` CSV, `dmon`, `pmon`, the
//! table): `N/A`, `[N/A]`, `[Not Supported]`, `-` and `ERR!` mean absent; units (`MiB`, `%`,
//! `W`, `C`) may follow the number, with or without a space. Each reader returns `Ok(None)` for
//! absent and `Err(why)` for a value that is there but unusable, so the importer can note it.

/// Bytes in one MiB; nvidia-smi's `MiB` and the `MB` of `dmon`/`pmon` are both 2^20 bytes
/// (NVML reports bytes and nvidia-smi divides by 1024 * 1024).
pub(crate) const MIB: u64 = 1 << 20;

/// Whether nvidia-smi means "no value" by `v` (already trimmed).
pub(crate) fn absent(v: &str) -> bool {
    v.is_empty()
        || v == "-"
        || v.eq_ignore_ascii_case("N/A")
        || v == "ERR!"
        || (v.starts_with('[') && v.ends_with(']'))
}

/// `v` for a message: at most 40 characters, so a line of junk does not flood the notes.
pub(crate) fn quote(v: &str) -> String {
    let mut s: String = v.chars().take(40).collect();
    if v.chars().nth(40).is_some() {
        s.push_str("...");
    }
    s
}

/// Units nvidia-smi writes after numbers, with their scale to the field's base unit (MiB for
/// memory, else 1). Longest first, so `MB/s` is not read as `MB`.
const UNITS: [(&str, f64); 11] = [
    ("MB/s", 1.0),
    ("MHz", 1.0),
    ("MiB", 1.0),
    ("GiB", 1024.0),
    ("KiB", 1.0 / 1024.0),
    ("MB", 1.0),
    ("GB", 1024.0),
    ("KB", 1.0 / 1024.0),
    ("W", 1.0),
    ("C", 1.0),
    ("%", 1.0),
];

/// A number with an optional unit suffix, scaled to the base unit; `Ok(None)` when absent.
pub(crate) fn number(v: &str, field: &str) -> Result<Option<f64>, String> {
    let v = v.trim();
    if absent(v) {
        return Ok(None);
    }
    let mut digits = v;
    let mut scale = 1.0;
    for (unit, s) in UNITS {
        if let Some(rest) = v.strip_suffix(unit) {
            digits = rest.trim_end();
            scale = s;
            break;
        }
    }
    let parsed: f64 = digits
        .parse()
        .map_err(|_| format!("`{}` is not a number in {field}", quote(v)))?;
    if !parsed.is_finite() {
        return Err(format!("`{}` is out of range in {field}", quote(v)));
    }
    Ok(Some(parsed * scale))
}

/// A number that cannot be negative (power, percent, memory).
fn non_negative(v: &str, field: &str) -> Result<Option<f64>, String> {
    match number(v, field)? {
        Some(n) if n < 0.0 => Err(format!("`{}` is negative in {field}", quote(v.trim()))),
        other => Ok(other),
    }
}

/// Memory in MiB (or with its unit) to bytes.
pub(crate) fn mib(v: &str, field: &str) -> Result<Option<u64>, String> {
    let t = v.trim();
    let plain = t.strip_suffix("MiB").unwrap_or(t).trim_end();
    if !plain.is_empty() && plain.bytes().all(|b| b.is_ascii_digit()) {
        // Whole MiB, the usual case: exact integer arithmetic.
        return plain
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(MIB))
            .map(Some)
            .ok_or_else(|| format!("`{}` is out of range in {field}", quote(t)));
    }
    let Some(n) = non_negative(v, field)? else {
        return Ok(None);
    };
    let bytes = (n * MIB as f64).round();
    if bytes >= u64::MAX as f64 {
        return Err(format!("`{}` is out of range in {field}", quote(t)));
    }
    Ok(Some(bytes as u64))
}

/// A percentage, 0 to 100.
pub(crate) fn percent(v: &str, field: &str) -> Result<Option<f64>, String> {
    match non_negative(v, field)? {
        Some(p) if p > 100.0 => Err(format!("`{}` is over 100% in {field}", quote(v.trim()))),
        other => Ok(other),
    }
}

/// Watts.
pub(crate) fn watts(v: &str, field: &str) -> Result<Option<f64>, String> {
    non_negative(v, field)
}

/// Degrees Celsius.
pub(crate) fn celsius(v: &str, field: &str) -> Result<Option<f64>, String> {
    number(v, field)
}

/// A GPU index or a pid: a whole number that fits `u32`.
pub(crate) fn whole(v: &str, field: &str) -> Result<Option<u32>, String> {
    let v = v.trim();
    if absent(v) {
        return Ok(None);
    }
    v.parse()
        .map(Some)
        .map_err(|_| format!("`{}` is not a whole number in {field}", quote(v)))
}

/// Text as printed, `None` when absent.
pub(crate) fn text(v: &str) -> Option<String> {
    let v = v.trim();
    (!absent(v)).then(|| v.to_owned())
}

/// Reads one value with `read`, pushing the reason to `why` when it is unusable.
pub(crate) fn keep<T>(result: Result<Option<T>, String>, why: &mut Vec<String>) -> Option<T> {
    result.unwrap_or_else(|e| {
        why.push(e);
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_absence_and_junk() {
        assert_eq!(mib("1234 MiB", "m"), Ok(Some(1234 * MIB)));
        assert_eq!(mib("1234MiB", "m"), Ok(Some(1234 * MIB)));
        assert_eq!(mib(" 7 ", "m"), Ok(Some(7 * MIB)));
        assert_eq!(mib("1.5 GiB", "m"), Ok(Some(1536 * MIB)));
        assert_eq!(mib("[N/A]", "m"), Ok(None));
        assert_eq!(mib("N/A", "m"), Ok(None));
        assert_eq!(mib("", "m"), Ok(None));
        assert!(mib("99999999999999999999", "m").is_err());
        assert!(mib("1e400", "m").is_err());
        assert!(mib("-5", "m").is_err());
        assert_eq!(
            mib("abc", "memory.used"),
            Err("`abc` is not a number in memory.used".to_owned())
        );
        assert_eq!(percent("45 %", "u"), Ok(Some(45.0)));
        assert_eq!(percent("0%", "u"), Ok(Some(0.0)));
        assert!(percent("101 %", "u").is_err());
        assert_eq!(watts("70.12 W", "p"), Ok(Some(70.12)));
        assert_eq!(watts("[Not Supported]", "p"), Ok(None));
        assert_eq!(celsius("32C", "t"), Ok(Some(32.0)));
        assert_eq!(whole("-", "pid"), Ok(None));
        assert!(whole("4294967296", "pid").is_err());
        assert_eq!(text(" python3  "), Some("python3".to_owned()));
        assert_eq!(text("[Insufficient Permissions]"), None);
        assert_eq!(quote(&"x".repeat(50)).len(), 43);
    }
}
