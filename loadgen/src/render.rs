//! The text of a load run: the plan line printed before it, the one per-second line (`load`,
//! `bench`, `sweep` and `ab` print the same words) and the summary of a [`LoadReport`]. Every
//! number goes through [`common::numfmt`] (thousands separators, a space before a unit); JSON
//! keeps the raw numbers of the report itself.

use std::fmt;

use common::numfmt;

use crate::config::{Arrival, LoadConfig, Pattern};
use crate::latency::HistogramSummary;
use crate::report::{LoadReport, TimelineRow};

mod exchange;
mod hist;

use hist::{hist, overflow};

/// The shortest partial second whose counts are scaled to a per-second rate, seconds (100 ms,
/// as the server's progress lines: below it a rate says more about where the signal fell than
/// about the target).
pub const MIN_SCALED_SECS: f64 = 0.1;

/// One per-second line of a load run. Rates are per second of the row's real length: a partial
/// second (the end of the window, or a signal that stopped the run within it) is scaled to /s
/// and marked with its length; a drain second after the window (no new starts) shows counts,
/// not rates, and so does a partial second shorter than [`MIN_SCALED_SECS`] (a signal just after
/// a second began: scaled, 2 attempts in 0.3 ms read as 6,667/s), marked with its length.
/// `offered`: the open loop's rate (connections per second, the schedule's), `None`
/// for a closed loop. Open loop prints that rate and the starts made apart ("offered" is the
/// schedule, not what the generator got to: after it fell behind, the starts it made in a second
/// and the offered rate differ, and the drops are settled later — docs/output.md "Late and dropped
/// starts"); closed loop says "started" only. A second without a success prints `-` for its
/// latency, never `0 ns`.
///
/// Shape: `t=   3 s offered 20,000/s, started 19,995/s, achieved 19,990/s, errors 0/s, late 0/s,
/// dropped 0/s, handshake p50 1.0 µs p99 2.50 ms`.
pub fn second_line(row: &TimelineRow, offered: Option<f64>) -> String {
    let short = row.is_partial() && row.length_secs < MIN_SCALED_SECS;
    // No latency in this second's histogram (no success, or — with --http, where a success is
    // a complete response — successes whose handshakes fell in earlier seconds, as in a drain
    // second): no figure rather than "0 ns". A real handshake never takes 0 ns.
    let lat = if row.successes == 0 {
        "handshake p50 - p99 -".to_string()
    } else if row.p99_ns == 0 {
        // Successes whose handshakes this second's histogram does not hold: "30 completed,
        // handshake p50 -" read as a contradiction.
        "handshake p50 - p99 - (their TCP handshakes completed in earlier seconds)".to_string()
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
    let rate = |n: u64| {
        if short {
            numfmt::count(n)
        } else {
            format!("{}/s", numfmt::fixed(row.per_sec(n).unwrap_or(0.0), 0))
        }
    };
    let started = match offered {
        Some(r) => format!(
            "offered {}/s, started {}",
            numfmt::fixed(r, 0),
            rate(row.attempts)
        ),
        None => format!("started {}", rate(row.attempts)),
    };
    let partial = if short {
        format!(
            " (last {} of the run: counts, too short to scale to /s)",
            numfmt::ns(row.length_secs * 1e9)
        )
    } else if row.is_partial() {
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

/// The source addresses of a run in words: `kernel-chosen source address(es)`, or each source,
/// and — when the targets are of both families but the sources of one — which targets get a
/// kernel-chosen source (an attempt binds only sources of its target's family).
fn sources_text(cfg: &LoadConfig) -> String {
    if cfg.sources.is_empty() {
        return "kernel-chosen source address(es)".into();
    }
    let list: Vec<String> = cfg.sources.iter().map(ToString::to_string).collect();
    let mut t = format!("source address(es) {}", list.join(","));
    for (v4, fam) in [(true, "IPv4"), (false, "IPv6")] {
        let targets = cfg.targets.iter().any(|a| a.is_ipv4() == v4);
        let sources = cfg.sources.iter().any(|a| a.is_ipv4() == v4);
        if targets && !sources {
            t.push_str(&format!(
                " (no {fam} source: {fam} targets get a kernel-chosen one)"
            ));
        }
    }
    t
}

/// The line `connstorm load` prints before a run (after the wire, [`common::wire::describe`]):
/// pattern, targets, durations, CPUs, close mode, sources and connect timeout, e.g. `open loop
/// at 1,000/s (uniform arrivals, at most 3,000 in flight) to 127.0.0.1:9000 for 10s (+2s
/// warm-up) on CPUs 0-1, --close rst, kernel-chosen source address(es), connect timeout 3s`
/// (without the `connstorm load: ` prefix).
pub fn plan_line(cfg: &LoadConfig) -> String {
    let what = match cfg.pattern {
        Pattern::Open {
            rate_per_sec,
            arrival,
        } => format!(
            "open loop at {}/s ({} arrivals, at most {} in flight)",
            numfmt::exact(rate_per_sec),
            match arrival {
                Arrival::Uniform => "uniform",
                Arrival::Poisson => "poisson",
            },
            numfmt::count(cfg.max_in_flight as u64)
        ),
        Pattern::Closed { concurrency } => format!(
            "closed loop with {} in flight",
            numfmt::count(u64::from(concurrency))
        ),
    };
    let targets: Vec<String> = cfg.targets.iter().map(ToString::to_string).collect();
    format!(
        "{what} to {} for {} (+{} warm-up) on CPUs {}{}, --close {}, {}, connect timeout {}",
        targets.join(","),
        humantime::format_duration(cfg.duration),
        humantime::format_duration(cfg.warmup),
        common::cpulist::format(&cfg.cpus),
        if cfg.workers() > cfg.cpus.len() {
            format!(" ({} workers, oversubscribed)", cfg.workers())
        } else {
            String::new()
        },
        cfg.close.name(),
        sources_text(cfg),
        humantime::format_duration(cfg.connect_timeout),
    )
}

/// The text summary of a [`LoadReport`] (its `Display`): header, rate, attempts, `WARNING` lines,
/// the handshake / service / first-byte percentiles with their overflow lines, failures by cause
/// with their meaning, post-handshake failures, whole-run totals incl. warm-up, per-target lines
/// (when there are two or more targets) and one line per worker with its CPU time.
pub struct Summary<'a> {
    /// The run.
    pub report: &'a LoadReport,
    /// Lines printed as `  WARNING: …` after the attempts (e.g. the generator fell behind).
    pub warnings: &'a [String],
}

impl fmt::Display for Summary<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.report;
        let mode = match r.pattern {
            Pattern::Open { .. } => "open loop",
            Pattern::Closed { .. } => "closed loop",
        };
        writeln!(
            out,
            "connstorm load: {}; {mode}, --close {}, {} worker(s), {:.2} s measured{}{}",
            r.wire(),
            r.close.name(),
            r.workers.len(),
            r.measured_secs,
            if r.interrupted {
                " (INTERRUPTED: partial run)"
            } else {
                ""
            },
            common::tls::unverified_marker(r.tls.as_ref().is_none_or(|t| t.options.verified())),
        )?;
        if let Some(e) = &r.engine {
            writeln!(out, "  engine:      {}", e.line())?;
        }
        if let Some(p) = &r.port_slices {
            writeln!(out, "  ports:       {}", p.line())?;
        }
        let offered = r
            .offered_per_sec
            .map(|o| format!(" (offered {} conn/s)", numfmt::exact(o)))
            .unwrap_or_default();
        // A run without a success measured nothing: no rate, no percentiles (as `report` says).
        let measured = r.successes > 0;
        if !measured {
            writeln!(
                out,
                "  rate:        nothing measured — no connection succeeded in the measured {:.2} s{offered}",
                r.measured_secs
            )?;
        } else if r.measured_secs < MIN_SCALED_SECS {
            // A window of a few ms (a signal just after the warm-up): 66 successes in 32.5 ms
            // read as 2,028 conn/s and "101.41% achieved". The counts are below.
            writeln!(
                out,
                "  rate:        not scaled to /s — the measured window lasted only {} (under {} ms): see the counts{offered}",
                numfmt::ns(r.measured_secs * 1e9),
                (MIN_SCALED_SECS * 1e3) as u64
            )?;
        } else {
            let vs = match r.offered_per_sec {
                Some(o) => format!(
                    ", offered {} conn/s ({:.2}% achieved)",
                    numfmt::exact(o),
                    100.0 * r.achieved_per_sec / o
                ),
                None => String::new(),
            };
            writeln!(
                out,
                "  rate:        {} CPM = {} conn/s achieved{vs}",
                numfmt::fixed(r.cpm(), 0),
                numfmt::fixed(r.achieved_per_sec, 1)
            )?;
        }
        writeln!(
            out,
            "  attempts:    {} started, {} succeeded, {} failed, {} late, {} dropped",
            numfmt::count(r.attempts),
            numfmt::count(r.successes),
            numfmt::count(r.failures_total()),
            numfmt::count(r.late),
            numfmt::count(r.dropped)
        )?;
        if r.abandoned > 0 || r.interrupted {
            writeln!(
                out,
                "               {} abandoned: still waiting for their handshake (or, with --http/--tls, their exchange) when the run was interrupted (neither successes nor failures; attempts = {} succeeded + {} failed + {} abandoned)",
                numfmt::count(r.abandoned),
                numfmt::count(r.successes),
                numfmt::count(r.failures_total()),
                numfmt::count(r.abandoned)
            )?;
        }
        if r.completed_after_timeout > 0 {
            writeln!(
                out,
                "               {} handshakes completed only after --connect-timeout (a handshake slower than the timeout, or seen late by a generator stopped, starved or behind): counted ETIMEDOUT, not successes",
                numfmt::count(r.completed_after_timeout)
            )?;
        }
        for w in self.warnings {
            writeln!(out, "  WARNING: {w}")?;
        }
        if measured {
            hist(
                out,
                "handshake (scheduled start -> connected)",
                &HistogramSummary::of(&r.handshake),
            )?;
            overflow(out, &r.handshake_overflow)?;
            hist(
                out,
                "service   (socket() -> connected)       ",
                &HistogramSummary::of(&r.service),
            )?;
            overflow(out, &r.service_overflow)?;
            if let Some(fb) = &r.first_byte {
                hist(
                    out,
                    "first byte (scheduled start -> N bytes)  ",
                    &HistogramSummary::of(fb),
                )?;
            }
            if let Some(o) = &r.first_byte_overflow {
                overflow(out, o)?;
            }
        }
        if let Some(l) = &r.generator_lag {
            hist(
                out,
                "generator lag (actual - scheduled start)",
                &HistogramSummary::of(&l.hist),
            )?;
            overflow(out, &l.overflow)?;
            if !l.hist.is_empty()
                && l.hist.value_at_quantile(0.5) >= crate::MAX_GENERATOR_LAG_NS / 10 * 9
            {
                // The figure is the drop rule's bound, not a lag measured (`results`'
                // `generator_lag_artefact` says the same in records' reports).
                writeln!(
                    out,
                    "    not a measurement: the {} ms drop rule (the generator fell behind its schedule; the starts it made are those it reached just inside the rule, the rest were dropped: see dropped starts)",
                    crate::MAX_GENERATOR_LAG_NS / 1_000_000
                )?;
            }
            // The workers' CPU per attempt (whole run, exact), the spin's idle passes apart.
            let (run_ns, spun_ns, attempts) =
                r.workers.iter().fold((0u64, 0u64, 0u64), |(n, sp, a), w| {
                    (
                        n.saturating_add(w.cpu_run_ns),
                        sp.saturating_add(w.spun_ns),
                        a.saturating_add(w.attempts),
                    )
                });
            let spin = if l.pacing.spin_auto {
                auto_spin_text(&r.workers)
            } else {
                numfmt::ns(l.pacing.spin_ns as f64)
            };
            let per = |ns: u64| {
                ns.checked_div(attempts)
                    .map_or_else(|| "-".into(), |v| numfmt::ns(v as f64))
            };
            writeln!(
                out,
                "  timer slack: {} (load workers, PR_SET_TIMERSLACK); wakes {spin} before each due start and polls until it (spin); up to {} due starts per batch; load CPU {} per attempt of work, + {} spinning before due starts",
                l.timer_slack_ns
                    .map_or("default (50 µs), could not be set".into(), |n| format!(
                        "{n} ns"
                    )),
                l.pacing.start_batch,
                per(run_ns.saturating_sub(spun_ns)),
                per(spun_ns),
            )?;
        }
        if r.failures.is_empty() {
            writeln!(out, "  failures:    none")?;
        } else {
            writeln!(out, "  failures by cause:")?;
            for (name, n) in &r.failures {
                let why = crate::failures::explain(name)
                    .map(|w| format!(" — {w}"))
                    .unwrap_or_default();
                writeln!(out, "    {name:<14} {}{why}", numfmt::count(*n))?;
            }
        }
        if !r.post_connect_failures.is_empty() {
            writeln!(
                out,
                "  after the handshake (read / server close), counted as successes above:"
            )?;
            for (name, n) in &r.post_connect_failures {
                let why = if name == "ENODATA" {
                    " — the server closed before --expect-bytes arrived".to_string()
                } else if name == "ETIMEDOUT" && r.close == crate::config::CloseMode::Server {
                    // A keep-alive server never closes: each connection was held until the
                    // read deadline, and nothing else would say why (issue 35).
                    " — the server did not close: --close server held each of these connections open until the read deadline (--connect-timeout, again after the handshake) waiting for its FIN; that time is the deadline's, not the server's (a keep-alive server does not close: use --close rst or fin)".to_string()
                } else {
                    crate::failures::explain(name)
                        .filter(|_| matches!(name.as_str(), "ECONNRESET" | "EPIPE"))
                        .map(|w| format!(" — {w}"))
                        .unwrap_or_default()
                };
                writeln!(out, "    {name:<14} {}{why}", numfmt::count(*n))?;
            }
        }
        if let Some(t) = &r.tls {
            exchange::tls(out, t, r.measured_secs)?;
            // Issue 36 item 4: the crypto floor, and the client's CPU per handshake over it.
            if let Some(f) = &t.floor {
                writeln!(out, "  {}", f.line())?;
                let cpu: u64 = r.workers.iter().map(|w| w.cpu_run_ns).sum();
                if let Some((ns, full)) = t.cpu_per_handshake_ns(cpu) {
                    writeln!(
                        out,
                        "               {} (load workers' CPU over the whole run's TLS handshakes)",
                        f.ratio_line(ns, full)
                    )?;
                }
            }
        }
        if let Some(h) = &r.http {
            exchange::http(out, h, r.measured_secs)?;
        }
        let t = &r.total;
        writeln!(
            out,
            "  whole run incl. warm-up: {} attempts, {} succeeded, {} failed, {} late, {} dropped, {} abandoned, {} completed after the timeout",
            numfmt::count(t.attempts),
            numfmt::count(t.successes),
            numfmt::count(t.failures.values().sum::<u64>()),
            numfmt::count(t.late),
            numfmt::count(t.dropped),
            numfmt::count(t.abandoned),
            numfmt::count(t.completed_after_timeout)
        )?;
        targets(out, r)?;
        for w in &r.workers {
            let per = |ns: u64| {
                ns.checked_div(w.attempts)
                    .map_or_else(|| "-".into(), |v| numfmt::ns(v as f64))
            };
            writeln!(
                out,
                "  worker cpu {:>3}: {} attempts, {} successes, on CPU {:.3} s ({}/attempt, exact); user {:.3} s ({}/attempt) sys {:.3} s ({}/attempt) by tick samples{}",
                w.cpu,
                numfmt::count(w.attempts),
                numfmt::count(w.successes),
                w.cpu_run_ns as f64 / 1e9,
                per(w.cpu_run_ns),
                w.cpu_user_ns as f64 / 1e9,
                per(w.cpu_user_ns),
                w.cpu_sys_ns as f64 / 1e9,
                per(w.cpu_sys_ns),
                w.port_slice
                    .map_or_else(String::new, |(lo, hi)| format!("; ports {lo}-{hi}"))
            )?;
        }
        if r.workers_successes_never_accepted > 0 {
            writeln!(
                out,
                "  (the workers' successes include {} handshakes the server never accepted, failures in the totals: the kernel's counters do not say which worker made them)",
                numfmt::count(r.workers_successes_never_accepted)
            )?;
        }
        Ok(())
    }
}

