//! The text of a finished `connstorm sweep`: where server and load ran and why, the probed
//! peak with what limited it, one row per step (offered, achieved, the SLO's latency at its
//! percentile, errors, dropped and late starts, each side's CPU, whether it meets the criteria
//! and whether the load generator limited it), the knee — or, when the generator reached its
//! limit first, that the server's capacity is above the last step it could judge — and the
//! record's warnings.

use std::fmt::Write as _;

use crate::analysis::{search_end, step_ok, Criteria, Knee, Step};
use crate::numfmt;
use crate::record::RunRecord;

/// `98%`, or `-` when not recorded.
fn cpu(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.0}%"))
}

/// Why `step` misses the criteria, in words: `handshake p99 5.00 ms`, `1.2% errors`,
/// `achieved 91.0% of offered`.
fn misses(step: &Step, c: &Criteria) -> String {
    let mut why = Vec::new();
    match step.latency_ns {
        Some(l) if !c.slo.met_by(l) => {
            why.push(format!("{} {}", c.slo.column(), numfmt::ns(l as f64)))
        }
        None => why.push(format!("no {} sample", c.slo.latency.words())),
        _ => {}
    }
    if step.error_ratio > c.max_error_ratio {
        why.push(format!("{} errors", numfmt::pct(step.error_ratio)));
    }
    match step.achieved_per_sec {
        Some(a) if a < c.min_achieved_ratio * step.offered_per_sec => why.push(format!(
            "achieved {} of offered",
            numfmt::pct(a / step.offered_per_sec)
        )),
        None => why.push("no success".into()),
        _ => {}
    }
    why.join(", ")
}

/// ` on 1 server core` / ` = 12,000 conn/s per server core` / nothing (unknown cores).
fn per_core(k: &Knee, server_cores: usize) -> String {
    match (k.per_core_per_sec, server_cores) {
        (_, 1) => " on 1 server core".into(),
        (Some(c), n) if n > 1 => format!(" = {} conn/s per server core", numfmt::fixed(c, 0)),
        _ => String::new(),
    }
}

/// The knee line of a sweep (`knee: …`): the knee with the step that ended the search and who
/// limited it; or, when the load generator reached its limit first, that the server's capacity
/// is above the last step it could judge; or that no step met the criteria.
pub(crate) fn knee_line(
    record: &RunRecord,
    steps: &[Step],
    knee: Option<&Knee>,
    criteria: &Criteria,
    server_cores: usize,
) -> String {
    let rule = format!(
        "{} with ≤ {:.3}% errors",
        criteria.slo.text,
        criteria.max_error_ratio * 100.0
    );
    let end = search_end(steps, criteria);
    match (knee, end.client_limited) {
        _ if record.run.interrupted => {
            "knee: none stated — the sweep was interrupted, so not every step ran".to_string()
        }
        // The generator reached its limit before the server failed: what the steps show is a
        // lower bound of the server's capacity, never its knee.
        (k, Some(c)) => {
            let limited = &steps[c];
            let bound = match k {
                Some(k) => format!(
                    "the server's capacity is above {} CPM = {} conn/s{} ({}, the highest step meeting {rule} below it)",
                    numfmt::fixed(k.cpm, 0),
                    numfmt::fixed(k.achieved_per_sec, 0),
                    per_core(k, server_cores),
                    k.step.name
                ),
                None => format!(
                    "no step below it met {rule}, so no step measured the server"
                ),
            };
            format!(
                "knee: not reached — the generator, not the server, reached its limit at {} ({}); {bound}. To find the server's knee give the load more CPUs than the server (--load-cpus), or load it from more hosts",
                limited.name,
                limited.client_limits.join("; ")
            )
        }
        (Some(k), None) => {
            format!(
                "knee: {} CPM = {} conn/s{} at {} (highest step meeting {rule} before the first step that does not{})",
                numfmt::fixed(k.cpm, 0),
                numfmt::fixed(k.achieved_per_sec, 0),
                per_core(k, server_cores),
                k.step.name,
                // Steps after the first failing one that pass again are noise, not capacity
                // (`super::knee`): say so when there are any, so a reader does not look for them.
                match k.first_failing {
                    Some(f) => {
                        let failed = &steps[f];
                        let again = if steps.iter().skip(f + 1).any(|s| step_ok(s, criteria)) {
                            "; a later step that meets it again is not counted: the rate failed once below it"
                        } else {
                            ""
                        };
                        format!(
                            ", {}{again}; {} missed it ({}) with the generator keeping up (load CPU {}, server CPU {}): the server's limit",
                            failed.name,
                            failed.name,
                            misses(failed, criteria),
                            cpu(failed.load_cpu_pct),
                            cpu(failed.server_cpu_pct)
                        )
                    }
                    None => String::new(),
                }
            )
        }
        (None, None) => {
            format!("knee: no step met {rule} — lower --from or relax --slo")
        }
    }
}

