//! The text of a server run: the per-second progress line (from two [`LiveStats`] snapshots) and
//! the final report (the `Display` of [`ReportText`]). Every number goes through
//! [`common::numfmt`] (thousands separators, a space before a unit: `t=   2 s`, as `connstorm
//! load` prints its seconds); JSON keeps the raw numbers of [`ServerReport`] itself.

use std::fmt;
use std::time::Duration;

use common::numfmt;

use crate::{LiveStats, ServerReport};

/// The shortest last interval that still gets a progress line: below it a scaled rate says more
/// about timer jitter than about the server.
pub const MIN_PARTIAL: Duration = Duration::from_millis(100);

/// One progress line: accepts per second over `interval` (the time since the previous line), per
/// worker min/max, totals. Rates are scaled by the real interval, so a late tick or a last partial
/// interval (`partial`, marked `(partial second: 0.40 s, scaled to /s)`) reads as a per-second
/// rate, never as a collapsed count. `elapsed` is the time since the start, printed in whole
/// seconds for full ticks (`t=   2 s`) and to 10 ms for a partial one (`t=  3.40 s`).
///
/// Shape: `t=   2 s accepts/s     1,000 (per worker min 400 max 600) total 2,000 errors 0`.
pub fn progress_line(
    elapsed: Duration,
    interval: Duration,
    prev: &LiveStats,
    cur: &LiveStats,
    partial: bool,
) -> String {
    let secs = interval.as_secs_f64().max(1e-9);
    let rates: Vec<u64> = cur
        .accepted_per_worker
        .iter()
        .zip(&prev.accepted_per_worker)
        .map(|(c, p)| (c.saturating_sub(*p) as f64 / secs).round() as u64)
        .collect();
    let sum = (cur.accepted().saturating_sub(prev.accepted()) as f64 / secs).round() as u64;
    let t = if partial {
        format!("t={:>6.2} s", elapsed.as_secs_f64())
    } else {
        format!("t={:>4} s", elapsed.as_secs_f64().round() as u64)
    };
    let mut line = format!(
        "{t} accepts/s {:>9} (per worker min {} max {}) total {} errors {}",
        numfmt::count(sum),
        numfmt::count(rates.iter().min().copied().unwrap_or(0)),
        numfmt::count(rates.iter().max().copied().unwrap_or(0)),
        numfmt::count(cur.accepted()),
        numfmt::count(cur.errors_total)
    );
    if partial && secs >= 1.0 {
        // The last interval, a tick late: not part of a second ("partial second: 1.01 s").
        line.push_str(&format!(" (last interval: {secs:.2} s, scaled to /s)"));
    } else if partial {
        line.push_str(&format!(" (partial second: {secs:.2} s, scaled to /s)"));
    } else if interval >= LONG_TICK {
        line.push_str(&format!(
            " (over {secs:.2} s: the watching process was stopped or starved; scaled to /s)"
        ));
    }
    line
}

/// A tick this much after the previous one covers missed seconds (a stopped or starved
/// process): its line says over how long its rate was taken.
pub const LONG_TICK: Duration = Duration::from_millis(1500);

/// The final report as text (its `Display`): engine, steering, mode, listen address, backlog and
/// whether a signal stopped the run; the epoll fallback reason; wall time and accepts; one table
/// row per worker (accepted, accepts/s, user and system CPU seconds, EMFILE back-offs, errors by
/// errno name) and the connections each left in its accept queue at stop.
pub struct ReportText<'a>(pub &'a ServerReport);

