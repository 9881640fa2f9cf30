//! A/B comparison of two sets of trials (kernel A vs kernel B, a sysctl off vs on).
//!
//! # The statistics rule (also in README and `connstorm compare --help`)
//! For each metric: median, min and max per side; the Hodges–Lehmann shift B − A with its exact
//! 95% Mann–Whitney interval ([`crate::stats::hodges_lehmann`]), both relative to A's median.
//! The verdict is *better* / *worse* only when
//! 1. both sides have at least [`stats::MIN_TRIALS`] (5) unflagged trials — else
//!    *inconclusive: N too small* (with 5 a side a 2σ shift is found about 2 times in 3; with 2 a
//!    side no order of trials can reach 95%),
//! 2. the interval excludes zero — else *no significant change*, and
//! 3. the shift is at least the noise floor `--min-effect` (default: A's run-to-run spread of
//!    that metric, `1.4826 · MAD / median`) — else *below the noise floor*.
//!
//! A metric with no samples on a side (CPU per connection of a run with no connection) is
//! *n/a*: no value, no change, no verdict (`null` in JSON).
//!
//! Trials whose record carries a warning ([`trial_flags`]: contention, steal, generator behind,
//! drops, retransmits, cross-check mismatch, interrupted) or measured nothing (a phase without a
//! success: its rates and CPU per connection are n/a) are marked and left out of the verdict
//! unless [`Options::include_flagged`]. SYN retransmits flag only when they are suspect
//! ([`suspect_retransmits`]): not explained by orphaned FIN_WAIT2 minisocks, above 0.1% of the
//! handshakes started, or with a handshake that took the 1 s SYN RTO.
//!
//! Which figure of a record each metric reads (see [`metric_values`]):
//! - rate and CPU metrics come from the *rate phase*: `peak`, else the first closed-loop
//!   phase, else the first phase;
//! - latency metrics come from the *latency phase*: `latency`, else the last open-loop phase;
//!   a record without one has no latency metrics, unless no record compared has one (two sets
//!   of closed-loop `load` records): then they come from the rate phase, and a note says so.

mod flags;
mod refuse;
mod setup;

use serde::{Deserialize, Serialize};

/// The statistics rule of [`compare()`] and the exit codes of the commands that use it, as the
/// `--help` text of `connstorm compare` and `connstorm ab` (README "Analysis" says the same).
pub const RULE_HELP: &str = "\
Statistics rule: for each metric, the Hodges-Lehmann shift B-A (median of all B-A differences) \
with its exact 95% Mann-Whitney confidence interval, relative to A's median. A verdict \
(better/worse) needs (1) at least 5 unflagged trials a side, else \"inconclusive: N too small\" \
(2 a side can never reach 95%: all B below all A happens 1 time in 6 by chance; 5 a side finds \
a 2-sigma shift about 2 times in 3, 10 a side a 1.5-sigma shift at least 4 times in 5), (2) an \
interval that excludes 0, and (3) a shift at least --min-effect (default: A's run-to-run spread \
of that metric, 1.4826*MAD/median). A metric with no samples is n/a (null in JSON). Trials whose \
record carries a warning (contention, steal, generator behind, drops, retransmits, cross-check \
mismatch, interrupted) or that measured nothing (a phase without a success) are marked and left \
out unless --include-flagged. SYN retransmits flag a \
trial only when suspect: not explained by orphaned FIN_WAIT2 minisocks (no SYN-losing drop \
counter, no ETIMEDOUT, TcpExt.TW >= TCPSynRetrans), above 0.1% of the handshakes started, or \
with a handshake (service latency) at or above the 1 s initial SYN RTO. Setups that differ \
(engine, target vs loopback, CPUs, close/server mode, netns, RTT, durations) are refused unless \
--allow-mismatch; kernel and connstorm version differences are listed.

Exit codes: 0 ok; 1 run-time failure; 2 bad input (command line, unreadable record, mismatched \
setups), refused before anything is written.";

pub use flags::{suspect_retransmits, trial_flags, trial_line, MAX_SYN_RETRANS_SHARE, SYN_RTO_NS};
pub use refuse::{check_setups, refuse_duplicates};
pub use setup::{setup_differences, SetupDifference};

use crate::histogram::LatencySummary;
use crate::record::{Latency, Pattern, PhaseRecord, RunRecord};
use crate::stats::{self, Spread};

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

/// The verdict on one metric (see the module docs for the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is better than A: the interval excludes zero on the good side, beyond the noise floor.
    Better,
    /// B is worse than A: the interval excludes zero on the bad side, beyond the noise floor.
    Worse,
    /// The interval includes zero.
    NoSignificantChange,
    /// The interval excludes zero but the shift is smaller than the noise floor.
    BelowNoiseFloor,
    /// Fewer than [`stats::MIN_TRIALS`] trials on a side: no verdict is possible.
    TooFewTrials,
    /// A side has no sample of this metric (or A's median is 0): nothing to compare.
    NotApplicable,
}

impl Verdict {
    /// Words for people.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::BelowNoiseFloor => "below the noise floor",
            Verdict::TooFewTrials => "inconclusive: N too small",
            Verdict::NotApplicable => "n/a: no samples",
        }
    }
}

/// A confidence interval for the relative change, B vs A (`0.05` = +5%).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Coverage the exact interval achieves (≥ [`CONFIDENCE`]).
    pub confidence: f64,
}

