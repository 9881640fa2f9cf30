//! `load --segment i/N --start-at T`: one generator's share of a multi-host run, started at a
//! common wall-clock instant, and the host clock's sync state that makes such an instant mean
//! the same on every host.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use loadgen::segment::Segment;
use loadgen::{LoadConfig, Pattern};

use crate::error::bad_input;

/// `--start-at`: a wall-clock instant, or a lead from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// `+2s`: this long after the command started.
    In(Duration),
    /// `2026-12-01T07:00:00Z` (RFC 3339, UTC).
    At(SystemTime),
}

/// Parses `--start-at`: `+DURATION` (`+2s`, `+1m30s`) or an RFC 3339 UTC time
/// (`2026-12-01T07:00:00Z`, fractions of a second allowed).
pub fn parse_start_at(s: &str) -> Result<StartAt, String> {
    let s = s.trim();
    if let Some(lead) = s.strip_prefix('+') {
        return crate::units::parse_duration(lead).map(StartAt::In);
    }
    humantime::parse_rfc3339_weak(s).map(StartAt::At).map_err(|e| {
        format!(
            "invalid --start-at {s:?} ({e}): give an RFC 3339 UTC time like 2026-12-01T07:00:00Z, or +DURATION like +2s"
        )
    })
}

/// Parses `--segment i/N` (0-based).
pub fn parse_segment(s: &str) -> Result<Segment, String> {
    s.parse()
        .map_err(|e: loadgen::segment::SegmentError| e.to_string())
}

/// The planned start on the wall clock, as of `now`.
///
/// # Errors
/// Bad input (exit 2) for an instant before `now`, saying how far in the past it is.
pub fn planned_start(at: StartAt, now: SystemTime) -> anyhow::Result<SystemTime> {
    match at {
        StartAt::In(d) => Ok(now + d),
        StartAt::At(t) => match now.duration_since(t) {
            Ok(past) if !past.is_zero() => Err(bad_input(format!(
                "--start-at {} is {:.3} s in the past: give a later time (every generator must receive it before it passes) or +DURATION",
                humantime::format_rfc3339_millis(t),
                past.as_secs_f64()
            ))),
            _ => Ok(t),
        },
    }
}

/// Narrows `cfg` to `segment`'s share: the open-loop rate, the closed-loop concurrency and the
/// source addresses (a contiguous, disjoint slice) — see [`loadgen::segment`]. The default
/// in-flight bound (`max_in_flight_given` false) follows the smaller rate.
///
/// # Errors
/// Bad input when the share is empty (a rate, concurrency or source list smaller than `N`), or
/// the narrowed configuration does not validate.
pub fn apply_segment(
    mut cfg: LoadConfig,
    segment: Segment,
    max_in_flight_given: bool,
) -> anyhow::Result<LoadConfig> {
    let bad = |e: loadgen::segment::SegmentError| bad_input(format!("--segment: {e}"));
    cfg.pattern = match cfg.pattern {
        Pattern::Open {
            rate_per_sec,
            arrival,
        } => {
            let rate = segment.nonzero_rate(rate_per_sec).map_err(bad)?;
            if !max_in_flight_given {
                let d = loadgen::default_max_in_flight(rate, cfg.connect_timeout, cfg.cpus.len());
                cfg.max_in_flight = cfg.max_in_flight.min(d);
            }
            Pattern::Open {
                rate_per_sec: rate,
                arrival,
            }
        }
        Pattern::Closed { concurrency } => Pattern::Closed {
            concurrency: segment
                .nonzero_count(u64::from(concurrency), "connections in flight")
                .map_err(bad)? as u32,
        },
    };
    cfg.sources = segment
        .nonempty_slice(&cfg.sources, "source addresses")
        .map_err(bad)?;
    cfg.validate().map_err(|e| bad_input(e.to_string()))?;
    Ok(cfg)
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

/// The host clock's synchronisation, as far as it can be read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClockSync {
    /// `"synchronized"`, `"unsynchronized"` or `"unknown"`.
    pub state: String,
    /// Offset from the time source, ms (positive: this clock is fast); `None` when unreadable.
    pub offset_ms: Option<f64>,
    /// `"chronyc tracking"`, `"timedatectl show"` or `""`.
    pub source: String,
}

