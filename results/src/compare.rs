//! A/B comparison of two sets of trials (kernel A vs kernel B, a sysctl off vs on).
//!
//! For each metric: median, min and max per side, the relative change of the median (B vs A),
//! a 95% confidence interval for it ([`crate::stats::bootstrap_relative_change`]), and a
//! direction-aware verdict: *better* / *worse* when the interval excludes zero, *no significant
//! change* when it includes zero, *inconclusive* with fewer than 2 trials a side.
//!
//! Which figure of a record each metric reads (see [`metric_values`]):
//! - rate and CPU metrics come from the *rate phase*: `peak`, else the first closed-loop
//!   phase, else the first phase;
//! - latency metrics come from the *latency phase*: `latency`, else the last open-loop phase,
//!   else the first phase.

mod render;

use serde::{Deserialize, Serialize};

pub use render::{render, Format};

use crate::histogram::LatencySummary;
use crate::record::{Latency, Pattern, PhaseRecord, RunRecord};
use crate::stats::{self, Interval, Spread};

/// Confidence level of the intervals: 95%.
pub const CONFIDENCE: f64 = 0.95;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// More is better (connections/s).
    HigherIsBetter,
    /// Less is better (latency, CPU per connection, sys%).
    LowerIsBetter,
}

/// The verdict on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is better than A: the interval excludes zero on the good side.
    Better,
    /// B is worse than A: the interval excludes zero on the bad side.
    Worse,
    /// The interval includes zero.
    NoSignificantChange,
    /// No interval: fewer than [`stats::MIN_TRIALS`] trials on a side, or undefined change.
    Inconclusive,
}

impl Verdict {
    /// Words for people: `better`, `worse`, `no significant change`, `inconclusive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One metric compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Metric name, e.g. `connections/s`, `handshake p99`.
    pub name: String,
    /// Which phase of each record the metric reads: `peak` (the rate phase) or `latency` (the
    /// latency phase), see [`rate_phase`] and [`latency_phase`]; empty when not from a record.
    #[serde(default)]
    pub phase: String,
    /// Unit of the values, e.g. `conn/s`, `µs`, `%`.
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// Side A's trials.
    pub a: Spread,
    /// Side B's trials.
    pub b: Spread,
    /// `median(B) / median(A) - 1` (`0.1` = +10%); `NaN` if A's median is 0.
    pub relative_change: f64,
    /// 95% interval for the relative change (`None`: too few trials).
    pub interval: Option<Interval>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Compares one metric given as plain samples (one value per trial).
pub fn compare_samples(
    name: &str,
    unit: &str,
    direction: Direction,
    a: &[f64],
    b: &[f64],
) -> MetricComparison {
    let interval = stats::bootstrap_relative_change(a, b, CONFIDENCE);
    let verdict = match interval {
        None => Verdict::Inconclusive,
        Some(i) if !i.excludes_zero() => Verdict::NoSignificantChange,
        Some(i) => {
            let up = i.low > 0.0;
            match (up, direction) {
                (true, Direction::HigherIsBetter) | (false, Direction::LowerIsBetter) => {
                    Verdict::Better
                }
                _ => Verdict::Worse,
            }
        }
    };
    MetricComparison {
        name: name.to_string(),
        phase: String::new(),
        unit: unit.to_string(),
        direction,
        a: Spread::of(a),
        b: Spread::of(b),
        relative_change: stats::relative_change(a, b),
        interval,
        verdict,
    }
}

/// A full comparison of two trial sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// How intervals were computed, for the output (names the method, level, resamples, seed).
    pub method: String,
    /// Labels of A's records (one per trial, may repeat).
    pub a_labels: Vec<String>,
    /// Labels of B's records.
    pub b_labels: Vec<String>,
    /// The metrics, in [`METRICS`] order; metrics missing from some record are left out.
    pub metrics: Vec<MetricComparison>,
    /// Metrics left out and why; and any other caveat (interrupted trials, drops).
    pub notes: Vec<String>,
}

