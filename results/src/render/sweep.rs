//! The text of a finished `connstorm sweep`: the probed peak, one row per step (offered,
//! achieved, the SLO's percentile, errors, dropped and late starts, whether it meets the
//! criteria), the knee and the record's warnings.

use std::fmt::Write as _;

use crate::analysis::{Criteria, Knee, Step};
use crate::numfmt;
use crate::record::RunRecord;

/// The sweep's text: `steps` of `record` ([`crate::analysis::steps_from_record`]) against
/// `criteria`, its `knee` ([`crate::analysis::knee`]; none is stated for an interrupted run), per
/// server core when `server_cores` > 1, then one `warning:` line per record warning. The caller
/// adds the record's path.
pub fn sweep(
    record: &RunRecord,
    steps: &[Step],
    knee: Option<&Knee>,
    criteria: &Criteria,
    server_cores: usize,
) -> String {
    let mut out = String::new();
    if let Some(p) = record.phase("peak") {
        let _ = writeln!(
            out,
            "probed peak: {} CPM = {} conn/s (closed loop)",
            numfmt::fixed_opt(p.cpm, 0),
            numfmt::fixed_opt(p.achieved_per_sec, 0)
        );
    }
    let _ = writeln!(
        out,
        "{:<8} {:>14} {:>14} {:>9} {:>12} {:>9} {:>16} {:>16}  meets {}",
        "step",
        "offered/s",
        "achieved/s",
        "achieved%",
        format!("p{}", criteria.slo.quantile * 100.0),
        "errors%",
        "dropped",
        "late",
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
        let _ = writeln!(
            out,
            "{:<8} {:>14} {:>14} {:>9} {:>12} {:>8.3}% {:>16} {:>16}  {}",
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
            if crate::analysis::step_ok(s, criteria) {
                "yes"
            } else {
                "no"
            }
        );
    }
    match knee {
        _ if record.run.interrupted => {
            let _ = writeln!(
                out,
                "knee: none stated — the sweep was interrupted, so not every step ran"
            );
        }
        Some(k) => {
            let _ = writeln!(
                out,
                "knee: {} CPM = {} conn/s{} at {} (highest step meeting {} with ≤ {:.3}% errors before the first step that does not{})",
                numfmt::fixed(k.cpm, 0),
                numfmt::fixed(k.achieved_per_sec, 0),
                k.per_core_per_sec
                    .filter(|_| server_cores > 1)
                    .map(|c| format!(" = {} conn/s per server core", numfmt::fixed(c, 0)))
                    .unwrap_or_else(|| if server_cores == 1 {
                        " on 1 server core".into()
                    } else {
                        String::new()
                    }),
                k.step.name,
                criteria.slo.text,
                criteria.max_error_ratio * 100.0,
                // Steps after the first failing one that pass again are noise, not capacity
                // (`super::knee`): say so when there are any, so a reader does not look for them.
                match k.first_failing {
                    Some(f) if steps.iter().skip(f + 1).any(|s| crate::analysis::step_ok(s, criteria)) => format!(
                        ", {}; a later step that meets it again is not counted: the rate failed once below it",
                        steps[f].name
                    ),
                    Some(f) => format!(", {}", steps[f].name),
                    None => String::new(),
                }
            );
        }
        None => {
            let _ = writeln!(
                out,
                "knee: no step met {} with ≤ {:.3}% errors — lower --from or relax --slo",
                criteria.slo.text,
                criteria.max_error_ratio * 100.0
            );
        }
    }
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
            dropped: 0,
            late: 0,
            intended: 0,
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
            dropped: 0,
            late: 0,
            intended: 0,
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
}
