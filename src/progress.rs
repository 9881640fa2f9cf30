//! The per-second progress line every command prints (`load`, `bench`, `sweep`, `ab`): one
//! wording, one number format ([`results::numfmt`]).

use loadgen::TimelineRow;
use results::numfmt;

/// One per-second line of a load run. Rates are per second of the row's real length: a partial
/// second (the end of the window, or a signal that stopped the run within it) is scaled to /s
/// and marked with its length; a drain second after the window (no new starts) shows counts,
/// not rates. Closed loop says "started" (there is no offered rate), open loop "offered".
/// A second without a success prints `-` for its latency, never `0 ns`.
pub fn second_line(row: &TimelineRow, open_loop: bool) -> String {
    let lat = if row.successes == 0 {
        "handshake p50 - p99 -".to_string()
    } else {
        format!(
            "handshake p50 {} p99 {}",
            numfmt::ns(row.p50_ns as f64),
            numfmt::ns(row.p99_ns as f64)
        )
    };
    let mark = if row.warmup { " (warm-up)" } else { "" };
    if row.is_drain() {
        return format!(
            "t={:>4} s drain (after the run, no new starts): {} completed, {} failed, {} dropped (due before the end, never started), {lat}",
            row.t_secs,
            numfmt::count(row.successes),
            numfmt::count(row.failures),
            numfmt::count(row.dropped)
        );
    }
    let rate = |n: u64| format!("{}/s", numfmt::fixed(row.per_sec(n).unwrap_or(0.0), 0));
    let started = if open_loop {
        format!("offered {}", rate(row.offered))
    } else {
        format!("started {}", rate(row.attempts))
    };
    let partial = if row.is_partial() {
        format!(" (partial second: {:.3} s, scaled to /s)", row.length_secs)
    } else {
        String::new()
    };
    format!(
        "t={:>4} s {started}, achieved {}, errors {}, late {}, dropped {}, {lat}{partial}{mark}",
        row.t_secs,
        rate(row.successes),
        rate(row.failures),
        rate(row.late),
        rate(row.dropped),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, length_secs: f64, offered: u64, successes: u64) -> TimelineRow {
        TimelineRow {
            t_secs: t,
            warmup: false,
            offered,
            attempts: offered,
            successes,
            failures: 0,
            failures_by_cause: Default::default(),
            late: 0,
            dropped: 0,
            p50_ns: 1_000,
            p99_ns: 2_500_000,
            max_ns: 2_500_000,
            length_secs,
            handshake: None,
        }
    }

    #[test]
    fn whole_partial_drain_and_closed_loop_wording() {
        let l = second_line(&row(3, 1.0, 20_000, 19_990), true);
        assert!(
            l.starts_with("t=   3 s offered 20,000/s, achieved 19,990/s"),
            "{l}"
        );
        assert!(l.contains("p50 1.0 µs p99 2.50 ms"), "{l}");
        assert!(!l.contains("partial"), "{l}");
        // 40 in 0.4 s = 100/s, marked.
        let l = second_line(&row(1, 0.4, 40, 40), true);
        assert!(l.contains("offered 100/s, achieved 100/s"), "{l}");
        assert!(l.contains("(partial second: 0.400 s, scaled to /s)"), "{l}");
        let l = second_line(&row(2, 0.0, 3, 3), true);
        assert!(l.contains("drain") && l.contains("3 completed"), "{l}");
        let l = second_line(&row(0, 1.0, 7, 0), false);
        assert!(l.contains("started 7/s") && !l.contains("offered"), "{l}");
        assert!(
            l.contains("p50 - p99 -"),
            "no 0 ns latency without samples: {l}"
        );
    }
}