/// The metrics compared: name, unit, direction, and the phase they are read from ([`PEAK`]:
/// [`rate_phase`], [`LATENCY`]: [`latency_phase`]).
pub const METRICS: [(&str, &str, Direction, &str); 8] = [
    ("connections/s", "conn/s", Direction::HigherIsBetter, PEAK),
    ("handshake p50", "µs", Direction::LowerIsBetter, LATENCY),
    ("handshake p99", "µs", Direction::LowerIsBetter, LATENCY),
    ("handshake max", "µs", Direction::LowerIsBetter, LATENCY),
    ("first-byte p99", "µs", Direction::LowerIsBetter, LATENCY),
    ("server CPU per conn", "µs", Direction::LowerIsBetter, PEAK),
    ("load CPU per conn", "µs", Direction::LowerIsBetter, PEAK),
    ("sys %", "%", Direction::LowerIsBetter, PEAK),
];

/// Phase label of the metrics read from [`rate_phase`] (closed loop, as fast as it goes).
pub const PEAK: &str = "peak";

/// Phase label of the metrics read from [`latency_phase`] (open loop at a fixed offered rate).
pub const LATENCY: &str = "latency";

/// What `sys %` is, for the notes of a comparison.
pub const SYS_PCT_MEANING: &str = "sys %: system CPU time of the server and load workers as a share of their CPU capacity (wall time × CPUs they ran on) during the peak phase; kernel work per connection shows here";

/// The phase rate and CPU metrics are read from (see the module docs).
pub fn rate_phase(rec: &RunRecord) -> Option<&PhaseRecord> {
    rec.phase("peak")
        .or_else(|| {
            rec.phases
                .iter()
                .find(|p| matches!(p.pattern, Pattern::Closed { .. }))
        })
        .or_else(|| rec.phases.first())
}

/// The phase latency metrics are read from (see the module docs).
pub fn latency_phase(rec: &RunRecord) -> Option<&PhaseRecord> {
    rec.phase("latency")
        .or_else(|| {
            rec.phases
                .iter()
                .rev()
                .find(|p| matches!(p.pattern, Pattern::Open { .. }))
        })
        .or_else(|| rec.phases.first())
}

fn summary(phase: &PhaseRecord, which: Latency) -> Option<LatencySummary> {
    let h = phase.histograms.decode(which).ok()??;
    (!h.is_empty()).then(|| LatencySummary::of(&h))
}

/// The value of each of [`METRICS`] in one record (`None`: not measured in it).
pub fn metric_values(rec: &RunRecord) -> [Option<f64>; 8] {
    let rate = rate_phase(rec);
    let lat = latency_phase(rec);
    let hs = lat.and_then(|p| summary(p, Latency::Handshake));
    let fb = lat.and_then(|p| summary(p, Latency::FirstByte));
    let us = |ns: u64| ns as f64 / 1e3;
    let sys_pct = rate.and_then(|p| {
        let sides = p.cpu.server.into_iter().chain([p.cpu.load]);
        let (sys, cap) = sides.fold((0.0, 0.0), |(s, c), side| {
            (
                s + side.sys_ns as f64,
                c + side.wall_ns as f64 * side.cpus as f64,
            )
        });
        (cap > 0.0).then_some(sys / cap * 100.0)
    });
    [
        rate.map(|p| p.achieved_per_sec),
        hs.map(|s| us(s.p50_ns)),
        hs.map(|s| us(s.p99_ns)),
        hs.map(|s| us(s.max_ns)),
        fb.map(|s| us(s.p99_ns)),
        rate.and_then(|p| p.cpu.server).map(|c| c.us_per_conn()),
        rate.map(|p| p.cpu.load.us_per_conn()).filter(|&v| v > 0.0),
        sys_pct,
    ]
}

/// Says which record phase each metric group was read from, naming the phases found.
fn phase_note<'a>(recs: impl Iterator<Item = &'a RunRecord> + Clone) -> String {
    let names = |pick: fn(&RunRecord) -> Option<&PhaseRecord>| {
        let mut v: Vec<&str> = recs
            .clone()
            .filter_map(|r| pick(r).map(|p| p.name.as_str()))
            .collect();
        v.sort_unstable();
        v.dedup();
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(", ")
        }
    };
    format!(
        "phases: \"{PEAK} phase\" metrics (rate, CPU, sys %) are read from record phase {} (closed loop, as fast as it goes); \"{LATENCY} phase\" metrics (handshake and first-byte latency) from phase {} (open loop at a fixed offered rate)",
        names(rate_phase),
        names(latency_phase)
    )
}