impl Interval {
    /// The interval excludes zero.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
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
    /// Side A's trials (those in the verdict).
    pub a: Spread,
    /// Side B's trials.
    pub b: Spread,
    /// Side A's flagged trials left out of the verdict: shown and marked, never used (`n` 0
    /// when none).
    #[serde(default = "Spread::none")]
    pub a_excluded: Spread,
    /// Side B's flagged trials left out of the verdict.
    #[serde(default = "Spread::none")]
    pub b_excluded: Spread,
    /// Hodges–Lehmann shift B − A over A's median (`0.1` = +10%); `null` when not applicable.
    pub relative_change: Option<f64>,
    /// 95% exact interval for the relative change (`null`: too few trials or no samples).
    pub interval: Option<Interval>,
    /// Two-sided Mann–Whitney p-value (`null` when not applicable).
    pub p_value: Option<f64>,
    /// Noise floor applied, as a fraction of A's median (`null`: none could be computed).
    pub min_effect: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// How a comparison is made.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Options {
    /// Noise floor as a fraction (`0.02` = 2%); `None`: each metric's A-side spread.
    pub min_effect: Option<f64>,
    /// Keep flagged trials in the verdict.
    pub include_flagged: bool,
}

/// Compares one metric given as plain samples (one value per trial); `min_effect` is the noise
/// floor as a fraction of A's median (`None`: A's relative spread, see the module docs).
pub fn compare_samples(
    name: &str,
    unit: &str,
    direction: Direction,
    a: &[f64],
    b: &[f64],
    min_effect: Option<f64>,
) -> MetricComparison {
    let mut m = MetricComparison {
        name: name.to_string(),
        phase: String::new(),
        unit: unit.to_string(),
        direction,
        a: Spread::of(a),
        b: Spread::of(b),
        a_excluded: Spread::none(),
        b_excluded: Spread::none(),
        relative_change: None,
        interval: None,
        p_value: None,
        min_effect: None,
        verdict: Verdict::NotApplicable,
    };
    let base = stats::median(a);
    let Some(shift) = (base != 0.0 && base.is_finite())
        .then(|| stats::hodges_lehmann(a, b, CONFIDENCE))
        .flatten()
    else {
        return m;
    };
    let rel = |v: f64| v / base.abs();
    m.relative_change = Some(rel(shift.estimate));
    m.p_value = Some(shift.p_value);
    m.min_effect = min_effect.or_else(|| stats::relative_spread(a));
    if let (Some(lo), Some(hi), Some(cov)) = (shift.low, shift.high, shift.coverage) {
        m.interval = Some(Interval {
            low: rel(lo),
            high: rel(hi),
            confidence: cov,
        });
    }
    m.verdict = if a.len() < stats::MIN_TRIALS || b.len() < stats::MIN_TRIALS {
        Verdict::TooFewTrials
    } else {
        match m.interval {
            None => Verdict::TooFewTrials,
            Some(i) if !i.excludes_zero() => Verdict::NoSignificantChange,
            Some(_) if rel(shift.estimate).abs() < m.min_effect.unwrap_or(0.0) => {
                Verdict::BelowNoiseFloor
            }
            Some(i) => match (i.low > 0.0, direction) {
                (true, Direction::HigherIsBetter) | (false, Direction::LowerIsBetter) => {
                    Verdict::Better
                }
                _ => Verdict::Worse,
            },
        }
    };
    m
}

/// One trial of a side: its label and the warnings that flag it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialInfo {
    /// The record's label, or `trial N` (its place in the side's list, from 1) when it has none.
    pub label: String,
    /// Why the trial is flagged (short kinds, see [`trial_flags`]); empty when clean.
    pub flags: Vec<String>,
    /// Left out of the verdict (flagged, and flagged trials were not included).
    pub excluded: bool,
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    /// What the side is: toggle values, setup command or labels (e.g.
    /// `net.ipv4.tcp_timestamps=1`).
    pub name: String,
    /// Its trials, in the order given.
    pub trials: Vec<TrialInfo>,
}

impl SideInfo {
    /// Trials in the verdict.
    pub fn used(&self) -> usize {
        self.trials.iter().filter(|t| !t.excluded).count()
    }

    /// Trials flagged (in the verdict or not).
    pub fn flagged(&self) -> usize {
        self.trials.iter().filter(|t| !t.flags.is_empty()).count()
    }
}

/// A full comparison of two trial sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// How intervals and verdicts were made (the statistics rule, in one line).
    pub method: String,
    /// Side A.
    pub a: SideInfo,
    /// Side B.
    pub b: SideInfo,
    /// How the sides' setups differ (engine, target, CPUs, ...); empty when alike.
    pub setup_differences: Vec<SetupDifference>,
    /// The metrics, in [`METRICS`] order.
    pub metrics: Vec<MetricComparison>,
    /// Caveats: flagged trials, offered rates, phases read.
    pub notes: Vec<String>,
}

/// The name of a side from its records' labels: distinct labels without a trailing trial tag,
/// joined by `, `; `unlabelled` when none. A tag is `#3`, or digits (after `-`, `_`, a space or
/// a letter) that only number trials: `A1`, `A2`, `A3` → `A`. Digits are kept when no other
/// label of the side shares the stem (`kernel2` alone stays `kernel2`: a side of one record
/// labelled `tlshttp2` was shown as `tlshttp`, the same name as the other side).
pub fn side_name(recs: &[RunRecord]) -> String {
    side_name_of(recs.iter().map(|r| r.label.as_str()))
}

