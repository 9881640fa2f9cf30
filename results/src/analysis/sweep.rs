//! Capacity sweep analysis: latency SLOs (`slo`: [`Slo`], on the latency it names), the steps
//! of a sweep, who limited each step, and its knee (the highest rate the *server* sustains while
//! meeting the SLO).
//!
//! `connstorm sweep` probes the peak, runs one open-loop phase per offered rate
//! ([`step_rates`]), and calls [`knee`] on the [`Step`]s read from its phases
//! ([`steps_from_record`]); the rendering prints them. A step whose load generator reached its
//! own limit ([`Step::client_limits`]) ends the search: its figures are the generator's, so
//! no knee is declared from it or above it, and the knee below it is a lower bound of the
//! server's capacity ([`Knee::client_limited`]).

mod slo;

use serde::{Deserialize, Serialize};

use crate::record::{Pattern, RunRecord};

pub use slo::{Slo, SloLatency, SLO_LATENCIES};

/// Why an SLO, percentage or sweep range was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    /// The SLO text is not `[LATENCY] p<percentile><<latency>`.
    #[error("invalid SLO {text:?}: {why}; write e.g. `p99<1ms`, `p99.9<500us`, `p50<=200us` or `response p99<1ms`")]
    Slo {
        /// What was given.
        text: String,
        /// What is wrong.
        why: String,
    },
    /// The SLO names a latency the record (or the run) does not measure.
    #[error("the SLO bounds the {latency} latency, but {why}; name a latency the run measures (handshake and service always are)")]
    SloLatency {
        /// The latency's name (`response`, `accept-queue-wait`, …).
        latency: String,
        /// Which phase lacks it and what records it.
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
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
    /// Why the load generator, not the server, may have set this step's figures
    /// ([`crate::analysis::client_limits`]: `load CPU 98%`, `37.0% of starts late`, …); empty
    /// when it kept up. No knee is declared from such a step or above it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_limits: Vec<String>,
    /// The load workers' CPU use over the step, percent of their CPUs (`None`: not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_cpu_pct: Option<f64>,
    /// The server workers' CPU use over the step, percent of their CPUs (`None`: not ours, or
    /// not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_pct: Option<f64>,
}

impl Step {
    /// Whether the load generator reached its own limit in this step
    /// ([`Step::client_limits`]).
    pub fn client_limited(&self) -> bool {
        !self.client_limits.is_empty()
    }

    /// Dropped starts as a share of intended starts (`None` with none intended).
    pub fn dropped_ratio(&self) -> Option<f64> {
        (self.intended > 0).then(|| self.dropped as f64 / self.intended as f64)
    }

    /// Late starts as a share of intended starts (`None` with none intended).
    pub fn late_ratio(&self) -> Option<f64> {
        (self.intended > 0).then(|| self.late as f64 / self.intended as f64)
    }
}