impl fmt::Display for ReportText<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        let secs = r.wall_time_secs().max(1e-9);
        writeln!(
            out,
            "engine {}{}, steering {}, mode {}, listen {}, backlog {}{}",
            r.engine,
            r.ring_setup
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default(),
            r.steering,
            r.mode,
            r.listen,
            numfmt::count(u64::from(r.backlog)),
            if r.interrupted {
                ", stopped by signal"
            } else {
                ""
            }
        )?;
        if let Some(why) = &r.fallback_reason {
            writeln!(out, "fell back to epoll: {why}")?;
        }
        if let Some(s) = r.syn_cpu() {
            writeln!(out, "{}", s.line())?;
        }
        writeln!(
            out,
            "wall time {secs:.3} s, accepted {} ({}/s averaged over the whole run, idle time included: the per-second lines show the rate while load ran)",
            numfmt::count(r.accepted()),
            numfmt::fixed(r.accepted() as f64 / secs, 1)
        )?;
        if matches!(r.mode, crate::Mode::Http { .. } | crate::Mode::Greet { .. }) {
            // Every accepted connection is accounted for: served, or why not (a client that
            // closed after its TLS handshake without a request was counted nowhere).
            let http = matches!(r.mode, crate::Mode::Http { .. });
            let unserved = r.accepted().saturating_sub(r.served());
            let rest = unserved
                .saturating_sub(r.bad_requests())
                .saturating_sub(r.tls_failed());
            let mut why = Vec::new();
            if r.bad_requests() > 0 {
                why.push(format!("{} bad requests", numfmt::count(r.bad_requests())));
            }
            if r.tls_failed() > 0 {
                why.push(format!(
                    "{} failed TLS handshakes",
                    numfmt::count(r.tls_failed())
                ));
            }
            if rest > 0 {
                why.push(format!(
                    "{} closed or reset by the client, or failed (errors column), before {}",
                    numfmt::count(rest),
                    if http {
                        "a whole request was in and answered"
                    } else {
                        "the whole greeting was written"
                    }
                ));
            }
            writeln!(
                out,
                "served {} (whole {} written){}",
                numfmt::count(r.served()),
                if http { "response" } else { "greeting" },
                if unserved == 0 {
                    String::new()
                } else {
                    format!(
                        "; not served {}: {}",
                        numfmt::count(unserved),
                        why.join(", ")
                    )
                }
            )?;
        }
        if r.workers.iter().any(|w| w.tls_accepted + w.tls_failed > 0) {
            let fails = r.tls_failures();
            let list: Vec<String> = fails
                .iter()
                .map(|(k, v)| format!("{k} {}", numfmt::count(*v)))
                .collect();
            writeln!(
                out,
                "tls: {} handshakes completed ({} resumed, {} full), {} failed{}",
                numfmt::count(r.tls_accepted()),
                numfmt::count(r.tls_resumed()),
                numfmt::count(r.tls_accepted() - r.tls_resumed()),
                numfmt::count(r.tls_failed()),
                if list.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", list.join(", "))
                }
            )?;
        }
        if r.bad_requests() > 0 {
            writeln!(
                out,
                "bad requests {} (the head was not an HTTP/1.x request: closed unanswered)",
                numfmt::count(r.bad_requests())
            )?;
        }
        // With TLS, each worker's completed and failed TLS handshakes have their own columns:
        // a failed handshake is not an errno error, and the `errors` column alone read `-`
        // beside 255 alerts.
        let tls = r.workers.iter().any(|w| w.tls_accepted + w.tls_failed > 0);
        writeln!(
            out,
            "{:>5} {:>12} {:>12} {:>9} {:>9} {:>9} {:>8}{}  errors (errno)",
            "cpu",
            "accepted",
            "accepts/s",
            "on_cpu_s",
            "user_s",
            "sys_s",
            "emfile",
            if tls {
                format!(" {:>10} {:>10}", "tls_done", "tls_failed")
            } else {
                String::new()
            }
        )?;
        for w in &r.workers {
            let errs: Vec<String> = w
                .errors
                .iter()
                .map(|(k, v)| format!("{k}={}", numfmt::count(*v)))
                .collect();
            writeln!(
                out,
                "{:>5} {:>12} {:>12} {:>9.3} {:>9.3} {:>9.3} {:>8}{}  {}",
                w.cpu,
                numfmt::count(w.accepted),
                numfmt::fixed(w.accepted as f64 / secs, 1),
                w.cpu_run_ns as f64 / 1e9,
                w.cpu_user_ns as f64 / 1e9,
                w.cpu_sys_ns as f64 / 1e9,
                numfmt::count(w.emfile_backoffs),
                if tls {
                    format!(
                        " {:>10} {:>10}",
                        numfmt::count(w.tls_accepted),
                        numfmt::count(w.tls_failed)
                    )
                } else {
                    String::new()
                },
                if errs.is_empty() {
                    "-".to_string()
                } else {
                    errs.join(" ")
                }
            )?;
            if w.left_in_queue > 0 {
                writeln!(
                    out,
                    "      {} connections left in the accept queue at stop (reset by the kernel)",
                    numfmt::count(w.left_in_queue)
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(per_worker: &[u64]) -> LiveStats {
        LiveStats {
            accepted_per_worker: per_worker.to_vec(),
            errors_total: 0,
            cpu_per_worker: Vec::new(),
            ..LiveStats::default()
        }
    }

    #[test]
    fn a_partial_last_second_is_scaled_and_marked() {
        let line = progress_line(
            Duration::from_millis(3400),
            Duration::from_millis(400),
            &stats(&[100, 200]),
            &stats(&[120, 240]),
            true,
        );
        // 60 accepts in 0.4 s is 150/s, not "60/s"; per worker 50/s and 100/s.
        assert!(
            line.starts_with("t=  3.40 s accepts/s       150 "),
            "{line}"
        );
        assert!(line.contains("min 50 max 100"), "{line}");
        assert!(line.contains("total 360 "), "{line}");
        assert!(
            line.ends_with("(partial second: 0.40 s, scaled to /s)"),
            "{line}"
        );
    }

    #[test]
    fn a_last_interval_of_a_second_or_more_is_not_called_partial() {
        let line = progress_line(
            Duration::from_millis(9010),
            Duration::from_millis(1010),
            &stats(&[0]),
            &stats(&[1010]),
            true,
        );
        assert!(
            line.ends_with("(last interval: 1.01 s, scaled to /s)"),
            "{line}"
        );
        assert!(!line.contains("partial"), "{line}");
    }

    #[test]
    fn a_tick_after_missed_seconds_says_over_how_long() {
        let line = progress_line(
            Duration::from_secs(5),
            Duration::from_millis(3500),
            &stats(&[296]),
            &stats(&[552]),
            false,
        );
        // 256 accepts over 3.5 s, not over the 20 ms since the last poll.
        assert!(line.starts_with("t=   5 s accepts/s        73 "), "{line}");
        assert!(
            line.ends_with(
                "(over 3.50 s: the watching process was stopped or starved; scaled to /s)"
            ),
            "{line}"
        );
    }

    #[test]
    fn a_late_full_tick_is_scaled_by_its_real_length_with_separators() {
        let line = progress_line(
            Duration::from_millis(2000),
            Duration::from_millis(1250),
            &stats(&[0, 0]),
            &stats(&[500_000, 750_000]),
            false,
        );
        assert_eq!(
            line,
            "t=   2 s accepts/s 1,000,000 (per worker min 400,000 max 600,000) total 1,250,000 errors 0"
        );
    }

    #[test]
    fn the_report_has_one_row_per_worker_with_separators() {
        let r = ServerReport {
            engine: crate::Engine::Epoll,
            steering: crate::SteeringUsed::None,
            fallback_reason: Some("io_uring_setup: EPERM".into()),
            ring_setup: None,
            mode: crate::Mode::Close,
            listen: "127.0.0.1:9000".parse().unwrap(),
            backlog: 65_535,
            workers: vec![crate::WorkerReport {
                cpu: 3,
                accepted: 12_345,
                served: 0,
                bad_requests: 0,
                tls_accepted: 0,
                tls_resumed: 0,
                tls_failed: 0,
                tls_failures: Default::default(),
                syn_cpu: None,
                alloc_cpu: None,
                errors: [("EMFILE".to_string(), 1_200)].into_iter().collect(),
                emfile_backoffs: 7,
                cpu_run_ns: 1_760_000_000,
                cpu_user_ns: 250_000_000,
                cpu_sys_ns: 1_500_000_000,
                left_in_queue: 1_500,
            }],
            wall_time_ns: 2_000_000_000,
            interrupted: true,
        };
        let t = ReportText(&r).to_string();
        for want in [
            "engine epoll, steering none, mode close, listen 127.0.0.1:9000, backlog 65,535, stopped by signal\n",
            "fell back to epoll: io_uring_setup: EPERM\n",
            "wall time 2.000 s, accepted 12,345 (6,172.5/s averaged over the whole run, idle time included: the per-second lines show the rate while load ran)\n",
            "    3       12,345      6,172.5     1.760     0.250     1.500        7  EMFILE=1,200\n",
            "      1,500 connections left in the accept queue at stop (reset by the kernel)\n",
        ] {
            assert!(t.contains(want), "missing {want:?} in\n{t}");
        }
        assert!(!t.contains("tls_failed"), "{t}");
        // With TLS, failed handshakes have their own column (`errors` read `-` beside them).
        let mut r = r;
        r.workers[0].tls_accepted = 10;
        r.workers[0].tls_failed = 255;
        r.workers[0].errors.clear();
        let t = ReportText(&r).to_string();
        for want in [
            "  cpu     accepted    accepts/s  on_cpu_s    user_s     sys_s   emfile   tls_done tls_failed  errors (errno)\n",
            "    3       12,345      6,172.5     1.760     0.250     1.500        7         10        255  -\n",
        ] {
            assert!(t.contains(want), "missing {want:?} in\n{t}");
        }
        // `--mode http`: every accepted connection is served or said why not; TLS clients that
        // closed after the handshake without a request were counted nowhere.
        r.mode = crate::Mode::Http { body_bytes: 0 };
        r.workers[0].served = 12_000;
        r.workers[0].bad_requests = 40;
        let t = ReportText(&r).to_string();
        let want = "served 12,000 (whole response written); not served 345: 40 bad requests, 255 failed TLS handshakes, 50 closed or reset by the client, or failed (errors column), before a whole request was in and answered\n";
        assert!(t.contains(want), "missing {want:?} in\n{t}");
        r.workers[0].served = 12_345 - 40 - 255;
        let t = ReportText(&r).to_string();
        assert!(
            t.contains("served 12,050 (whole response written); not served 295: 40 bad requests, 255 failed TLS handshakes\n"),
            "{t}"
        );
        r.workers[0].served = 12_345;
        let t = ReportText(&r).to_string();
        assert!(
            t.contains("served 12,345 (whole response written)\n"),
            "{t}"
        );
    }
}
