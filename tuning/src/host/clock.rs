//! The host clock's synchronisation state (chrony, systemd-timesyncd), which makes a common
//! `--start-at` instant mean the same on every host of a multi-host run.

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
pub fn read_clock() -> ClockSync {
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
pub(crate) fn parse_chrony(text: &str) -> Option<ClockSync> {
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
pub(crate) fn parse_timedatectl(text: &str) -> Option<ClockSync> {
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
/// unsynchronised clock, or an offset above `bound_ms` (the skew a merge accepts,
/// `results::analysis::SKEW_BOUND_MS`).
pub fn clock_warning(c: &ClockSync, bound_ms: f64) -> Option<String> {
    let bound = bound_ms;
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

    /// The merge's skew bound (results::analysis::SKEW_BOUND_MS).
    const BOUND_MS: f64 = 10.0;

    #[test]
    fn clock_sync_is_read_from_chrony_or_timedatectl_text() {
        let chrony = "Reference ID    : A9FEA97B (169.254.169.123)\n\
                      Stratum         : 4\n\
                      System time     : 0.000012500 seconds slow of NTP time\n\
                      Leap status     : Normal\n";
        let c = parse_chrony(chrony).unwrap();
        assert_eq!(c.state, "synchronized");
        assert!((c.offset_ms.unwrap() + 0.0125).abs() < 1e-9);
        assert_eq!(clock_warning(&c, BOUND_MS), None);
        let off =
            parse_chrony(&chrony.replace("0.000012500 seconds slow", "0.025000000 seconds fast"))
                .unwrap();
        assert!(clock_warning(&off, BOUND_MS)
            .unwrap()
            .contains("25.0 ms off"));
        let lost = parse_chrony(&chrony.replace("Normal", "Not synchronised")).unwrap();
        assert_eq!(lost.state, "unsynchronized");
        assert!(clock_warning(&lost, BOUND_MS).is_some());
        assert_eq!(parse_chrony("506 Cannot talk to daemon\n"), None);
        let t = parse_timedatectl("Timezone=UTC\nNTP=yes\nNTPSynchronized=no\n").unwrap();
        assert_eq!(t.state, "unsynchronized");
        assert_eq!(parse_timedatectl("Timezone=UTC\n"), None);
    }
}