/// Per target address (whole run), and each failure cause seen on one address while another
/// accepted, said in words.
fn targets(out: &mut fmt::Formatter<'_>, r: &LoadReport) -> fmt::Result {
    if r.per_target.len() < 2 {
        return Ok(());
    }
    writeln!(out, "  per target address (whole run):")?;
    for t in &r.per_target {
        let fails: Vec<String> = t
            .failures
            .iter()
            .map(|(k, v)| format!("{} {k}", numfmt::count(*v)))
            .collect();
        writeln!(
            out,
            "    {:<24} {} attempts, {} succeeded{}{}",
            t.target.to_string(),
            numfmt::count(t.attempts),
            numfmt::count(t.successes),
            if fails.is_empty() {
                String::new()
            } else {
                format!(", failed: {}", fails.join(", "))
            },
            if t.abandoned > 0 {
                format!(
                    ", {} abandoned at the interrupt",
                    numfmt::count(t.abandoned)
                )
            } else {
                String::new()
            }
        )?;
    }
    for t in r.per_target.iter().filter(|t| !t.failures.is_empty()) {
        let others: Vec<String> = r
            .per_target
            .iter()
            .filter(|a| a.successes > 0 && a.target != t.target)
            .map(|a| a.target.to_string())
            .collect();
        if others.is_empty() {
            continue;
        }
        for (cause, n) in &t.failures {
            writeln!(
                out,
                "  NOTE: {cause} on {} ({} of {} attempts) while {} accepts",
                t.target,
                numfmt::count(*n),
                numfmt::count(t.attempts),
                others.join(", ")
            )?;
        }
    }
    Ok(())
}

