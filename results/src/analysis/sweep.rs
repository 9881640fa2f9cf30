//! Capacity sweep analysis: latency SLOs, the steps of a sweep, and its knee (the highest rate
//! that still meets the SLO).
//!
//! `connstorm sweep` probes the peak, runs one open-loop phase per offered rate
//! ([`step_rates`]), and calls [`knee`] on the [`Step`]s read from its phases
//! ([`steps_from_record`]); the rendering prints them.

use serde::{Deserialize, Serialize};

use crate::record::{Latency, Pattern, RunRecord};

/// Why an SLO, percentage or sweep range was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    /// The SLO text is not `p<percentile><<latency>`.
    #[error("invalid SLO {text:?}: {why}; write e.g. `p99<1ms`, `p99.9<500us` or `p50<=200us`")]
    Slo {
        /// What was given.
        text: String,
        /// What is wrong.
        why: String,
    },
    /// A percentage is not a number followed by `%`, or out of range.
    #[error("invalid percentage {text:?}: {why}; write e.g. `0.1%`, `10%` or `150%`")]
    Percent {
        /// What was given.
        text: String,
        /// What is wrong.
        why: String,
    },
    /// The sweep range is empty or backwards.
    #[error("invalid sweep range: {why}; e.g. `--from 10% --to 150% --steps 10`")]
    Range {
        /// What is wrong.
        why: String,
    },
}

/// A latency objective on handshake latency: the `quantile` must stay below (or at) `max_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Quantile, 0 < q < 1 (`p99` → 0.99).
    pub quantile: f64,
    /// Upper bound in ns.
    pub max_ns: u64,
    /// `true` for `<=`, `false` for `<`.
    pub inclusive: bool,
    /// The text it was parsed from, normalized (`p99<1ms`).
    pub text: String,
}

impl Slo {
    /// Parses `p99<1ms`, `p99.9<=500us`, `p50<200µs`, `p99 < 2.5ms`. Units: `ns`, `us`/`µs`,
    /// `ms`, `s`.
    ///
    /// # Errors
    /// [`SweepError::Slo`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Slo, SweepError> {
        let err = |why: &str| SweepError::Slo {
            text: text.to_string(),
            why: why.to_string(),
        };
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let rest = t
            .strip_prefix('p')
            .or_else(|| t.strip_prefix('P'))
            .ok_or_else(|| err("it must start with a percentile like `p99`"))?;
        let (pct, bound, inclusive) = if let Some((p, b)) = rest.split_once("<=") {
            (p, b, true)
        } else if let Some((p, b)) = rest.split_once('<') {
            (p, b, false)
        } else {
            return Err(err("it needs `<` or `<=` between percentile and latency"));
        };
        let pct: f64 = pct
            .parse()
            .map_err(|_| err("the percentile is not a number"))?;
        if pct.is_nan() || pct <= 0.0 || pct >= 100.0 {
            return Err(err("the percentile must be above 0 and below 100"));
        }
        let max_ns = parse_latency_ns(bound)
            .ok_or_else(|| err("the latency needs a unit: ns, us, ms or s"))?;
        if max_ns == 0 {
            return Err(err("the latency bound must be above zero"));
        }
        Ok(Slo {
            quantile: pct / 100.0,
            max_ns,
            inclusive,
            text: format!("p{pct}{}{bound}", if inclusive { "<=" } else { "<" }),
        })
    }

    /// Whether a latency (ns) at the SLO's quantile meets it.
    pub fn met_by(&self, latency_ns: u64) -> bool {
        if self.inclusive {
            latency_ns <= self.max_ns
        } else {
            latency_ns < self.max_ns
        }
    }
}

/// Parses a latency with a unit (`500us`, `1ms`, `2.5ms`, `1s`, `800ns`, `200µs`) into ns.
pub(crate) fn parse_latency_ns(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = [
        ("ns", 1.0),
        ("us", 1e3),
        ("µs", 1e3),
        ("ms", 1e6),
        ("s", 1e9),
    ]
    .iter()
    .find_map(|(u, m)| s.strip_suffix(u).map(|n| (n, *m)))?;
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * mult).round() as u64)
}