/// Reads the clock's sync state: `chronyc -n tracking` (offset and leap status) when chrony
/// answers, else `timedatectl show` (`NTPSynchronized=`), else `"unknown"`. Each tool is run
/// once; a missing tool costs one failed exec.
pub fn read_clock_sync() -> ClockSync {
    let run = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    if let Some(c) = run("chronyc", &["-n", "tracking"]).and_then(|t| parse_chrony(&t)) {
        return c;
    }
    if let Some(c) = run("timedatectl", &["show"]).and_then(|t| parse_timedatectl(&t)) {
        return c;
    }
    ClockSync {
        state: "unknown".into(),
        offset_ms: None,
        source: String::new(),
    }
}

/// Parses `chronyc tracking`: `Leap status : Normal` (else `Not synchronised`) and
/// `System time : 0.000012345 seconds fast of NTP time` (chronyc(1)). `None` without a leap
/// status line.
pub fn parse_chrony(text: &str) -> Option<ClockSync> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let leap = field("Leap status")?;
    let offset_ms = field("System time").and_then(|v| {
        let mut w = v.split_whitespace();
        let secs: f64 = w.next()?.parse().ok()?;
        let _ = w.next(); // "seconds"
        match w.next()? {
            "fast" => Some(secs * 1e3),
            "slow" => Some(-secs * 1e3),
            _ => None,
        }
    });
    Some(ClockSync {
        state: if leap == "Not synchronised" {
            "unsynchronized"
        } else {
            "synchronized"
        }
        .into(),
        offset_ms,
        source: "chronyc tracking".into(),
    })
}

/// Parses `timedatectl show`'s `NTPSynchronized=yes|no` (systemd-timedated). `None` without it.
pub fn parse_timedatectl(text: &str) -> Option<ClockSync> {
    let v = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("NTPSynchronized="))?;
    Some(ClockSync {
        state: if v.trim() == "yes" {
            "synchronized"
        } else {
            "unsynchronized"
        }
        .into(),
        offset_ms: None,
        source: "timedatectl show".into(),
    })
}

/// The warning to print about `c` for a generator of a multi-host run, if any: an unknown or
/// unsynchronised clock, or an offset above [`results::merge::SKEW_BOUND_MS`].
pub fn clock_warning(c: &ClockSync) -> Option<String> {
    let bound = results::merge::SKEW_BOUND_MS as f64;
    match (c.state.as_str(), c.offset_ms) {
        ("synchronized", Some(off)) if off.abs() > bound => Some(format!(
            "the host clock is {off:.1} ms off its time source ({}), above {bound} ms: generators on other hosts will not start together",
            c.source
        )),
        ("synchronized", _) => None,
        (state, _) => Some(format!(
            "host clock sync is {state}{}: a --start-at instant may differ between hosts (run chrony or systemd-timesyncd)",
            if c.source.is_empty() { String::new() } else { format!(" ({})", c.source) }
        )),
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
    fn clock_sync_is_read_from_chrony_or_timedatectl_text() {
        let chrony = "Reference ID    : A9FEA97B (169.254.169.123)\n\
                      Stratum         : 4\n\
                      System time     : 0.000012500 seconds slow of NTP time\n\
                      Leap status     : Normal\n";
        let c = parse_chrony(chrony).unwrap();
        assert_eq!(c.state, "synchronized");
        assert!((c.offset_ms.unwrap() + 0.0125).abs() < 1e-9);
        assert_eq!(clock_warning(&c), None);
        let off =
            parse_chrony(&chrony.replace("0.000012500 seconds slow", "0.025000000 seconds fast"))
                .unwrap();
        assert!(clock_warning(&off).unwrap().contains("25.0 ms off"));
        let lost = parse_chrony(&chrony.replace("Normal", "Not synchronised")).unwrap();
        assert_eq!(lost.state, "unsynchronized");
        assert!(clock_warning(&lost).is_some());
        assert_eq!(parse_chrony("506 Cannot talk to daemon\n"), None);
        let t = parse_timedatectl("Timezone=UTC\nNTP=yes\nNTPSynchronized=no\n").unwrap();
        assert_eq!(t.state, "unsynchronized");
        assert_eq!(parse_timedatectl("Timezone=UTC\n"), None);
    }
}