/// The sweep's text: `steps` of `record` ([`crate::analysis::steps_from_record`]) against
/// `criteria`, its `knee` ([`crate::analysis::knee`]; none is stated for an interrupted run), per
/// server core when `server_cores` > 1, then one `warning:` line per record warning. The caller
/// adds the record's path. A record whose config says how the CPUs were placed
/// (`config.placement`) begins with that line.
pub fn sweep(
    record: &RunRecord,
    steps: &[Step],
    knee: Option<&Knee>,
    criteria: &Criteria,
    server_cores: usize,
) -> String {
    let mut out = String::new();
    if let Some(p) = record
        .config
        .get("placement")
        .and_then(serde_json::Value::as_str)
    {
        let _ = writeln!(out, "placement: {p}");
    }
    if let Some(p) = record.phase("peak") {
        let _ = writeln!(
            out,
            "probed peak: {} CPM = {} conn/s (closed loop){}",
            numfmt::fixed_opt(p.cpm, 0),
            numfmt::fixed_opt(p.achieved_per_sec, 0),
            super::bench_summary::peak_limit(record, p)
        );
    }
    let _ = writeln!(
        out,
        "{:<8} {:>12} {:>12} {:>9} {:>14} {:>8} {:>15} {:>15} {:>8} {:>10}  meets {}",
        "step",
        "offered/s",
        "achieved/s",
        "achieved%",
        criteria.slo.column(),
        "errors%",
        "dropped",
        "late",
        "load CPU",
        "server CPU",
        criteria.slo.text
    );
    // Dropped and late as count and share of the step's intended starts.
    let share = |n: u64, r: Option<f64>| match r {
        Some(r) => format!("{} ({})", numfmt::count(n), numfmt::pct(r)),
        None => numfmt::NA.to_string(),
    };
    for s in steps {
        let lat = s
            .latency_ns
            .map_or_else(|| numfmt::NA.to_string(), |n| numfmt::ns(n as f64));
        let achieved = match s.achieved_per_sec {
            Some(a) if s.offered_per_sec > 0.0 => numfmt::pct(a / s.offered_per_sec),
            _ => numfmt::NA.to_string(),
        };
        let meets = if step_ok(s, criteria) { "yes" } else { "no" };
        let meets = if s.client_limited() {
            format!("{meets} — client-limited: {}", s.client_limits.join("; "))
        } else {
            meets.to_string()
        };
        let _ = writeln!(
            out,
            "{:<8} {:>12} {:>12} {:>9} {:>14} {:>7.3}% {:>15} {:>15} {:>8} {:>10}  {meets}",
            s.name,
            // Offered rates are shares of the probed peak, not given digits: the same
            // precision as the achieved rates beside them.
            numfmt::fixed(s.offered_per_sec, 0),
            numfmt::fixed_opt(s.achieved_per_sec, 0),
            achieved,
            lat,
            s.error_ratio * 100.0,
            share(s.dropped, s.dropped_ratio()),
            share(s.late, s.late_ratio()),
            cpu(s.load_cpu_pct),
            cpu(s.server_cpu_pct),
        );
    }
    let _ = writeln!(
        out,
        "{}",
        knee_line(record, steps, knee, criteria, server_cores)
    );
    for w in &crate::analysis::warnings(record) {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Slo;

    /// `sweep` printed offered rates (shares of the probed peak) as "2,569.933 / 7,709.8 /
    /// 12,849.667" beside achieved rates in whole connections/s; a step without a success
    /// printed an achieved rate of 0.
    #[test]
    fn numbers_in_the_sweep_table_use_one_precision_and_no_rate_without_a_success() {
        let criteria = Criteria::new(Slo::parse("p99<1ms").unwrap(), 0.001);
        let step = |offered: f64, achieved: Option<f64>| Step {
            name: format!("step-{offered}"),
            offered_per_sec: offered,
            achieved_per_sec: achieved,
            latency_ns: achieved.map(|_| 100_000),
            error_ratio: if achieved.is_some() { 0.0 } else { 1.0 },
            ..Step::default()
        };
        let steps = [
            step(2_569.933_333, Some(2_569.5)),
            step(7_709.8, Some(7_709.8)),
            step(12_849.666_667, None),
        ];
        let r = RunRecord::new("x", serde_json::Value::Null);
        let t = sweep(&r, &steps, None, &criteria, 1);
        for (name, offered, achieved) in [
            ("step-2569.933333", "2,570", "2,570"),
            ("step-7709.8", "7,710", "7,710"),
            ("step-12849.666667", "12,850", "n/a"),
        ] {
            let row = t.lines().find(|l| l.starts_with(name)).unwrap();
            let cols: Vec<&str> = row.split_whitespace().collect();
            assert_eq!((cols[1], cols[2]), (offered, achieved), "{row}");
        }
        assert!(!t.contains("2,569.933") && !t.contains("7,709.8"), "{t}");
    }

    /// Statistics, kind "one noisy step": a step that meets the SLO again after one that failed
    /// is not the knee, and the knee line says which step failed first and that the later one
    /// is not counted (it used to say "highest step meeting" beside a higher passing step).
    #[test]
    fn the_knee_line_names_the_first_failing_step_and_the_later_pass() {
        let criteria = Criteria::new(Slo::parse("p99<1ms").unwrap(), 0.001);
        let step = |name: &str, rate: f64, p99_ns: u64| Step {
            name: name.into(),
            offered_per_sec: rate,
            achieved_per_sec: Some(rate),
            latency_ns: Some(p99_ns),
            error_ratio: 0.0,
            ..Step::default()
        };
        let steps = [
            step("step-1", 10_000.0, 100_000),
            step("step-2", 29_045.0, 200_000),
            step("step-3", 50_000.0, 5_000_000),
            step("step-4", 74_226.0, 300_000),
        ];
        let k = crate::analysis::knee(&steps, &criteria, 1).unwrap();
        let t = sweep(
            &RunRecord::new("x", serde_json::Value::Null),
            &steps,
            Some(&k),
            &criteria,
            1,
        );
        let line = t.lines().find(|l| l.starts_with("knee:")).unwrap();
        assert!(line.contains("= 29,045 conn/s"), "{line}");
        assert!(
            line.contains("before the first step that does not, step-3; a later step that meets it again is not counted"),
            "{line}"
        );
    }

    #[test]
    fn no_knee_is_said_with_the_fix_and_an_interrupted_sweep_states_none() {
        let criteria = Criteria::new(Slo::parse("p99<1ms").unwrap(), 0.001);
        let mut r = RunRecord::new("x", serde_json::Value::Null);
        let t = sweep(&r, &[], None, &criteria, 1);
        assert!(t.starts_with("step "), "{t}");
        assert!(
            t.contains(
                "knee: no step met p99<1ms with ≤ 0.100% errors — lower --from or relax --slo"
            ),
            "{t}"
        );
        r.run.interrupted = true;
        let t = sweep(&r, &[], None, &criteria, 1);
        assert!(
            t.contains("knee: none stated — the sweep was interrupted"),
            "{t}"
        );
    }

    /// Issue 37, "capacity (loopback)": the knee was declared at a step whose load CPU was 98%.
    /// The headline says the generator reached its limit and that the server's capacity is
    /// above the highest passing step below it; the step's row says why.
    #[test]
    fn a_client_limited_sweep_says_the_generator_reached_its_limit() {
        let criteria = Criteria::new(Slo::parse("p99<1ms").unwrap(), 0.001);
        let step = |name: &str, rate: f64, p99_ns: u64, limits: &[&str]| Step {
            name: name.into(),
            offered_per_sec: rate,
            achieved_per_sec: Some(rate),
            latency_ns: Some(p99_ns),
            client_limits: limits.iter().map(|s| s.to_string()).collect(),
            load_cpu_pct: Some(if limits.is_empty() { 40.0 } else { 98.3 }),
            server_cpu_pct: Some(49.8),
            ..Step::default()
        };
        let steps = [
            step("step-1", 10_000.0, 100_000, &[]),
            step("step-2", 40_500.0, 300_000, &[]),
            step("step-3", 101_249.0, 900_000, &["load CPU 98%"]),
        ];
        let k = crate::analysis::knee(&steps, &criteria, 1).unwrap();
        let t = sweep(
            &RunRecord::new("x", serde_json::Value::Null),
            &steps,
            Some(&k),
            &criteria,
            1,
        );
        let line = t.lines().find(|l| l.starts_with("knee:")).unwrap();
        assert!(
            line.starts_with("knee: not reached — the generator, not the server, reached its limit at step-3 (load CPU 98%); the server's capacity is above 2,430,000 CPM = 40,500 conn/s on 1 server core (step-2,"),
            "{line}"
        );
        assert!(!line.contains("101,249"), "{line}");
        let row = t.lines().find(|l| l.starts_with("step-3")).unwrap();
        assert!(
            row.contains("98%") && row.contains("yes — client-limited: load CPU 98%"),
            "{row}"
        );
        assert!(t.lines().next().unwrap().contains("handshake p99"), "{t}");
        // The first step already the generator's: no figure is the server's.
        let t = sweep(
            &RunRecord::new("x", serde_json::Value::Null),
            &steps[2..],
            None,
            &criteria,
            1,
        );
        assert!(
            t.contains("reached its limit at step-3 (load CPU 98%); no step below it met p99<1ms"),
            "{t}"
        );
    }
}