/// Parses a percentage (`0.1%`, `10%`, `150%`) into a fraction (`0.001`, `0.1`, `1.5`).
///
/// # Errors
/// [`SweepError::Percent`] without `%`, for non-numbers and negatives.
pub fn parse_percent(text: &str) -> Result<f64, SweepError> {
    let err = |why: &str| SweepError::Percent {
        text: text.to_string(),
        why: why.to_string(),
    };
    let num = text
        .trim()
        .strip_suffix('%')
        .ok_or_else(|| err("it needs a `%` sign"))?;
    let v: f64 = num.trim().parse().map_err(|_| err("not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(err("it must be zero or more"));
    }
    Ok(v / 100.0)
}

/// Offered rates of a sweep: `steps` rates evenly spaced from `from × peak` to `to × peak`
/// (fractions, e.g. 0.1 and 1.5), in increasing order.
///
/// # Errors
/// [`SweepError::Range`] if `steps` is 0, `from` ≤ 0, `to` < `from` or `peak_per_sec` ≤ 0.
pub fn step_rates(
    peak_per_sec: f64,
    from: f64,
    to: f64,
    steps: usize,
) -> Result<Vec<f64>, SweepError> {
    let bad = |why: String| Err(SweepError::Range { why });
    if steps == 0 {
        return bad("--steps must be at least 1".into());
    }
    if from.is_nan() || to.is_nan() || from <= 0.0 || to < from {
        return bad(format!(
            "--from ({:.0}%) must be above 0 and not above --to ({:.0}%)",
            from * 100.0,
            to * 100.0
        ));
    }
    if peak_per_sec.is_nan() || peak_per_sec <= 0.0 {
        return bad(format!(
            "the probed peak is {} connections/s: nothing to sweep",
            crate::numfmt::value(peak_per_sec)
        ));
    }
    Ok((0..steps)
        .map(|i| {
            let f = if steps == 1 {
                to
            } else {
                from + (to - from) * i as f64 / (steps - 1) as f64
            };
            peak_per_sec * f
        })
        .collect())
}

/// One step of a sweep, as the knee search sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Phase name it came from.
    pub name: String,
    /// Offered attempts per second.
    pub offered_per_sec: f64,
    /// Successful handshakes per second (`None`: no success, nothing measured; such a step
    /// never meets the criteria).
    pub achieved_per_sec: Option<f64>,
    /// Handshake latency at the SLO's quantile, ns (`None`: no successes).
    pub latency_ns: Option<u64>,
    /// Failed attempts / attempts.
    pub error_ratio: f64,
    /// Intended starts not made (in-flight bound reached or generator behind); they count
    /// against the step, never as errors hidden in the achieved rate.
    #[serde(default)]
    pub dropped: u64,
    /// Starts made later than intended.
    #[serde(default)]
    pub late: u64,
    /// Starts intended in the step (`attempts + dropped`).
    #[serde(default)]
    pub intended: u64,
}

impl Step {
    /// Dropped starts as a share of intended starts (`None` with none intended).
    pub fn dropped_ratio(&self) -> Option<f64> {
        (self.intended > 0).then(|| self.dropped as f64 / self.intended as f64)
    }

    /// Late starts as a share of intended starts (`None` with none intended).
    pub fn late_ratio(&self) -> Option<f64> {
        (self.intended > 0).then(|| self.late as f64 / self.intended as f64)
    }
}

/// The steps of a sweep record: its open-loop phases in offered-rate order, with handshake
/// latency at `quantile`.
pub fn steps_from_record(rec: &RunRecord, quantile: f64) -> Vec<Step> {
    let mut steps: Vec<Step> = rec
        .phases
        .iter()
        .filter(|p| matches!(p.pattern, Pattern::Open { .. }))
        .map(|p| Step {
            name: p.name.clone(),
            offered_per_sec: p.offered_per_sec.or(p.achieved_per_sec).unwrap_or(0.0),
            achieved_per_sec: p.achieved_per_sec,
            latency_ns: p
                .histograms
                .decode(Latency::Handshake)
                .ok()
                .flatten()
                .filter(|h| !h.is_empty())
                .map(|h| h.value_at_quantile(quantile)),
            error_ratio: p.error_ratio(),
            dropped: p.dropped,
            late: p.late,
            intended: p.attempts + p.dropped,
        })
        .collect();
    steps.sort_by(|a, b| a.offered_per_sec.total_cmp(&b.offered_per_sec));
    steps
}

