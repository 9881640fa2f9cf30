//! UTC timestamps for records and file names (RFC 3339, no time-zone database needed), through
//! the `humantime` crate's RFC 3339 formatter and parser.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last second humantime formats (9999-12-31T23:59:59Z); later times would make its
/// `Display` fail.
const LAST_FORMATTABLE: Duration = Duration::from_secs(253_402_300_800 - 1);

/// Formats a time as RFC 3339 UTC with whole seconds: `2026-11-29T22:15:03Z`.
///
/// Times before 1970 are formatted as 1970-01-01T00:00:00Z, times after the year 9999 as
/// 9999-12-31T23:59:59Z (the range of RFC 3339's four-digit year).
pub fn rfc3339_utc(t: SystemTime) -> String {
    let t = t.clamp(UNIX_EPOCH, UNIX_EPOCH + LAST_FORMATTABLE);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The file-name form of an RFC 3339 UTC time: `2026-11-29T22-15-03Z` (colons become dashes,
/// fractions of a second are dropped). `None` if `rfc3339` does not start with
/// `YYYY-MM-DDTHH:MM:SS`.
pub(crate) fn file_stamp(rfc3339: &str) -> Option<String> {
    let head = rfc3339.get(..19)?;
    let ok = head.char_indices().all(|(i, c)| match i {
        4 | 7 => c == '-',
        10 => c == 'T',
        13 | 16 => c == ':',
        _ => c.is_ascii_digit(),
    });
    ok.then(|| format!("{}Z", head.replace(':', "-")))
}

/// Parses the start of an RFC 3339 UTC time (`2026-11-29T22:15:03Z`; fractions of a second and
/// whatever follows the seconds are ignored). `None` for other shapes, impossible dates
/// (month 13, February 30) or times before 1970.
pub fn parse_rfc3339_utc(s: &str) -> Option<SystemTime> {
    file_stamp(s)?;
    humantime::parse_rfc3339(&format!("{}Z", s.get(..19)?)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day in a century year divisible by 400) 12:34:56.
        let t = UNIX_EPOCH + Duration::from_secs(951_827_696);
        assert_eq!(rfc3339_utc(t), "2000-02-29T12:34:56Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_798_582_503);
        assert_eq!(rfc3339_utc(t), "2026-12-29T22:15:03Z");
        // Sub-second parts are dropped, and out-of-range times clamp instead of panicking.
        assert_eq!(
            rfc3339_utc(t + Duration::from_millis(999)),
            "2026-12-29T22:15:03Z"
        );
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH - Duration::from_secs(1)),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(400_000_000_000)),
            "9999-12-31T23:59:59Z"
        );
    }

    #[test]
    fn parse_inverts_format() {
        for secs in [0u64, 951_827_696, 1_798_582_503, 4_102_444_800] {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            assert_eq!(parse_rfc3339_utc(&rfc3339_utc(t)), Some(t));
        }
        assert_eq!(parse_rfc3339_utc("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339_utc("2026-02-30T00:00:00Z"), None);
        assert_eq!(parse_rfc3339_utc("1969-12-31T23:59:59Z"), None);
        assert_eq!(parse_rfc3339_utc("soon"), None);
        // Fractions of a second are dropped.
        assert_eq!(
            parse_rfc3339_utc("2000-02-29T12:34:56.999Z"),
            Some(UNIX_EPOCH + Duration::from_secs(951_827_696))
        );
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