/// [`side_name`] from the labels themselves.
pub fn side_name_of<'a>(labels: impl IntoIterator<Item = &'a str>) -> String {
    // A label without its `#n` tag, and its stem without trailing digits (None: no digits to
    // cut, or nothing left).
    fn split(l: &str) -> (&str, Option<&str>) {
        let l = l.trim();
        if let Some(i) = l.rfind('#') {
            if l[i + 1..].chars().all(|c| c.is_ascii_digit()) {
                return (l[..i].trim_end(), None);
            }
        }
        let cut = l.trim_end_matches(|c: char| c.is_ascii_digit());
        let after_tag = cut
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphabetic() || matches!(c, '-' | '_' | ' '));
        if cut.len() == l.len() || !after_tag {
            (l, None)
        } else {
            (l, Some(cut.trim_end_matches(['-', '_', ' '])))
        }
    }
    let parts: Vec<(&str, Option<&str>)> = labels.into_iter().map(split).collect();
    let mut names: Vec<String> = Vec::new();
    for (l, stem) in &parts {
        // Digits are a trial number only when another distinct label has the same stem.
        let l = match stem {
            Some(st)
                if !st.is_empty()
                    && parts
                        .iter()
                        .any(|(o, os)| o != l && os.as_ref() == Some(st)) =>
            {
                *st
            }
            _ => *l,
        };
        if !l.is_empty() && !names.iter().any(|n| n == l) {
            names.push(l.to_string());
        }
    }
    if names.is_empty() {
        "unlabelled".into()
    } else {
        names.join(", ")
    }
}

fn side_info(recs: &[RunRecord], name: Option<&str>, opts: &Options) -> SideInfo {
    SideInfo {
        name: name.map_or_else(|| side_name(recs), str::to_string),
        trials: recs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let flags = trial_flags(r);
                TrialInfo {
                    // An unlabelled record is named by its place in the side's list of files.
                    label: if r.label.is_empty() {
                        format!("trial {}", i + 1)
                    } else {
                        r.label.clone()
                    },
                    excluded: !flags.is_empty() && !opts.include_flagged,
                    flags,
                }
            })
            .collect(),
    }
}

/// The statistics rule in one line (for outputs and `--help`).
pub fn method_text() -> String {
    format!(
        "Hodges-Lehmann shift (median of all B-A differences) with its exact {:.0}% Mann-Whitney interval, relative to A's median; a verdict needs >= {} unflagged trials a side, an interval excluding 0, and a shift >= the noise floor (--min-effect, default A's run-to-run spread 1.4826*MAD/median)",
        CONFIDENCE * 100.0,
        stats::MIN_TRIALS
    )
}