/// What a step must meet to count as sustained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criteria {
    /// Latency objective.
    pub slo: Slo,
    /// Highest failed/attempts ratio, e.g. 0.001 (`--max-errors 0.1%`).
    pub max_error_ratio: f64,
    /// Lowest achieved/offered ratio (default 0.99: a step the generator or server cannot keep
    /// up with is not sustained).
    pub min_achieved_ratio: f64,
}

impl Criteria {
    /// Default lowest achieved/offered ratio: 0.99.
    pub const DEFAULT_MIN_ACHIEVED_RATIO: f64 = 0.99;

    /// Criteria with the default achieved/offered floor (0.99).
    pub fn new(slo: Slo, max_error_ratio: f64) -> Criteria {
        Criteria {
            slo,
            max_error_ratio,
            min_achieved_ratio: Self::DEFAULT_MIN_ACHIEVED_RATIO,
        }
    }
}

/// Whether one step meets the criteria.
pub(crate) fn step_ok(step: &Step, c: &Criteria) -> bool {
    step.latency_ns.is_some_and(|l| c.slo.met_by(l))
        && step.error_ratio <= c.max_error_ratio
        && step
            .achieved_per_sec
            .is_some_and(|a| a >= c.min_achieved_ratio * step.offered_per_sec)
}

/// The knee of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Index into the steps.
    pub index: usize,
    /// The step.
    pub step: Step,
    /// Its achieved rate per second (a passing step always has one).
    pub achieved_per_sec: f64,
    /// Its achieved rate per minute.
    pub cpm: f64,
    /// Achieved rate per server core (`None` when the core count is 0 or unknown).
    pub per_core_per_sec: Option<f64>,
    /// The first step above it that fails (`None`: no step failed).
    pub first_failing: Option<usize>,
}

/// Finds the knee: the step with the highest achieved rate among those meeting the criteria
/// and below the first failing step (a rate that passes only after an earlier rate failed is
/// noise, not capacity). `None` if even the first step fails.
///
/// `server_cores` gives the per-core figure (the number of server CPUs; 0 = unknown).
pub fn knee(steps: &[Step], c: &Criteria, server_cores: usize) -> Option<Knee> {
    let first_failing = steps.iter().position(|s| !step_ok(s, c));
    let passing = &steps[..first_failing.unwrap_or(steps.len())];
    // Every passing step achieved something (step_ok).
    let (index, step, achieved) = passing
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s, s.achieved_per_sec?)))
        .max_by(|a, b| a.2.total_cmp(&b.2))?;
    Some(Knee {
        index,
        step: step.clone(),
        achieved_per_sec: achieved,
        cpm: achieved * 60.0,
        per_core_per_sec: (server_cores > 0).then(|| achieved / server_cores as f64),
        first_failing,
    })
}