/// What `--spin auto` ran with: the spins measured by the workers alone on their CPU, and
/// the default where load workers share one (they measure nothing: `Pacing::spin_auto`).
fn auto_spin_text(workers: &[crate::report::LoadWorkerReport]) -> String {
    let alone = |w: &crate::report::LoadWorkerReport| {
        workers.iter().filter(|o| o.cpu == w.cpu).count() == 1
    };
    let measured: Vec<u64> = workers
        .iter()
        .filter(|w| alone(w))
        .map(|w| w.spin_ns)
        .collect();
    let shared = workers.len() - measured.len();
    let default = numfmt::ns(crate::SPIN_NS as f64);
    let (Some(&lo), Some(&hi)) = (measured.iter().min(), measured.iter().max()) else {
        return format!("{default} (--spin auto: every load CPU holds several workers, so none was measured; the default)");
    };
    let mut t = if lo == hi {
        format!("{} (--spin auto, measured)", numfmt::ns(lo as f64))
    } else {
        format!(
            "{} to {} (--spin auto, measured per worker)",
            numfmt::ns(lo as f64),
            numfmt::ns(hi as f64)
        )
    };
    if hi >= crate::AUTO_SPIN_MAX_NS {
        t = format!(
            "{t}; {} is the cap: the wake-up p99.9 measured was at or above it",
            numfmt::ns(crate::AUTO_SPIN_MAX_NS as f64)
        );
    }
    if shared > 0 {
        t = format!("{t}, {default} on the {shared} workers that share a CPU");
    }
    t
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use hdrhistogram::Histogram;

    use crate::latency::Overflow;

    use super::*;
    use crate::{CloseMode, LoadWorkerReport, TargetReport, Totals};

    fn row(t: u64, length_secs: f64, offered: u64, successes: u64) -> TimelineRow {
        TimelineRow {
            t_secs: t,
            offered,
            attempts: offered,
            successes,
            p50_ns: 1_000,
            p99_ns: 2_500_000,
            length_secs,
            ..TimelineRow::default()
        }
    }

    #[test]
    fn a_whole_second_has_separators_and_units() {
        let l = second_line(&row(3, 1.0, 20_000, 19_990), Some(20_000.0));
        assert!(
            l.starts_with("t=   3 s offered 20,000/s, started 20,000/s, achieved 19,990/s"),
            "{l}"
        );
        assert!(l.contains("p50 1.0 µs p99 2.50 ms"), "{l}");
        assert!(!l.contains("partial"), "{l}");
    }

    #[test]
    fn a_partial_second_is_scaled_to_per_second_and_marked() {
        // 40 in 0.4 s = 100/s, marked.
        let l = second_line(&row(1, 0.4, 40, 40), Some(100.0));
        assert!(
            l.starts_with("t=   1 s offered 100/s, started 100/s, achieved 100/s"),
            "{l}"
        );
        assert!(
            l.ends_with("(partial second: 0.400 s, scaled to /s)"),
            "{l}"
        );
    }

    #[test]
    fn a_very_short_last_second_shows_counts_and_its_length_not_rates() {
        // 2 in 0.3 ms: 6,667/s scaled, and "(partial second: 0.000 s" printed.
        let l = second_line(&row(5, 0.0003, 2, 2), Some(100.0));
        assert!(
            l.starts_with("t=   5 s offered 100/s, started 2, achieved 2, errors 0, late 0"),
            "{l}"
        );
        assert!(
            l.ends_with("(last 300.0 µs of the run: counts, too short to scale to /s)"),
            "{l}"
        );
        assert!(!l.contains("/s, achieved"), "{l}");
    }

    #[test]
    fn a_drain_second_shows_counts_not_rates() {
        let mut r = row(2, 0.0, 0, 3);
        r.failures = 1_200;
        r.dropped = 4;
        let l = second_line(&r, Some(100.0));
        assert!(
            l.starts_with("t=   2 s drain (after the run, no new starts): 3 completed, 1,200 failed, 4 dropped"),
            "{l}"
        );
        assert!(!l.contains("/s"), "a drain second has no rates: {l}");
        // Responses completed, their handshakes all in earlier seconds: no "p50 0 ns".
        let (mut h, mut empty) = (row(2, 0.0, 0, 44), row(2, 0.0, 0, 44));
        (h.p50_ns, h.p99_ns, h.max_ns) = (1_000, 2_000, 3_000);
        (empty.p50_ns, empty.p99_ns, empty.max_ns) = (0, 0, 0);
        let l = second_line(&h, Some(100.0));
        assert!(l.ends_with("handshake p50 1.0 µs p99 2.0 µs"), "{l}");
        let l = second_line(&empty, Some(100.0));
        assert!(
            l.ends_with(
                "handshake p50 - p99 - (their TCP handshakes completed in earlier seconds)"
            ),
            "{l}"
        );
    }

    /// The kind "the generator fell behind": a second in which the generator made fewer starts
    /// than the schedule offered prints the schedule's rate as offered and the starts it made
    /// apart (it used to print the starts made as "offered").
    #[test]
    fn an_open_loop_second_behind_its_schedule_says_offered_and_started_apart() {
        let l = second_line(&row(4, 1.0, 61_052, 61_000), Some(79_128.8));
        assert!(
            l.starts_with("t=   4 s offered 79,129/s, started 61,052/s, achieved 61,000/s"),
            "{l}"
        );
    }

    #[test]
    fn closed_loop_says_started_and_no_latency_without_a_success() {
        let l = second_line(&row(0, 1.0, 7, 0), None);
        assert!(l.starts_with("t=   0 s started 7/s, achieved 0/s"), "{l}");
        assert!(!l.contains("offered"), "{l}");
        assert!(l.contains("handshake p50 - p99 -"), "no 0 ns latency: {l}");
        assert!(!l.contains("0 ns"), "{l}");
    }

    fn histogram(values_ns: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for v in values_ns {
            h.record(*v).unwrap();
        }
        h
    }

    /// An open-loop report of 12,000 attempts: 10,000 succeeded, 1,500 ECONNREFUSED on the
    /// second target, 500 ETIMEDOUT, 3 handshakes above the histogram's range.
    fn report_with_failures_and_overflow() -> LoadReport {
        let a: std::net::SocketAddr = "127.0.0.1:9000".parse().unwrap();
        let b: std::net::SocketAddr = "[::1]:9000".parse().unwrap();
        let failures = BTreeMap::from([("ECONNREFUSED".into(), 1_500), ("ETIMEDOUT".into(), 500)]);
        LoadReport {
            close: CloseMode::Rst,
            pattern: Pattern::Open {
                rate_per_sec: 2_000.0,
                arrival: Arrival::Uniform,
            },
            measured_secs: 6.0,
            offered_per_sec: Some(2_000.0),
            achieved_per_sec: 10_000.0 / 6.0,
            offered: 12_000,
            attempts: 12_000,
            successes: 10_000,
            failures: failures.clone(),
            post_connect_failures: BTreeMap::new(),
            completed_after_timeout: 0,
            late: 25,
            dropped: 0,
            dropped_in_flight_full: 0,
            abandoned: 0,
            total: Totals {
                attempts: 12_000,
                successes: 10_000,
                failures: failures.clone(),
                late: 25,
                ..Totals::default()
            },
            handshake: histogram(&[50_000, 60_000, 2_000_000]),
            service: histogram(&[]),
            first_byte: None,
            handshake_overflow: Overflow {
                above: 3,
                range_max_ns: 60_000_000_000,
                true_max_ns: 75_000_000_000,
            },
            service_overflow: Overflow::default(),
            first_byte_overflow: None,
            generator_lag: None,
            per_target: vec![
                TargetReport {
                    target: a,
                    attempts: 6_000,
                    successes: 5_500,
                    failures: BTreeMap::from([("ETIMEDOUT".into(), 500)]),
                    abandoned: 0,
                },
                TargetReport {
                    target: b,
                    attempts: 6_000,
                    successes: 4_500,
                    failures: BTreeMap::from([("ECONNREFUSED".into(), 1_500)]),
                    abandoned: 0,
                },
            ],
            timeline: vec![],
            workers: vec![LoadWorkerReport {
                cpu: 1,
                attempts: 12_000,
                successes: 10_000,
                cpu_run_ns: 1_200_000_000,
                ..LoadWorkerReport::default()
            }],
            workers_successes_never_accepted: 0,
            workers_measured_successes_never_accepted: 0,
            interrupted: false,
            http: None,
            tls: None,
            engine: None,
            accept_stamps: None,
            port_slices: None,
        }
    }

    #[test]
    fn a_measured_window_of_a_few_ms_is_not_scaled_to_a_rate() {
        let mut r = report_with_failures_and_overflow();
        r.measured_secs = 0.0325;
        let text = Summary {
            report: &r,
            warnings: &[],
        }
        .to_string();
        assert!(
            text.contains("  rate:        not scaled to /s — the measured window lasted only 32.50 ms (under 100 ms): see the counts (offered 2,000 conn/s)\n"),
            "{text}"
        );
        assert!(!text.contains("achieved, offered"), "{text}");
    }

    #[test]
    fn a_report_with_failures_and_overflow_says_each_in_words() {
        let r = report_with_failures_and_overflow();
        let warnings = vec!["the generator fell behind its schedule".to_string()];
        let text = Summary {
            report: &r,
            warnings: &warnings,
        }
        .to_string();
        for want in [
            "connstorm load: wire: TCP, client RST after the handshake (SO_LINGER 0, no TIME_WAIT); open loop, --close rst, 1 worker(s), 6.00 s measured\n",
            "  rate:        100,000 CPM = 1,666.7 conn/s achieved, offered 2,000 conn/s (83.33% achieved)\n",
            "  attempts:    12,000 started, 10,000 succeeded, 2,000 failed, 25 late, 0 dropped\n",
            "  WARNING: the generator fell behind its schedule\n",
            "(n=3)\n",
            "    3 samples above 60.000 s (the histogram's range; recorded at its top for the percentiles); true max 75.000 s\n",
            "  service   (socket() -> connected)       : no samples (n=0)\n",
            "  failures by cause:\n    ECONNREFUSED   1,500 — ",
            "    ETIMEDOUT      500",
            "  whole run incl. warm-up: 12,000 attempts, 10,000 succeeded, 2,000 failed, 25 late, 0 dropped, 0 abandoned, 0 completed after the timeout\n",
            "    [::1]:9000               6,000 attempts, 4,500 succeeded, failed: 1,500 ECONNREFUSED\n",
            "  NOTE: ECONNREFUSED on [::1]:9000 (1,500 of 6,000 attempts) while 127.0.0.1:9000 accepts\n",
            "  worker cpu   1: 12,000 attempts, 10,000 successes, on CPU 1.200 s (100.0 µs/attempt, exact)",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        assert!(!text.contains("INTERRUPTED"), "{text}");
    }

    /// Issue 35 item 4: `load --http --close server` against a keep-alive server held every
    /// connection until the read deadline, and nothing said the server kept them open.
    #[test]
    fn a_server_that_did_not_close_is_said_under_close_server() {
        let mut r = report_with_failures_and_overflow();
        r.post_connect_failures = BTreeMap::from([("ETIMEDOUT".to_string(), 10_000)]);
        let text = |r: &LoadReport| {
            Summary {
                report: r,
                warnings: &[],
            }
            .to_string()
        };
        r.close = crate::config::CloseMode::Server;
        let t = text(&r);
        assert!(
            t.contains("    ETIMEDOUT      10,000 — the server did not close: --close server held each of these connections open until the read deadline"),
            "{t}"
        );
        r.close = crate::config::CloseMode::Rst;
        assert!(!text(&r).contains("did not close"), "{}", text(&r));
    }

    /// Issue 35 item 6: at a rate far above what the generator can start, its lag p50 = p99 =
    /// max = 100.01 ms is the 100 ms drop rule: the summary says so beside the figure, and
    /// says nothing of the kind for a lag of microseconds.
    #[test]
    fn a_generator_lag_at_the_drop_rule_is_labelled_not_a_measurement() {
        let mut r = report_with_failures_and_overflow();
        let lag = |ns: u64| crate::report::GeneratorLag {
            hist: histogram(&[ns; 50]),
            overflow: Overflow::default(),
            timer_slack_ns: Some(1),
            pacing: crate::config::Pacing::default(),
        };
        let text = |r: &LoadReport| {
            Summary {
                report: r,
                warnings: &[],
            }
            .to_string()
        };
        r.generator_lag = Some(lag(100_010_000));
        let t = text(&r);
        let at = t.find("generator lag").expect("lag line");
        assert!(
            t[at..].contains("p50 100.0")
                && t[at..].contains("\n    not a measurement: the 100 ms drop rule"),
            "{t}"
        );
        r.generator_lag = Some(lag(24_000));
        assert!(!text(&r).contains("not a measurement"), "{}", text(&r));
    }

    #[test]
    fn the_plan_line_names_pattern_targets_and_cpus() {
        let cfg = LoadConfig {
            targets: vec!["127.0.0.1:9000".parse().unwrap()],
            pattern: Pattern::Closed { concurrency: 1_500 },
            duration: std::time::Duration::from_secs(10),
            warmup: std::time::Duration::from_secs(2),
            cpus: vec![0, 1, 2],
            workers: 0,
            port_slices: crate::PortSlices::On,
            close: CloseMode::Fin,
            sources: vec![],
            connect_timeout: std::time::Duration::from_secs(3),
            expect_bytes: None,
            max_in_flight: 1_500,
            late_threshold: std::time::Duration::from_millis(1),
            http: None,
            tls: None,
            engine: crate::LoadEngine::Auto,
            pacing: crate::Pacing::default(),
            accept_stamps: None,
        };
        assert_eq!(
            plan_line(&cfg),
            "closed loop with 1,500 in flight to 127.0.0.1:9000 for 10s (+2s warm-up) on CPUs 0-2, \
             --close fin, kernel-chosen source address(es), connect timeout 3s"
        );
        // Targets of both families, sources of one: the plan says which targets get none.
        let mixed = LoadConfig {
            targets: vec![
                "127.0.0.1:9000".parse().unwrap(),
                "[::1]:9000".parse().unwrap(),
            ],
            sources: vec!["127.0.0.5".parse().unwrap()],
            ..cfg
        };
        let l = plan_line(&mixed);
        assert!(
            l.contains("source address(es) 127.0.0.5 (no IPv6 source: IPv6 targets get a kernel-chosen one)"),
            "{l}"
        );
    }

    /// A rate prints as exactly as it was given (`--rate 1.5/s` is `1.5/s`, never `2/s`), in the
    /// plan line and in the summary's offered rate; whole rates keep no decimals.
    #[test]
    fn rates_print_with_the_precision_they_were_given() {
        let open = |rate_per_sec| LoadConfig {
            targets: vec!["127.0.0.1:9000".parse().unwrap()],
            pattern: Pattern::Open {
                rate_per_sec,
                arrival: Arrival::Poisson,
            },
            duration: std::time::Duration::from_secs(4),
            warmup: std::time::Duration::ZERO,
            cpus: vec![1],
            workers: 0,
            port_slices: crate::PortSlices::On,
            close: CloseMode::Rst,
            sources: vec![],
            connect_timeout: std::time::Duration::from_secs(3),
            expect_bytes: None,
            max_in_flight: 12,
            late_threshold: std::time::Duration::from_millis(1),
            http: None,
            tls: None,
            engine: crate::LoadEngine::Auto,
            pacing: crate::Pacing::default(),
            accept_stamps: None,
        };
        assert!(
            plan_line(&open(1.5))
                .starts_with("open loop at 1.5/s (poisson arrivals, at most 12 in flight)"),
            "{}",
            plan_line(&open(1.5))
        );
        assert!(plan_line(&open(16_666.75)).starts_with("open loop at 16,666.75/s "));
        assert!(plan_line(&open(20_000.0)).starts_with("open loop at 20,000/s "));
        let mut r = report_with_failures_and_overflow();
        r.offered_per_sec = Some(1.5);
        let text = Summary {
            report: &r,
            warnings: &[],
        }
        .to_string();
        assert!(text.contains(", offered 1.5 conn/s ("), "{text}");
    }

    /// A run without a success measured nothing: the summary says so and prints no rate (no
    /// `0 CPM`) and no percentiles; attempts and failures are still there.
    #[test]
    fn a_run_without_a_success_says_nothing_measured() {
        let mut r = report_with_failures_and_overflow();
        r.successes = 0;
        r.achieved_per_sec = 0.0;
        r.failures = BTreeMap::from([("ECONNREFUSED".into(), 12_000)]);
        r.handshake = histogram(&[]);
        r.handshake_overflow = Overflow::default();
        let text = Summary {
            report: &r,
            warnings: &[],
        }
        .to_string();
        assert!(
            text.contains("  rate:        nothing measured — no connection succeeded in the measured 6.00 s (offered 2,000 conn/s)\n"),
            "{text}"
        );
        for banned in ["CPM", "p50", "no samples", "achieved"] {
            assert!(!text.contains(banned), "{banned:?} in\n{text}");
        }
        assert!(text.contains("0 succeeded, 12,000 failed"), "{text}");
        assert!(text.contains("    ECONNREFUSED   12,000 — "), "{text}");
    }
}
