//! UTC timestamps for records and file names (RFC 3339, no time-zone database needed).

use std::time::{SystemTime, UNIX_EPOCH};

/// Formats a time as RFC 3339 UTC with whole seconds: `2026-11-29T22:15:03Z`.
///
/// Times before 1970 are formatted as 1970-01-01T00:00:00Z.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// The file-name form of an RFC 3339 UTC time: `2026-11-29T22-15-03Z` (colons become dashes,
/// fractions of a second are dropped). `None` if `rfc3339` does not start with
/// `YYYY-MM-DDTHH:MM:SS`.
pub fn file_stamp(rfc3339: &str) -> Option<String> {
    let head = rfc3339.get(..19)?;
    let ok = head.char_indices().all(|(i, c)| match i {
        4 | 7 => c == '-',
        10 => c == 'T',
        13 | 16 => c == ':',
        _ => c.is_ascii_digit(),
    });
    ok.then(|| format!("{}Z", head.replace(':', "-")))
}

/// Parses the start of an RFC 3339 UTC time (`2026-11-29T22:15:03Z`, fractions of a second
/// ignored). `None` for other shapes or times before 1970.
pub fn parse_rfc3339_utc(s: &str) -> Option<SystemTime> {
    file_stamp(s)?;
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let secs = days_from_civil(y, mo as u32, d as u32) * 86_400 + h * 3_600 + mi * 60 + sec;
    u64::try_from(secs)
        .ok()
        .map(|s| UNIX_EPOCH + std::time::Duration::from_secs(s))
}

/// (year, month, day) to days since 1970-01-01, proleptic Gregorian (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day in a century year divisible by 400) 12:34:56.
        let t = UNIX_EPOCH + Duration::from_secs(951_827_696);
        assert_eq!(rfc3339_utc(t), "2000-02-29T12:34:56Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_798_582_503);
        assert_eq!(rfc3339_utc(t), "2026-12-29T22:15:03Z");
    }

    #[test]
    fn parse_inverts_format() {
        for secs in [0u64, 951_827_696, 1_798_582_503, 4_102_444_800] {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            assert_eq!(parse_rfc3339_utc(&rfc3339_utc(t)), Some(t));
        }
        assert_eq!(parse_rfc3339_utc("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339_utc("soon"), None);
    }

    #[test]
    fn file_stamp_replaces_colons_and_refuses_other_text() {
        assert_eq!(
            file_stamp("2026-11-29T22:15:03Z").as_deref(),
            Some("2026-11-29T22-15-03Z")
        );
        assert_eq!(
            file_stamp("2026-11-29T22:15:03.123Z").as_deref(),
            Some("2026-11-29T22-15-03Z")
        );
        assert_eq!(file_stamp("yesterday"), None);
        assert_eq!(file_stamp("2026-11-29 22:15:03Z"), None);
    }
}