/// The SLO and error bound a sweep record was run with (its `config.slo` and
/// `config.max_errors`); `None` for a record that is not a sweep or lacks them.
pub(crate) fn criteria_of(rec: &RunRecord) -> Option<Criteria> {
    let slo = Slo::parse(rec.config.get("slo")?.as_str()?).ok()?;
    let max_errors = rec
        .config
        .get("max_errors")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.001);
    Some(Criteria::new(slo, max_errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_parses_forms_and_refuses_nonsense() {
        let s = Slo::parse("p99<1ms").unwrap();
        assert_eq!(
            (s.quantile, s.max_ns, s.inclusive),
            (0.99, 1_000_000, false)
        );
        let s = Slo::parse(" p99.9 <= 500us ").unwrap();
        assert!((s.quantile - 0.999).abs() < 1e-12);
        assert_eq!((s.max_ns, s.inclusive), (500_000, true));
        assert_eq!(Slo::parse("p50<200µs").unwrap().max_ns, 200_000);
        for bad in [
            "99<1ms", "p99>1ms", "p100<1ms", "p99<1", "p99<0ms", "pxx<1ms",
        ] {
            let e = Slo::parse(bad).unwrap_err();
            assert!(e.to_string().contains("p99<1ms"), "{bad}: {e}");
        }
        assert!(s.met_by(500_000) && !Slo::parse("p99<1ms").unwrap().met_by(1_000_000));
    }

    #[test]
    fn percentages_and_ranges() {
        assert_eq!(parse_percent("0.1%").unwrap(), 0.001);
        assert_eq!(parse_percent("150%").unwrap(), 1.5);
        assert!(parse_percent("10").is_err() && parse_percent("-1%").is_err());
        let r = step_rates(1_000.0, 0.1, 1.0, 10).unwrap();
        assert_eq!(r.len(), 10);
        assert!((r[0] - 100.0).abs() < 1e-9 && (r[9] - 1_000.0).abs() < 1e-9);
        assert!(r.windows(2).all(|w| w[0] < w[1]));
        assert!(step_rates(1_000.0, 1.5, 0.1, 10).is_err());
        assert!(step_rates(1_000.0, 0.1, 1.0, 0).is_err());
    }

    fn step(offered: f64, achieved: f64, p99_us: u64, errors: f64) -> Step {
        Step {
            name: format!("{offered}"),
            offered_per_sec: offered,
            achieved_per_sec: Some(achieved),
            latency_ns: Some(p99_us * 1_000),
            error_ratio: errors,
            dropped: 0,
            late: 0,
            intended: 0,
        }
    }

    fn criteria() -> Criteria {
        Criteria {
            slo: Slo::parse("p99<1ms").unwrap(),
            max_error_ratio: 0.001,
            min_achieved_ratio: 0.99,
        }
    }

    #[test]
    fn knee_is_the_last_rate_before_the_slo_breaks() {
        let steps = [
            step(1_000.0, 1_000.0, 100, 0.0),
            step(2_000.0, 2_000.0, 200, 0.0),
            step(3_000.0, 3_000.0, 900, 0.0),
            step(4_000.0, 3_990.0, 5_000, 0.0), // latency breaks the SLO
            step(5_000.0, 5_000.0, 800, 0.0),   // passes again: noise, not capacity
        ];
        let k = knee(&steps, &criteria(), 2).unwrap();
        assert_eq!(k.index, 2);
        assert_eq!(k.first_failing, Some(3));
        assert_eq!(k.cpm, 3_000.0 * 60.0);
        assert_eq!(k.per_core_per_sec, Some(1_500.0));
    }

    #[test]
    fn errors_and_shortfall_also_break_the_slo() {
        let errors = [
            step(1_000.0, 1_000.0, 100, 0.0),
            step(2_000.0, 2_000.0, 100, 0.01),
        ];
        assert_eq!(knee(&errors, &criteria(), 1).unwrap().index, 0);
        let short = [
            step(1_000.0, 1_000.0, 100, 0.0),
            step(2_000.0, 1_500.0, 100, 0.0),
        ];
        assert_eq!(knee(&short, &criteria(), 0).unwrap().per_core_per_sec, None);
        assert_eq!(knee(&short, &criteria(), 0).unwrap().index, 0);
        let none = [step(1_000.0, 1_000.0, 5_000, 0.0)];
        assert!(knee(&none, &criteria(), 1).is_none());
    }

    #[test]
    fn steps_come_from_open_loop_phases_in_rate_order() {
        let rec = RunRecord::example();
        let steps = steps_from_record(&rec, 0.99);
        assert_eq!(steps.len(), 1, "only the latency phase is open loop");
        let lat = rec.phase("latency").unwrap();
        let h = lat.histograms.decode(Latency::Handshake).unwrap().unwrap();
        assert_eq!(steps[0].latency_ns, Some(h.value_at_quantile(0.99)));
        assert_eq!(steps[0].error_ratio, lat.error_ratio());
    }
}