/// Compares trial set `a` with trial set `b` on every metric of [`METRICS`]; `names` name the
/// sides (`None`: from their labels, [`side_name`]).
pub fn compare(
    a: &[RunRecord],
    b: &[RunRecord],
    names: (Option<&str>, Option<&str>),
    opts: &Options,
) -> Comparison {
    let side_a = side_info(a, names.0, opts);
    let side_b = side_info(b, names.1, opts);
    let used = |recs: &[RunRecord], side: &SideInfo| -> Vec<RunRecord> {
        recs.iter()
            .zip(&side.trials)
            .filter(|(_, t)| !t.excluded)
            .map(|(r, _)| r.clone())
            .collect()
    };
    let (ua, ub) = (used(a, &side_a), used(b, &side_b));
    // No record of either side has an open-loop phase (two sets of `load --concurrency`
    // records): their latency is read from the closed-loop phase, like for like between them
    // (it said "no samples" beside tens of thousands).
    let closed_only = a.iter().chain(b).all(|r| latency_phase(r).is_none());
    let values = |r: &RunRecord| metric_values_in(r, closed_only);
    let va: Vec<_> = ua.iter().map(values).collect();
    let vb: Vec<_> = ub.iter().map(values).collect();
    let left_out = |recs: &[RunRecord], side: &SideInfo| -> Vec<[Option<f64>; METRICS.len()]> {
        recs.iter()
            .zip(&side.trials)
            .filter(|(_, t)| t.excluded)
            .map(|(r, _)| values(r))
            .collect()
    };
    let (xa, xb) = (left_out(a, &side_a), left_out(b, &side_b));
    let mut metrics = Vec::new();
    let mut notes = Vec::new();
    for (i, (name, unit, dir, phase)) in METRICS.iter().enumerate() {
        // Trials without the figure contribute nothing (n/a, never 0).
        let sa: Vec<f64> = va.iter().filter_map(|v| v[i]).collect();
        let sb: Vec<f64> = vb.iter().filter_map(|v| v[i]).collect();
        let missing = (va.len() - sa.len()) + (vb.len() - sb.len());
        if missing > 0 && !(sa.is_empty() && sb.is_empty()) {
            notes.push(format!("{name}: not measured in {missing} trial(s)"));
        }
        // Figures of a kind no trial of either side measured (no greeting, no --http, no
        // --tls) are left out rather than shown as n/a; measured only by flagged trials, they
        // stay (n/a, with the flagged figures), as the TCP figures do.
        let in_excluded = xa.iter().chain(&xb).any(|v| v[i].is_some());
        if sa.is_empty() && sb.is_empty() && !in_excluded && OPTIONAL_METRICS.contains(name) {
            continue;
        }
        let mut m = compare_samples(name, unit, *dir, &sa, &sb, opts.min_effect);
        m.phase = (*phase).to_string();
        let excluded = |v: &[[Option<f64>; METRICS.len()]]| {
            Spread::of(&v.iter().filter_map(|v| v[i]).collect::<Vec<f64>>())
        };
        m.a_excluded = excluded(&xa);
        m.b_excluded = excluded(&xb);
        // Samples that exist but were all left out (flagged): too few, not "no samples".
        let measured = |recs: &[RunRecord]| recs.iter().any(|r| values(r)[i].is_some());
        if m.verdict == Verdict::NotApplicable
            && (sa.is_empty() || sb.is_empty())
            && measured(a)
            && measured(b)
        {
            m.verdict = Verdict::TooFewTrials;
        }
        metrics.push(m);
    }
    notes.push(phase_note(a.iter().chain(b), closed_only));
    let offered = |recs: &[RunRecord]| {
        let v: Vec<f64> = recs
            .iter()
            .filter_map(|r| latency_phase(r).and_then(|p| p.offered_per_sec))
            .collect();
        (!v.is_empty()).then(|| stats::median(&v))
    };
    if let (Some(oa), Some(ob)) = (offered(&ua), offered(&ub)) {
        if (oa - ob).abs() > 0.05 * oa.max(ob) {
            notes.push(format!(
                "latency figures compare different offered rates (A {}/s, B {}/s, medians; each side's latency phase ran at 80% of its own peak): latency depends on load, so give both sides the same --rate for a like-for-like latency comparison",
                crate::numfmt::fixed(oa, 0),
                crate::numfmt::fixed(ob, 0)
            ));
        }
    }
    if metrics.iter().any(|m| m.name == "sys %") {
        notes.push(SYS_PCT_MEANING.to_string());
    }
    for (side, info) in [("A", &side_a), ("B", &side_b)] {
        let flagged: Vec<String> = info
            .trials
            .iter()
            .filter(|t| !t.flags.is_empty())
            .map(|t| format!("{} ({})", t.label, t.flags.join(", ")))
            .collect();
        if !flagged.is_empty() {
            notes.push(format!(
                "{side}: {} flagged trial(s) {}: {}",
                flagged.len(),
                if opts.include_flagged {
                    "kept in the verdict (--include-flagged)"
                } else {
                    "excluded from the verdict (--include-flagged keeps them)"
                },
                flagged.join("; ")
            ));
        }
    }
    if side_a.used() < stats::MIN_TRIALS || side_b.used() < stats::MIN_TRIALS {
        // Too few because trials were flagged: more trials on the same host get flagged too.
        let flagged_out = !opts.include_flagged
            && [&side_a, &side_b]
                .iter()
                .any(|s| s.used() < stats::MIN_TRIALS && s.trials.len() >= stats::MIN_TRIALS);
        let fix = if flagged_out {
            format!(
                "enough trials ran, but flagged ones are left out: remove what flagged them (the flags above: e.g. other work on the benchmark CPUs — run on a quiet host or other CPUs), or keep them with --include-flagged (at {} trials a side, {} ran)",
                stats::MIN_TRIALS,
                side_a.trials.len().min(side_b.trials.len())
            )
        } else {
            "run `connstorm ab --trials 10`".to_string()
        };
        notes.push(format!(
            "{} and {} trial(s) in the verdict: fewer than {} a side cannot show a change at 95% (with 2 a side, every B below every A happens 1 time in 6 by chance); {fix}",
            side_a.used(),
            side_b.used(),
            stats::MIN_TRIALS
        ));
    }
    Comparison {
        method: method_text(),
        setup_differences: setup_differences(a, b),
        a: side_a,
        b: side_b,
        metrics,
        notes,
    }
}

/// The metrics compared: name, unit, direction, and the phase they are read from ([`PEAK`]:
/// [`rate_phase`], [`LATENCY`]: [`latency_phase`]).
pub const METRICS: [(&str, &str, Direction, &str); 12] = [
    ("connections/s", "conn/s", Direction::HigherIsBetter, PEAK),
    ("handshake p50", "µs", Direction::LowerIsBetter, LATENCY),
    ("handshake p99", "µs", Direction::LowerIsBetter, LATENCY),
    ("handshake max", "µs", Direction::LowerIsBetter, LATENCY),
    ("first-byte p99", "µs", Direction::LowerIsBetter, LATENCY),
    ("server CPU per conn", "µs", Direction::LowerIsBetter, PEAK),
    ("load CPU per conn", "µs", Direction::LowerIsBetter, PEAK),
    ("sys %", "%", Direction::LowerIsBetter, PEAK),
    ("responses/s", "resp/s", Direction::HigherIsBetter, PEAK),
    ("TLS handshakes/s", "hs/s", Direction::HigherIsBetter, PEAK),
    ("TLS handshake p50", "µs", Direction::LowerIsBetter, LATENCY),
    ("TLS handshake p99", "µs", Direction::LowerIsBetter, LATENCY),
];