/// Compares trial set `a` with trial set `b` on every metric of [`METRICS`] that all records
/// have.
pub fn compare(a: &[RunRecord], b: &[RunRecord]) -> Comparison {
    let va: Vec<_> = a.iter().map(metric_values).collect();
    let vb: Vec<_> = b.iter().map(metric_values).collect();
    let mut metrics = Vec::new();
    let mut notes = Vec::new();
    for (i, (name, unit, dir, phase)) in METRICS.iter().enumerate() {
        let sa: Option<Vec<f64>> = va.iter().map(|v| v[i]).collect();
        let sb: Option<Vec<f64>> = vb.iter().map(|v| v[i]).collect();
        match (sa, sb) {
            (Some(sa), Some(sb)) if !sa.is_empty() && !sb.is_empty() => {
                let mut m = compare_samples(name, unit, *dir, &sa, &sb);
                m.phase = (*phase).to_string();
                metrics.push(m);
            }
            _ => notes.push(format!("{name}: not measured in every record, left out")),
        }
    }
    notes.push(phase_note(a.iter().chain(b)));
    let offered = |recs: &[RunRecord]| {
        let v: Vec<f64> = recs
            .iter()
            .filter_map(|r| latency_phase(r).and_then(|p| p.offered_per_sec))
            .collect();
        (!v.is_empty()).then(|| stats::median(&v))
    };
    if let (Some(oa), Some(ob)) = (offered(a), offered(b)) {
        if (oa - ob).abs() > 0.05 * oa.max(ob) {
            notes.push(format!(
                "latency figures compare different offered rates (A {oa:.0}/s, B {ob:.0}/s, medians; each side's latency phase ran at 80% of its own peak): latency depends on load, so give both sides the same --rate for a like-for-like latency comparison"
            ));
        }
    }
    if metrics.iter().any(|m| m.name == "sys %") {
        notes.push(SYS_PCT_MEANING.to_string());
    }
    for (side, recs) in [("A", a), ("B", b)] {
        let interrupted = recs.iter().filter(|r| r.run.interrupted).count();
        if interrupted > 0 {
            notes.push(format!(
                "{side}: {interrupted} trial(s) were interrupted (Ctrl-C)"
            ));
        }
        let flagged = |retransmit: bool| {
            recs.iter()
                .filter(|r| {
                    r.phases.iter().any(|p| {
                        p.drops()
                            .iter()
                            .any(|(k, _)| crate::record::is_retransmit_counter(k) == retransmit)
                    })
                })
                .count()
        };
        let with_drops = flagged(false);
        if with_drops > 0 {
            notes.push(format!(
                "{side}: {with_drops} trial(s) had kernel drops or overflows (see `connstorm report`): a different experiment"
            ));
        }
        let with_retrans = flagged(true);
        if with_retrans > 0 {
            notes.push(format!(
                "{side}: {with_retrans} trial(s) had SYN/SYN-ACK retransmits (see `connstorm report`)"
            ));
        }
    }
    if a.len() < stats::MIN_TRIALS || b.len() < stats::MIN_TRIALS {
        notes.push(format!(
            "fewer than {} trials on a side: no confidence interval; run `connstorm ab --trials 10`",
            stats::MIN_TRIALS
        ));
    }
    Comparison {
        method: format!(
            "{:.0}% CI of the relative change of the median, percentile bootstrap ({} resamples, seed {:#x})",
            CONFIDENCE * 100.0,
            stats::BOOTSTRAP_RESAMPLES,
            stats::BOOTSTRAP_SEED
        ),
        a_labels: a.iter().map(|r| r.label.clone()).collect(),
        b_labels: b.iter().map(|r| r.label.clone()).collect(),
        metrics,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng as _, SeedableRng as _};

    /// `n` trials around `center` with ±`noise` relative uniform noise.
    fn trials(rng: &mut StdRng, n: usize, center: f64, noise: f64) -> Vec<f64> {
        (0..n)
            .map(|_| center * (1.0 + rng.gen_range(-noise..=noise)))
            .collect()
    }

    #[test]
    fn identical_trial_sets_show_no_significant_change() {
        let mut rng = StdRng::seed_from_u64(1);
        let a = trials(&mut rng, 10, 20_000.0, 0.03);
        for dir in [Direction::HigherIsBetter, Direction::LowerIsBetter] {
            let m = compare_samples("x", "u", dir, &a, &a);
            assert_eq!(m.verdict, Verdict::NoSignificantChange, "{m:?}");
            assert_eq!(m.relative_change, 0.0);
        }
    }

    #[test]
    fn same_distribution_different_draws_show_no_significant_change() {
        let mut rng = StdRng::seed_from_u64(2);
        let a = trials(&mut rng, 10, 20_000.0, 0.03);
        let b = trials(&mut rng, 10, 20_000.0, 0.03);
        let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b);
        assert_eq!(m.verdict, Verdict::NoSignificantChange, "{m:?}");
    }

    #[test]
    fn a_ten_percent_shift_with_low_noise_is_detected_in_the_right_direction() {
        let mut rng = StdRng::seed_from_u64(3);
        let a = trials(&mut rng, 10, 20_000.0, 0.01);
        let b = trials(&mut rng, 10, 22_000.0, 0.01);
        let up = compare_samples("connections/s", "conn/s", Direction::HigherIsBetter, &a, &b);
        assert_eq!(up.verdict, Verdict::Better, "{up:?}");
        let i = up.interval.unwrap();
        assert!(i.low > 0.05 && i.high < 0.15, "{i:?}");
        assert!(
            (up.relative_change - 0.1).abs() < 0.03,
            "{}",
            up.relative_change
        );
        // The same shift in a latency is worse; the reverse shift is better.
        let lat = compare_samples("p99", "µs", Direction::LowerIsBetter, &a, &b);
        assert_eq!(lat.verdict, Verdict::Worse);
        let back = compare_samples("p99", "µs", Direction::LowerIsBetter, &b, &a);
        assert_eq!(back.verdict, Verdict::Better);
    }

    #[test]
    fn single_trials_are_inconclusive() {
        let m = compare_samples("x", "u", Direction::HigherIsBetter, &[1.0], &[2.0]);
        assert_eq!(m.verdict, Verdict::Inconclusive);
        assert!((m.relative_change - 1.0).abs() < 1e-12);
    }

    #[test]
    fn records_compare_on_every_measured_metric() {
        let a = vec![RunRecord::example(), RunRecord::example()];
        let mut faster = RunRecord::example();
        for p in &mut faster.phases {
            p.achieved_per_sec *= 1.2;
        }
        let b = vec![faster.clone(), faster];
        let c = compare(&a, &b);
        let names: Vec<_> = c.metrics.iter().map(|m| m.name.as_str()).collect();
        assert!(
            !names.contains(&"first-byte p99"),
            "example has no first byte: {names:?}"
        );
        assert!(c.notes.iter().any(|n| n.starts_with("first-byte p99")));
        let rate = &c.metrics[0];
        assert_eq!(rate.name, "connections/s");
        assert!((rate.relative_change - 0.2).abs() < 1e-9);
        // Constant trials: the interval is the point, so 20% more is significant.
        assert_eq!(rate.verdict, Verdict::Better);
        let p99 = c
            .metrics
            .iter()
            .find(|m| m.name == "handshake p99")
            .unwrap();
        assert_eq!(p99.verdict, Verdict::NoSignificantChange);
        assert!(c.method.contains("bootstrap"));
        assert_eq!((rate.phase.as_str(), p99.phase.as_str()), (PEAK, LATENCY));
        assert!(c
            .notes
            .iter()
            .any(|n| n.starts_with("sys %: system CPU time")));
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("from record phase peak") && n.contains("from phase latency")),
            "{:?}",
            c.notes
        );
    }
}
