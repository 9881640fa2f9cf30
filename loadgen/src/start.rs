//! When a generator of a multi-host run starts (`load --start-at T`): a common wall-clock
//! instant, or a lead from the command's start, and the wait until it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use common::error::BadInput;

/// `--start-at`: a wall-clock instant, or a lead from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// `+2s`: this long after the command started.
    In(Duration),
    /// `2026-12-01T07:00:00Z` (RFC 3339, UTC).
    At(SystemTime),
}

/// Parses `--start-at`: `+DURATION` (`+2s`, `+1m30s`, [`common::units::parse_duration`]) or an
/// RFC 3339 UTC time (`2026-12-01T07:00:00Z`, fractions of a second allowed).
///
/// # Errors
/// A message with an example of each form.
pub fn parse_start_at(s: &str) -> Result<StartAt, String> {
    let s = s.trim();
    if let Some(lead) = s.strip_prefix('+') {
        return common::units::parse_duration(lead).map(StartAt::In);
    }
    humantime::parse_rfc3339_weak(s).map(StartAt::At).map_err(|e| {
        format!(
            "invalid --start-at {s:?} ({e}): give an RFC 3339 UTC time like 2026-12-01T07:00:00Z, or +DURATION like +2s"
        )
    })
}

/// The planned start on the wall clock, as of `now`.
///
/// # Errors
/// Bad input for an instant before `now`, saying how far in the past it is.
pub fn planned_start(at: StartAt, now: SystemTime) -> Result<SystemTime, BadInput> {
    match at {
        StartAt::In(d) => Ok(now + d),
        StartAt::At(t) => match now.duration_since(t) {
            Ok(past) if !past.is_zero() => Err(BadInput(format!(
                "--start-at {} is {:.3} s in the past: give a later time (every generator must receive it before it passes) or +DURATION",
                humantime::format_rfc3339_millis(t),
                past.as_secs_f64()
            ))),
            _ => Ok(t),
        },
    }
}

/// The warning of a run interrupted at `now`, while it waited for its `--start-at` instant
/// `planned`: nothing was measured.
pub fn never_started_warning(planned: SystemTime, now: SystemTime) -> String {
    format!(
        "the run never started: interrupted while waiting for --start-at {} ({:.3} s before it), so nothing was attempted or measured",
        humantime::format_rfc3339_millis(planned),
        planned.duration_since(now).unwrap_or_default().as_secs_f64()
    )
}

/// Sleeps until `lead` before `t` (the load's own start takes the last stretch precisely),
/// waking every 20 ms to check `stop` (so a signal ends the wait within about 20 ms). Returns
/// false when `stop` was raised.
pub fn wait_until(t: SystemTime, lead: Duration, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        match t.duration_since(SystemTime::now()) {
            Ok(left) if left > lead => {
                std::thread::sleep((left - lead).min(Duration::from_millis(20)))
            }
            _ => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_at_takes_a_lead_or_a_utc_time_and_refuses_the_past() {
        assert_eq!(
            parse_start_at("+2s").unwrap(),
            StartAt::In(Duration::from_secs(2))
        );
        let t = parse_start_at("2026-12-01T07:00:00Z").unwrap();
        let StartAt::At(t) = t else { panic!("{t:?}") };
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_796_108_400
        );
        assert!(parse_start_at("tomorrow").unwrap_err().contains("RFC 3339"));
        let now = t + Duration::from_millis(1_500);
        let e = planned_start(StartAt::At(t), now).unwrap_err().to_string();
        assert!(e.contains("1.500 s in the past"), "{e}");
        assert_eq!(planned_start(StartAt::At(t), t).unwrap(), t);
        assert_eq!(
            planned_start(StartAt::In(Duration::from_secs(2)), t).unwrap(),
            t + Duration::from_secs(2)
        );
    }

    #[test]
    fn a_raised_stop_ends_the_wait_at_once() {
        let far = SystemTime::now() + Duration::from_secs(3600);
        assert!(!wait_until(far, Duration::ZERO, &AtomicBool::new(true)));
        let past = SystemTime::now() - Duration::from_secs(1);
        assert!(wait_until(past, Duration::ZERO, &AtomicBool::new(false)));
    }
}