/// The steps of a sweep record: its open-loop phases in offered-rate order, with the `latency`
/// at `quantile` (an SLO's [`Slo::latency`] and [`Slo::quantile`]; a phase without that
/// histogram has none: check [`SloLatency::missing_from`] first), each step's CPU use and
/// whether its load generator limited it ([`crate::analysis::client_limits`]).
pub fn steps_from_record(rec: &RunRecord, latency: SloLatency, quantile: f64) -> Vec<Step> {
    let busy = |c: &crate::record::SideCpu| {
        (c.wall_ns > 0 && c.cpus > 0).then(|| crate::analysis::saturation::side_busy_pct(c))
    };
    let mut steps: Vec<Step> = rec
        .phases
        .iter()
        .filter(|p| matches!(p.pattern, Pattern::Open { .. }))
        .map(|p| Step {
            name: p.name.clone(),
            offered_per_sec: p.offered_per_sec.or(p.achieved_per_sec).unwrap_or(0.0),
            achieved_per_sec: p.achieved_per_sec,
            latency_ns: latency
                .decode(p)
                .filter(|h| !h.is_empty())
                .map(|h| h.value_at_quantile(quantile)),
            error_ratio: p.error_ratio(),
            dropped: p.dropped,
            late: p.late,
            intended: p.attempts + p.dropped,
            client_limits: crate::analysis::client_limits(rec, p),
            load_cpu_pct: busy(&p.cpu.load),
            server_cpu_pct: p.cpu.server.as_ref().and_then(busy),
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
    /// The first step above it that fails the criteria while its generator kept up: the
    /// server's (`None`: no step failed before the generator reached its limit).
    pub first_failing: Option<usize>,
    /// The first step above it whose load generator reached its own limit
    /// ([`Step::client_limited`]), when it comes before any failing step: the search stopped
    /// there, so the knee is a lower bound of the server's capacity, not the server's knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_limited: Option<usize>,
}

/// Where the knee search stopped: the first step that fails the criteria with its generator
/// keeping up (the server's failure), or the first step the generator limited, whichever comes
/// first; both `None` when every step passed with the generator keeping up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SearchEnd {
    /// The first step the server failed (index), when before any client-limited step.
    pub failing: Option<usize>,
    /// The first step the load generator limited (index), when before any failing step.
    pub client_limited: Option<usize>,
}

impl SearchEnd {
    /// The index the search stopped at (`None`: it ran through every step).
    pub fn at(&self) -> Option<usize> {
        self.failing.or(self.client_limited)
    }
}

/// Where the knee search over `steps` stops ([`SearchEnd`]). A client-limited step stops it
/// whether or not it met the criteria: its figures are the generator's.
pub fn search_end(steps: &[Step], c: &Criteria) -> SearchEnd {
    match steps
        .iter()
        .position(|s| s.client_limited() || !step_ok(s, c))
    {
        Some(i) if steps[i].client_limited() => SearchEnd {
            failing: None,
            client_limited: Some(i),
        },
        Some(i) => SearchEnd {
            failing: Some(i),
            client_limited: None,
        },
        None => SearchEnd::default(),
    }
}

/// Finds the knee: the step with the highest achieved rate among those meeting the criteria
/// below where the search ends ([`search_end`]): the first failing step (a rate that passes only
/// after an earlier rate failed is noise, not capacity) or the first step the load generator
/// limited (never declared the server's). `None` if even the first step fails or is
/// client-limited.
///
/// `server_cores` gives the per-core figure (the number of server CPUs; 0 = unknown).
pub fn knee(steps: &[Step], c: &Criteria, server_cores: usize) -> Option<Knee> {
    let end = search_end(steps, c);
    let passing = &steps[..end.at().unwrap_or(steps.len())];
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
        first_failing: end.failing,
        client_limited: end.client_limited,
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
            ..Step::default()
        }
    }

    fn criteria() -> Criteria {
        Criteria {
            slo: Slo::parse("p99<1ms").unwrap(),
            max_error_ratio: 0.001,
            min_achieved_ratio: 0.99,
        }
    }

    /// Issue 37: the knee was "101,249 conn/s on 1 server core at step-6" while step-6's load
    /// CPU was 98.3%. A client-limited step ends the search: the knee is the highest passing
    /// step below it, and says so (a lower bound); a later server failure does not move it.
    #[test]
    fn the_knee_is_never_declared_from_a_client_limited_step() {
        let limited = |mut s: Step| {
            s.client_limits = vec!["load CPU 98%".into()];
            s
        };
        let steps = [
            step(1_000.0, 1_000.0, 100, 0.0),
            step(2_000.0, 2_000.0, 200, 0.0),
            limited(step(3_000.0, 3_000.0, 300, 0.0)), // passes, but the generator's
            step(4_000.0, 3_990.0, 5_000, 0.0),
        ];
        let k = knee(&steps, &criteria(), 1).unwrap();
        assert_eq!((k.index, k.achieved_per_sec), (1, 2_000.0));
        assert_eq!((k.first_failing, k.client_limited), (None, Some(2)));
        // A server failure before the generator's limit is the server's knee.
        let mut early = steps.clone();
        early[1] = step(2_000.0, 2_000.0, 5_000, 0.0);
        let k = knee(&early, &criteria(), 1).unwrap();
        assert_eq!(
            (k.index, k.first_failing, k.client_limited),
            (0, Some(1), None)
        );
        // The first step already client-limited: no knee, and where the search ended says why.
        let first = [limited(step(1_000.0, 1_000.0, 100, 0.0))];
        assert!(knee(&first, &criteria(), 1).is_none());
        assert_eq!(
            search_end(&first, &criteria()),
            SearchEnd {
                failing: None,
                client_limited: Some(0)
            }
        );
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
        let steps = steps_from_record(&rec, SloLatency::Handshake, 0.99);
        assert_eq!(steps.len(), 1, "only the latency phase is open loop");
        let lat = rec.phase("latency").unwrap();
        let h = lat
            .histograms
            .decode(crate::record::Latency::Handshake)
            .unwrap()
            .unwrap();
        assert_eq!(steps[0].latency_ns, Some(h.value_at_quantile(0.99)));
        assert_eq!(steps[0].error_ratio, lat.error_ratio());
    }
}