/// Metrics of a kind a run may not measure at all (greeting, `--http`, `--tls`): left out of a
/// comparison when neither side has them.
pub const OPTIONAL_METRICS: [&str; 5] = [
    "first-byte p99",
    "responses/s",
    "TLS handshakes/s",
    "TLS handshake p50",
    "TLS handshake p99",
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

/// The phase latency metrics are read from (see the module docs): the `latency` phase, else the
/// last open-loop phase; `None` for a record without one (a closed loop's latency is measured at
/// whatever rate it reached, so beside an open loop's it is no like-for-like figure: an
/// interrupted `bench` that kept only its peak phase has no latency metrics, not its peak's).
pub fn latency_phase(rec: &RunRecord) -> Option<&PhaseRecord> {
    rec.phase("latency")
        .filter(|p| matches!(p.pattern, Pattern::Open { .. }))
        .or_else(|| {
            rec.phases
                .iter()
                .rev()
                .find(|p| matches!(p.pattern, Pattern::Open { .. }))
        })
}

fn summary(phase: &PhaseRecord, which: Latency) -> Option<LatencySummary> {
    let h = phase.histograms.decode(which).ok()??;
    (!h.is_empty()).then(|| LatencySummary::of(&h))
}

/// The value of each of [`METRICS`] in one record (`None`: not measured in it).
///
/// A per-connection figure with no connection is `None`, never 0 (see
/// [`crate::record::SideCpu::us_per_conn`]).
pub fn metric_values(rec: &RunRecord) -> [Option<f64>; METRICS.len()] {
    metric_values_in(rec, false)
}

/// [`metric_values`]; with `closed_only` the latency figures come from [`rate_phase`] (when no
/// record compared has an open-loop phase).
fn metric_values_in(rec: &RunRecord, closed_only: bool) -> [Option<f64>; METRICS.len()] {
    let rate = rate_phase(rec);
    let lat = if closed_only {
        rate
    } else {
        latency_phase(rec)
    };
    let hs = lat.and_then(|p| summary(p, Latency::Handshake));
    let fb = lat.and_then(|p| summary(p, Latency::FirstByte));
    let tls = lat.and_then(|p| summary(p, Latency::TlsHandshake));
    let per_sec =
        |p: &PhaseRecord, n: u64| (p.measured_secs > 0.0).then(|| n as f64 / p.measured_secs);
    let us = |ns: u64| ns as f64 / 1e3;
    let sys_pct = rate.and_then(|p| p.cpu.sys_pct());
    [
        rate.and_then(|p| p.achieved_per_sec),
        hs.map(|s| us(s.p50_ns)),
        hs.map(|s| us(s.p99_ns)),
        hs.map(|s| us(s.max_ns)),
        fb.map(|s| us(s.p99_ns)),
        rate.and_then(|p| p.cpu.server)
            .and_then(|c| c.us_per_conn()),
        rate.and_then(|p| p.cpu.load.us_per_conn()),
        sys_pct,
        rate.and_then(|p| per_sec(p, p.http.as_ref()?.responses)),
        rate.and_then(|p| per_sec(p, p.tls.as_ref()?.handshakes)),
        tls.map(|s| us(s.p50_ns)),
        tls.map(|s| us(s.p99_ns)),
    ]
}

/// Says which record phase each metric group was read from, naming the phases found.
fn phase_note<'a>(recs: impl Iterator<Item = &'a RunRecord> + Clone, closed_only: bool) -> String {
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
    if closed_only {
        return format!(
            "phases: every metric is read from record phase {} (closed loop): no record has an open-loop phase, so the latency figures are each trial's at the rate its concurrency reached, like for like only at the same --concurrency",
            names(rate_phase)
        );
    }
    format!(
        "phases: \"{PEAK} phase\" metrics (rates, CPU, sys %) are read from record phase {} (closed loop, as fast as it goes); \"{LATENCY} phase\" metrics (handshake, first-byte and TLS handshake latency) from phase {} (open loop at a fixed offered rate)",
        names(rate_phase),
        names(latency_phase)
    )
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

    /// Records whose peak rate is each of `rates` (everything else as the example).
    fn records(label: &str, rates: &[f64]) -> Vec<RunRecord> {
        rates
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let mut rec = RunRecord::example();
                rec.label = format!("{label}#{}", i + 1);
                rec.warnings.clear();
                for p in &mut rec.phases {
                    p.counters.clear();
                    p.dropped = 0;
                    if let Some(c) = &mut p.cross_check {
                        c.agree = true;
                    }
                }
                rec.phases[0].achieved_per_sec = Some(r);
                rec
            })
            .collect()
    }

    fn rate(c: &Comparison) -> &MetricComparison {
        c.metrics
            .iter()
            .find(|m| m.name == "connections/s")
            .unwrap()
    }

    /// Two sets of closed-loop `load` records (no open-loop phase anywhere): their latency is
    /// compared from the closed-loop phase, and the note says so (it said "no samples" beside
    /// tens of thousands). Beside a record with an open-loop phase it stays n/a.
    #[test]
    fn closed_loop_records_compare_their_latency_from_the_closed_loop_phase() {
        let closed = |label: &str| {
            let mut v = records(label, &[100.0; 5]);
            for r in &mut v {
                r.phases
                    .retain(|p| matches!(p.pattern, Pattern::Closed { .. }));
                r.phases[0].name = "load".into();
            }
            v
        };
        let (a, b) = (closed("a"), closed("b"));
        assert!(latency_phase(&a[0]).is_none());
        let c = compare(&a, &b, (None, None), &Options::default());
        let p50 = c
            .metrics
            .iter()
            .find(|m| m.name == "handshake p50")
            .unwrap();
        assert_eq!(p50.a.n, 5, "{p50:?}");
        assert_ne!(p50.verdict, Verdict::NotApplicable);
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("no record has an open-loop phase")),
            "{:?}",
            c.notes
        );
        let mixed = compare(
            &records("a", &[100.0; 5]),
            &b,
            (None, None),
            &Options::default(),
        );
        let p50 = mixed
            .metrics
            .iter()
            .find(|m| m.name == "handshake p50")
            .unwrap();
        assert_eq!(p50.b.n, 0, "{p50:?}");
    }

    /// Trial numbers are cut only where they number trials: a side of one record labelled
    /// `tlshttp2` is not the same side as `tlshttp`.
    #[test]
    fn side_names_cut_trial_numbers_not_the_digits_of_a_name() {
        assert_eq!(side_name_of(["A1", "A2", "A3"]), "A");
        assert_eq!(side_name_of(["run-1", "run-2"]), "run");
        assert_eq!(side_name_of(["x#1", "x#2"]), "x");
        assert_eq!(side_name_of(["tlshttp2"]), "tlshttp2");
        assert_eq!(side_name_of(["kernel1"]), "kernel1");
        assert_eq!(side_name_of(["kernel1", "kernel1"]), "kernel1");
        assert_eq!(side_name_of(["v6.1", "v6.8"]), "v6.1, v6.8");
        assert_eq!(side_name_of(["42", "43"]), "42, 43");
        assert_eq!(side_name_of(["", ""]), "unlabelled");
    }

    #[test]
    fn identical_distributions_give_no_verdict() {
        let mut rng = StdRng::seed_from_u64(2);
        for seed_round in 0..20 {
            let a = trials(&mut rng, 10, 20_000.0, 0.03);
            let b = trials(&mut rng, 10, 20_000.0, 0.03);
            let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b, None);
            assert!(
                !matches!(m.verdict, Verdict::Better | Verdict::Worse),
                "round {seed_round}: {m:?}"
            );
        }
        let a = trials(&mut rng, 10, 20_000.0, 0.03);
        let m = compare_samples("x", "u", Direction::LowerIsBetter, &a, &a, None);
        assert_eq!(m.verdict, Verdict::NoSignificantChange, "{m:?}");
        assert_eq!(m.relative_change, Some(0.0));
    }

    #[test]
    fn a_ten_percent_shift_with_ten_trials_is_detected_in_the_right_direction() {
        let mut rng = StdRng::seed_from_u64(3);
        let a = trials(&mut rng, 10, 20_000.0, 0.02);
        let b = trials(&mut rng, 10, 22_000.0, 0.02);
        let up = compare_samples(
            "connections/s",
            "conn/s",
            Direction::HigherIsBetter,
            &a,
            &b,
            None,
        );
        assert_eq!(up.verdict, Verdict::Better, "{up:?}");
        let i = up.interval.unwrap();
        assert!(i.low > 0.05 && i.high < 0.15, "{i:?}");
        assert!((up.relative_change.unwrap() - 0.1).abs() < 0.03, "{up:?}");
        let lat = compare_samples("p99", "µs", Direction::LowerIsBetter, &a, &b, None);
        assert_eq!(lat.verdict, Verdict::Worse);
        let back = compare_samples("p99", "µs", Direction::LowerIsBetter, &b, &a, None);
        assert_eq!(back.verdict, Verdict::Better);
        // Through records, with sides named by their labels.
        let c = compare(
            &records("tcp_timestamps=1", &a),
            &records("tcp_timestamps=0", &b),
            (None, None),
            &Options::default(),
        );
        assert_eq!(rate(&c).verdict, Verdict::Better);
        assert_eq!(
            (c.a.name.as_str(), c.b.name.as_str()),
            ("tcp_timestamps=1", "tcp_timestamps=0")
        );
    }

    #[test]
    fn the_same_shift_with_two_trials_is_inconclusive() {
        let m = compare_samples(
            "connections/s",
            "conn/s",
            Direction::HigherIsBetter,
            &[20_000.0, 20_100.0],
            &[22_000.0, 22_100.0],
            None,
        );
        assert_eq!(m.verdict, Verdict::TooFewTrials, "{m:?}");
        assert_eq!(m.verdict.as_str(), "inconclusive: N too small");
        assert!(m.interval.is_none(), "2 vs 2 cannot reach 95%: {m:?}");
        assert!((m.relative_change.unwrap() - 0.1).abs() < 0.01);
        // The case: 2 trials, everything B below A, "-99% better" before.
        let c = compare(
            &records("A", &[31_300.0, 610.0]),
            &records("B", &[320.0, 270.0]),
            (None, None),
            &Options::default(),
        );
        assert_eq!(rate(&c).verdict, Verdict::TooFewTrials);
        assert!(
            c.notes.iter().any(|n| n.contains("1 time in 6")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn a_shift_inside_the_noise_floor_gets_no_verdict() {
        let a: Vec<f64> = (0..10).map(|i| 100.0 + i as f64 * 0.1).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.03).collect();
        let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b, Some(0.05));
        assert_eq!(m.verdict, Verdict::BelowNoiseFloor, "{m:?}");
        let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b, Some(0.01));
        assert_eq!(m.verdict, Verdict::Better, "{m:?}");
        // Default floor: A's own spread (about 0.37% here).
        let m = compare_samples("x", "u", Direction::HigherIsBetter, &a, &b, None);
        assert!(
            m.min_effect.unwrap() > 0.001 && m.min_effect.unwrap() < 0.01,
            "{m:?}"
        );
    }

    #[test]
    fn one_flagged_trial_is_excluded_and_reported() {
        let mut rng = StdRng::seed_from_u64(5);
        let a_rates = trials(&mut rng, 6, 20_000.0, 0.01);
        let b_rates = trials(&mut rng, 6, 22_000.0, 0.01);
        let mut a = records("A", &a_rates);
        let b = records("B", &b_rates);
        a[1].warnings
            .push("latency: generator fell behind: 100.0% of starts late".into());
        a[1].phases[0].achieved_per_sec = Some(1.0);
        let c = compare(&a, &b, (None, None), &Options::default());
        assert_eq!(c.a.trials[1].flags, ["generator behind"]);
        assert!(c.a.trials[1].excluded);
        assert_eq!((c.a.used(), c.a.flagged()), (5, 1));
        assert_eq!(rate(&c).a.n, 5);
        assert_eq!(rate(&c).a.min.map(|v| v > 1_000.0), Some(true));
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("A: 1 flagged trial(s) excluded")
                    && n.contains("A#2 (generator behind)")),
            "{:?}",
            c.notes
        );
        let mut all_flagged = b.clone();
        for r in &mut all_flagged {
            r.warnings
                .push("peak: other work used 40% of the benchmark CPUs".into());
        }
        let none_left = compare(&a, &all_flagged, (None, None), &Options::default());
        assert_eq!(none_left.b.used(), 0);
        assert_eq!(
            rate(&none_left).verdict,
            Verdict::TooFewTrials,
            "flagged away, not n/a"
        );
        // The flagged values are shown, marked, though not used.
        assert_eq!(rate(&none_left).b.n, 0);
        assert_eq!(rate(&none_left).b_excluded.n, 6);
        assert_eq!(rate(&c).a_excluded.n, 1);
        let text = crate::render::comparison(&none_left, crate::render::CompareFormat::Text);
        assert!(text.contains("n/a; flagged, excluded: 2"), "{text}");
        // Enough trials ran: the note says what left them out, not "run more trials".
        let few = none_left
            .notes
            .iter()
            .find(|n| n.contains("cannot show a change"))
            .unwrap_or_else(|| panic!("{:?}", none_left.notes));
        assert!(few.contains("flagged ones are left out"), "{few}");
        assert!(!few.contains("--trials 10"), "{few}");
        let too_few = compare(&a[..2], &b[..2], (None, None), &Options::default());
        let few = too_few
            .notes
            .iter()
            .find(|n| n.contains("cannot show a change"));
        assert!(
            few.is_some_and(|n| n.contains("--trials 10")),
            "{:?}",
            too_few.notes
        );
        let kept = compare(
            &a,
            &b,
            (None, None),
            &Options {
                include_flagged: true,
                ..Options::default()
            },
        );
        assert_eq!(rate(&kept).a.n, 6);
        assert!(!kept.a.trials[1].excluded);
    }

    /// Records with `--http` and `--tls` figures compare responses/s, TLS handshakes/s and
    /// the TLS handshake p50/p99; records without them leave those metrics out.
    #[test]
    fn http_and_tls_figures_are_compared_when_the_records_have_them() {
        let plain = compare(
            &records("a", &[100.0; 5]),
            &records("b", &[100.0; 5]),
            (None, None),
            &Options::default(),
        );
        for name in OPTIONAL_METRICS.iter().skip(1) {
            assert!(plain.metrics.iter().all(|m| m.name != *name), "{name}");
        }
        let with = |label: &str, hs: u64, lat_ns: u64| -> Vec<RunRecord> {
            let mut v = records(label, &[100.0; 5]);
            for rec in &mut v {
                for p in &mut rec.phases {
                    p.http = Some(crate::record::HttpCounts {
                        responses: hs,
                        ..Default::default()
                    });
                    p.tls = Some(crate::record::TlsCounts {
                        handshakes: hs,
                        ..Default::default()
                    });
                    let mut h = crate::record::new_latency_histogram();
                    h.record_n(lat_ns, 100).unwrap();
                    p.histograms.tls_handshake = Some(crate::record::encode_histogram(&h));
                }
            }
            v
        };
        let (a, b) = (with("a", 1_000, 2_000_000), with("b", 2_000, 1_000_000));
        let c = compare(&a, &b, (None, None), &Options::default());
        let get = |n: &str| c.metrics.iter().find(|m| m.name == n).unwrap();
        let secs = rate_phase(&a[0]).unwrap().measured_secs;
        for (name, want_a, want_b) in [
            ("responses/s", 1_000.0 / secs, 2_000.0 / secs),
            ("TLS handshakes/s", 1_000.0 / secs, 2_000.0 / secs),
        ] {
            let m = get(name);
            assert!((m.a.median.unwrap() - want_a).abs() < 1e-9, "{name} {m:?}");
            assert!((m.b.median.unwrap() - want_b).abs() < 1e-9, "{name} {m:?}");
            assert_eq!(m.verdict, Verdict::Better, "{name}");
        }
        for name in ["TLS handshake p50", "TLS handshake p99"] {
            let m = get(name);
            let (ma, mb) = (m.a.median.unwrap(), m.b.median.unwrap());
            assert!(
                (ma - 2_000.0).abs() < 2.0 && (mb - 1_000.0).abs() < 1.0,
                "{name} {m:?}"
            );
            assert_eq!(
                m.verdict,
                Verdict::Better,
                "{name}: lower latency is better"
            );
        }
        // Every trial flagged (left out): the HTTP/TLS rows stay, too few trials with the
        // flagged figures, as the TCP rows do (they vanished from the text table).
        let flag = |mut v: Vec<RunRecord>| {
            v.iter_mut().for_each(|r| r.run.interrupted = true);
            v
        };
        let c = compare(&flag(a), &flag(b), (None, None), &Options::default());
        for name in OPTIONAL_METRICS.iter().skip(1) {
            let m = c.metrics.iter().find(|m| m.name == *name);
            let m = m.unwrap_or_else(|| panic!("{name} left out when every trial is flagged"));
            assert_eq!(m.verdict, Verdict::TooFewTrials, "{name}");
            assert_eq!(m.a_excluded.n, 5, "{name}");
        }
    }

    /// A trial whose peak window had no success (`bench --backlog 1`): `compare` printed
    /// `connections/s 0 [0 – 0]` and CPU per connection of its warm-up for it. Its rates and
    /// CPU per connection are n/a, and the trial is flagged `nothing measured` and left out.
    #[test]
    fn nothing_measured_a_trial_without_a_success_is_na_and_flagged() {
        let mut a = records("A", &[20_000.0]);
        let mut b = records("B", &[21_000.0]);
        let p = &mut b[0].phases[0];
        p.successes = 0;
        p.set_rates();
        p.forget_unmeasured();
        assert_eq!(metric_values(&b[0])[0], None, "connections/s");
        assert_eq!(metric_values(&b[0])[5], None, "server CPU per conn");
        assert_eq!(metric_values(&b[0])[6], None, "load CPU per conn");
        a[0].label = "A#1".into();
        let c = compare(&a, &b, (None, None), &Options::default());
        assert_eq!(c.b.trials[0].flags, ["nothing measured"]);
        assert!(c.b.trials[0].excluded);
        let m = rate(&c);
        assert_eq!((m.b.n, m.b_excluded.n), (0, 0), "{m:?}");
        let text = crate::render::comparison(&c, crate::render::CompareFormat::Text);
        let row = text
            .lines()
            .find(|l| l.contains("connections/s (peak phase"))
            .unwrap();
        assert!(!row.contains("0 [0 – 0]"), "{row}");
        assert!(
            c.notes.iter().any(
                |n| n.contains("B: 1 flagged trial(s)") && n.contains("B#1 (nothing measured)")
            ),
            "{:?}",
            c.notes
        );
        // --include-flagged keeps the trial, but it still has no rate.
        let kept = compare(
            &a,
            &b,
            (None, None),
            &Options {
                include_flagged: true,
                ..Options::default()
            },
        );
        assert_eq!(rate(&kept).b.n, 0);
    }

    #[test]
    fn cpu_per_connection_without_connections_is_na_never_zero() {
        let mut recs = records("A", &[0.0; 3]);
        for r in &mut recs {
            for p in &mut r.phases {
                p.successes = 0;
                p.cpu.load = crate::record::SideCpu::new(0, 1_900_000_000, 3_000_000_000, 1, 0);
                p.cpu.server = Some(p.cpu.load);
                p.forget_unmeasured();
            }
        }
        let c = compare(&recs, &recs, (None, None), &Options::default());
        for name in ["server CPU per conn", "load CPU per conn"] {
            let m = c.metrics.iter().find(|m| m.name == name).unwrap();
            assert_eq!(m.verdict, Verdict::NotApplicable, "{m:?}");
            assert_eq!((m.a.median, m.relative_change), (None, None));
        }
        assert_eq!(
            rate(&c).verdict,
            Verdict::NotApplicable,
            "no success: no rate"
        );
        let json: serde_json::Value = serde_json::from_str(&crate::render::comparison(
            &c,
            crate::render::CompareFormat::Json,
        ))
        .unwrap();
        let cpu = json["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "server CPU per conn")
            .unwrap();
        assert!(
            cpu["a"]["median"].is_null() && cpu["relative_change"].is_null(),
            "{cpu}"
        );
        assert!(
            !crate::render::comparison(&c, crate::render::CompareFormat::Text).contains("-100")
        );
    }

    /// A record that kept only its closed-loop peak phase (a `bench` interrupted during the
    /// peak) has no latency metrics: its peak's handshake latency is not an open loop's at a
    /// fixed rate, so it is n/a, never shown under "latency phase" (kind: statistics).
    #[test]
    fn a_record_without_an_open_loop_phase_has_no_latency_metrics() {
        let mut rec = RunRecord::example();
        let whole = metric_values(&rec);
        rec.phases.retain(|p| p.name == "peak");
        assert!(latency_phase(&rec).is_none());
        let v = metric_values(&rec);
        for (i, (name, _, _, group)) in METRICS.iter().enumerate() {
            if *group == LATENCY {
                assert_eq!(v[i], None, "{name}");
            } else {
                assert_eq!(v[i], whole[i], "{name}: the peak's figures stay");
            }
        }
        assert!(whole
            .iter()
            .zip(METRICS)
            .any(|(x, (_, _, _, group))| group == LATENCY && x.is_some()));
        let note = phase_note([&rec].into_iter(), false);
        assert!(note.contains("from phase - (open loop"), "{note}");
    }
}
