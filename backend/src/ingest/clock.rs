//! Timestamps as logs write them, to milliseconds since the Unix epoch. Zone-less times (what
//! nvidia-smi and iostat -t print) are read as UTC; an explicit offset (`+0100`, `Z`) is applied.
//!
//! Accepted: `2023/01/05 12:00:01.123` (nvidia-smi), `2023-01-05 12:00:01`,
//! `2023-01-05T12:00:01+0000` and `...Z` (ISO 8601, iostat with `S_TIME_FORMAT=ISO`),
//! `01/05/2023 12:00:01 PM` and `01/05/23 12:00:01` (iostat -t in the C and en_US locales),
//! `Thu Jan  5 12:00:01 2023` (`date`'s default, nvidia-smi's table header), `20230105 12:00:01`
//! (`nvidia-smi dmon -o DT`), and Unix seconds
//! (`1672920001` or `1672920001.5`).

/// Days from 1970-01-01 to `y-m-d` (proleptic Gregorian; Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `y-m-d h:mi:s.ms` UTC to ms since the epoch; `None` for an impossible date or one before 1970.
pub fn civil_ms(y: i64, m: u32, d: u32, h: u32, mi: u32, s: u32, ms: u32) -> Option<u64> {
    // Years beyond four digits are no log's time (and would overflow the day count).
    if !(1970..=9999).contains(&y)
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || s > 60
        || ms > 999
    {
        return None;
    }
    let days = days_from_civil(y, m, d);
    let secs = days * 86_400 + i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s);
    u64::try_from(secs)
        .ok()?
        .checked_mul(1000)?
        .checked_add(u64::from(ms))
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `HH:MM:SS[.fff]` to (h, m, s, ms).
fn clock(s: &str) -> Option<(u32, u32, u32, u32)> {
    let (hms, frac) = match s.split_once(['.', ',']) {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let mut parts = hms.split(':');
    let (h, m, sec) = (
        num(parts.next()?)?,
        num(parts.next()?)?,
        num(parts.next()?)?,
    );
    if parts.next().is_some() {
        return None;
    }
    let ms = match frac {
        None => 0,
        Some(f) => {
            let digits: String = f.chars().take(3).collect();
            let v: u32 = num(&digits)?;
            v * 10u32.pow(3 - digits.len() as u32)
        }
    };
    Some((h, m, sec, ms))
}

/// A zone suffix (`Z`, `+0100`, `-05:00`) to seconds east of UTC.
fn zone(s: &str) -> Option<i64> {
    if s == "Z" {
        return Some(0);
    }
    let sign = match s.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = s[1..].chars().filter(|c| *c != ':').collect();
    // Four ASCII digits, checked before slicing: a zone holding a multi-byte character (`+1é0`)
    // is four bytes long too.
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: i64 = num(digits.get(..2)?)?;
    let m: i64 = num(digits.get(2..)?)?;
    Some(sign * (h * 3600 + m * 60))
}

fn shift(ms: u64, east_s: i64) -> Option<u64> {
    let v = i64::try_from(ms)
        .ok()?
        .checked_sub(east_s.checked_mul(1000)?)?;
    u64::try_from(v).ok()
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A timestamp in any of the accepted forms (surrounding spaces ignored).
pub fn parse(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    // Unix seconds.
    if let Some(ms) = epoch(t) {
        return Some(ms);
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    // `Thu Jan  5 12:00:01 2023`
    if words.len() == 5
        && let Some(m) = MONTHS.iter().position(|m| *m == words[1])
    {
        let (h, mi, s, ms) = clock(words[3])?;
        return civil_ms(num(words[4])?, m as u32 + 1, num(words[2])?, h, mi, s, ms);
    }
    // ISO 8601 with `T`.
    let (date, rest): (&str, Vec<&str>) = match words.as_slice() {
        [one] if one.contains('T') => {
            let (d, r) = one.split_once('T')?;
            (d, vec![r])
        }
        [d, r @ ..] => (*d, r.to_vec()),
        [] => return None,
    };
    let (y, m, d) = ymd(date)?;
    let (time, mut tail) = match rest.as_slice() {
        [time, tail @ ..] => (*time, tail.to_vec()),
        [] => return None,
    };
    // A zone glued to the time (`12:00:01+0000`, `12:00:01Z`).
    let (time, glued) = match time.find(['+', 'Z']).or_else(|| time.rfind('-')) {
        Some(i) if i > 0 => (&time[..i], Some(&time[i..])),
        _ => (time, None),
    };
    let (mut h, mi, s, ms) = clock(time)?;
    if let Some(ampm) = tail.first().map(|w| w.to_ascii_uppercase())
        && (ampm == "AM" || ampm == "PM")
    {
        if h == 0 || h > 12 {
            return None;
        }
        h = match (ampm.as_str(), h) {
            ("AM", 12) => 0,
            ("PM", 12) => 12,
            ("PM", h) => h + 12,
            (_, h) => h,
        };
        tail.remove(0);
    }
    let utc = civil_ms(y, m, d, h, mi, s, ms)?;
    let zone_text = glued.or(tail.first().copied());
    match zone_text {
        None => Some(utc),
        Some(z) => shift(utc, zone(z)?),
    }
}

/// `YYYY/MM/DD`, `YYYY-MM-DD`, `MM/DD/YYYY`, `MM/DD/YY` (two-digit years are 20YY) or
/// `YYYYMMDD` (`nvidia-smi dmon -o D`).
fn ymd(s: &str) -> Option<(i64, u32, u32)> {
    if s.len() == 8
        && s.bytes().all(|b| b.is_ascii_digit())
        && let (Some(y), Some(m), Some(d)) = (s.get(..4), s.get(4..6), s.get(6..))
    {
        return Some((num(y)?, num(m)?, num(d)?));
    }
    let parts: Vec<&str> = s.split(['/', '-']).collect();
    let [a, b, c] = parts.as_slice() else {
        return None;
    };
    if a.len() == 4 {
        return Some((num(a)?, num(b)?, num(c)?));
    }
    let year: i64 = match c.len() {
        4 => num(c)?,
        2 => 2000 + num::<i64>(c)?,
        _ => return None,
    };
    Some((year, num(a)?, num(b)?))
}

/// Unix seconds, at least 9 digits (so a small number is not taken for a time).
fn epoch(t: &str) -> Option<u64> {
    let (int, frac) = match t.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (t, None),
    };
    if int.len() < 9 || int.len() > 11 {
        return None;
    }
    let secs: u64 = num(int)?;
    let ms = match frac {
        None => 0,
        Some(f) => {
            let digits: String = f.chars().take(3).collect();
            let v: u64 = num(&digits)?;
            v * 10u64.pow(3 - digits.len() as u32)
        }
    };
    secs.checked_mul(1000)?.checked_add(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2023-01-05 12:00:01 UTC.
    const T: u64 = 1_672_920_001_000;

    #[test]
    fn every_form_logs_use() {
        for (text, want) in [
            ("2023/01/05 12:00:01.123", T + 123),
            ("2023/01/05 12:00:01", T),
            ("2023-01-05 12:00:01", T),
            ("2023-01-05T12:00:01+0000", T),
            ("2023-01-05T13:00:01+0100", T),
            ("2023-01-05T07:00:01-05:00", T),
            ("2023-01-05T12:00:01Z", T),
            ("01/05/2023 12:00:01 PM", T),
            ("01/05/2023 12:00:01 AM", T - 12 * 3600 * 1000),
            ("01/05/23 12:00:01", T),
            ("Thu Jan  5 12:00:01 2023", T),
            ("1672920001", T),
            ("1672920001.5", T + 500),
            ("  2023/01/05 12:00:01  ", T),
            ("20230105 12:00:01", T),
        ] {
            assert_eq!(parse(text), Some(want), "{text}");
        }
    }

    #[test]
    fn nonsense_is_none() {
        for text in [
            "",
            "12",
            "2023/13/05 12:00:01",
            "2023/01/05",
            "2023/01/05 25:00:01",
            "yesterday",
            "01/05/2023 13:00:01 PM",
            "1969-12-31 23:59:59",
            "99999999999999999999",
            "2023/01/05 12:00:01 +99",
            "\u{0}",
            "20231305 12:00:01",
            "2023010 12:00:01",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
    }

    /// A zone whose text holds a multi-byte character is no zone (it panicked: "byte index is
    /// not a char boundary").
    #[test]
    fn a_zone_with_a_multibyte_character_is_none() {
        for text in [
            "2023-01-05T12:00:01+1é0",
            "2023-01-05 12:00:01 +1é0",
            "01/05/2023 12:00:01 -é00",
            "2023-01-05T12:00:01+0é",
            "2023-01-05 12:00:01 +日本",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
    }

    /// Found by the `clock` fuzz target: a 12-digit year overflowed the day count (a panic with
    /// overflow checks on, a wrong time without).
    #[test]
    fn a_year_of_twelve_digits_is_no_time() {
        assert_eq!(civil_ms(927_151_279_151, 1, 5, 2, 0, 1, 0), None);
        assert_eq!(parse("u Jan 5 2:0:1 927151279151"), None);
        assert_eq!(civil_ms(i64::MIN, 1, 1, 0, 0, 0, 0), None);
    }

    #[test]
    fn the_epoch_and_leap_days() {
        assert_eq!(civil_ms(1970, 1, 1, 0, 0, 0, 0), Some(0));
        assert_eq!(civil_ms(2024, 2, 29, 0, 0, 0, 0), Some(1_709_164_800_000));
        assert_eq!(civil_ms(2000, 3, 1, 0, 0, 0, 0), Some(951_868_800_000));
    }
}
