//! A/B comparison of two sets of trials (kernel A vs kernel B, a sysctl off vs on).
//!
//! # The statistics rule (also in docs/methodology.md and `connstorm compare --help`)
//! For each metric: median, min and max per side; the Hodges–Lehmann shift B − A with its exact
//! 95% Mann–Whitney interval ([`crate::analysis::stats::hodges_lehmann`]), both relative to A's
//! median. The verdict is *better* / *worse* only when
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
//! unless [`CompareOptions::include_flagged`]. SYN retransmits flag only when they are suspect
//! ([`suspect_retransmits`]): not explained by orphaned FIN_WAIT2 minisocks, above 0.1% of the
//! handshakes started, or with a handshake that took the 1 s SYN RTO.
//!
//! Latency depends on load: latency metrics are compared only when every trial's latency phase
//! ran at one offered rate (within [`SAME_RATE`]); otherwise they are
//! [`Verdict::DifferentLoads`], with the rates in a note ([`Comparison::offered_rates`]).
//!
//! Which figure of a record each metric reads (see [`metric_values`]):
//! - rate and CPU metrics come from the *rate phase*: `peak`, else the first closed-loop
//!   phase, else the first phase;
//! - latency metrics come from the *latency phase*: `latency`, else the last open-loop phase;
//!   a record without one has no latency metrics, unless no record compared has one (two sets
//!   of closed-loop `load` records): then they come from the rate phase, and a note says so.

mod flags;
mod metrics;
mod refuse;
mod setup;
#[cfg(test)]
pub(crate) mod tests;

use serde::{Deserialize, Serialize};

/// The statistics rule of [`compare()`] and the exit codes of the commands that use it, as the
/// `--help` text of `connstorm compare` and `connstorm ab` (docs/methodology.md "A/B statistics" says the same).
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
--allow-mismatch; kernel and connstorm version differences are listed. Latency is compared only \
between latency phases at one offered rate (within 0.5%): otherwise the latency metrics say \
\"not compared: different offered rates\" (connstorm ab runs both sides at one rate).

Exit codes: 0 ok; 1 run-time failure; 2 bad input (command line, unreadable record, mismatched \
setups), refused before anything is written.";

pub use flags::{trial_flags, trial_line};
pub(crate) use metrics::metric_values;
pub use metrics::{latency_phase, rate_phase, METRICS};
use metrics::{
    metric_values_in, phase_note, ACCEPT_WAIT_METRICS, OPTIONAL_METRICS, SYS_PCT_MEANING,
    TLS_SPLIT_METRICS,
};
pub(crate) use metrics::{LATENCY as LATENCY_PHASE, PEAK as PEAK_PHASE};
pub use refuse::{check_setups, refuse_duplicates};
pub(crate) use setup::setup_differences;
pub use setup::SetupDifference;

use crate::analysis::stats::{self, Spread};
use crate::record::RunRecord;

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
    /// A latency metric of trials whose latency phases ran at different offered rates: latency
    /// depends on load, so it is not compared ([`Comparison::offered_rates`]).
    DifferentLoads,
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
            Verdict::DifferentLoads => "not compared: different offered rates",
        }
    }
}

/// A confidence interval for the relative change, B vs A (`0.05` = +5%).
///
/// In JSON: `{"low", "high", "confidence", "estimable"}`. An interval that is no percentage
/// change ([`Interval::estimable`] false: its low end at or below −100%) is written with `low`
/// and `high` null and `"estimable": false`, the verdict text and Markdown give it ("not
/// estimable"); a reader of JSON written before the field (numbers, no `estimable`) gets it
/// from the low end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(into = "IntervalJson", from = "IntervalJson")]
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

    /// Whether the interval is a percentage change: its low end is above −100%. One at or below
    /// it ([−1171.0%, +75.2%]: B's trials spread further below A's median than A's median
    /// itself) would put the ratio B/A below zero: not estimable (more trials are needed).
    pub fn estimable(&self) -> bool {
        self.low > -1.0
    }
}

/// [`Interval`] as JSON holds it: the bounds null when it is not estimable.
#[derive(Serialize, Deserialize)]
struct IntervalJson {
    low: Option<f64>,
    high: Option<f64>,
    confidence: f64,
    /// Absent from JSON written before it (bounds always numbers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    estimable: Option<bool>,
}

impl From<Interval> for IntervalJson {
    fn from(i: Interval) -> IntervalJson {
        let estimable = i.estimable();
        IntervalJson {
            low: estimable.then_some(i.low),
            high: estimable.then_some(i.high),
            confidence: i.confidence,
            estimable: Some(estimable),
        }
    }
}

impl From<IntervalJson> for Interval {
    /// Null bounds (not estimable) read as unbounded: still not estimable.
    fn from(j: IntervalJson) -> Interval {
        let unbounded = j.estimable == Some(false);
        Interval {
            low: j.low.filter(|_| !unbounded).unwrap_or(f64::NEG_INFINITY),
            high: j.high.filter(|_| !unbounded).unwrap_or(f64::INFINITY),
            confidence: j.confidence,
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
pub struct CompareOptions {
    /// Noise floor as a fraction (`0.02` = 2%); `None`: each metric's A-side spread.
    pub min_effect: Option<f64>,
    /// Keep flagged trials in the verdict.
    pub include_flagged: bool,
}

/// Compares one metric given as plain samples (one value per trial); `min_effect` is the noise
/// floor as a fraction of A's median (`None`: A's relative spread, see the module docs).
pub(crate) fn compare_samples(
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
    /// What the side is: `--label-a`/`--label-b`, toggle values, setup command or labels (e.g.
    /// `net.ipv4.tcp_timestamps=1`).
    pub name: String,
    /// The name as tables, headlines and plots show it: [`short_name`] of `name` (the whole name
    /// is in the side's line).
    #[serde(default)]
    pub short: String,
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
    /// The offered rate every trial's latency phase (flagged trials' too) ran at, per second,
    /// when it was one
    /// (`ab` runs both sides' latency phases at one rate); `None` when they differ (the latency
    /// metrics are then [`Verdict::DifferentLoads`]) or no trial has a latency phase.
    #[serde(default)]
    pub offered_per_sec: Option<f64>,
    /// The distinct offered rates of the latency phases of every trial (flagged ones too), per
    /// side (A, B), lowest first: one value in all when like for like.
    #[serde(default)]
    pub offered_rates: (Vec<f64>, Vec<f64>),
}

/// Relative spread of offered rates (highest − lowest over highest) within which latency
/// phases count as run at one rate: 0.5% (`ab` gives every trial the same rate exactly; rates
/// of 80% of each trial's own peak differ by more).
pub const SAME_RATE: f64 = 0.005;

/// At most this many characters of a side's name in tables, headlines and plots.
pub const SHORT_NAME_CHARS: usize = 16;

/// A side's name for tables, headlines and plots: the name when it has at most
/// [`SHORT_NAME_CHARS`] characters; else toggles without their key's path
/// (`net.ipv4.tcp_timestamps=1` → `tcp_timestamps=1`) if that fits; else `letter` (`A`, `B`),
/// whose whole name the side's line gives.
pub fn short_name(name: &str, letter: &str) -> String {
    let fits = |s: &str| s.chars().count() <= SHORT_NAME_CHARS;
    if fits(name) {
        return name.to_string();
    }
    if !name.contains("setup: ") {
        let keys: Vec<&str> = name
            .split(", ")
            .map(|part| match part.split_once('=') {
                Some((k, _)) => &part[k.rfind('.').map_or(0, |i| i + 1)..],
                None => part,
            })
            .collect();
        let short = keys.join(", ");
        if fits(&short) {
            return short;
        }
    }
    letter.to_string()
}

/// The name of a side from its records' labels: distinct labels without a trailing trial tag,
/// joined by `, `; `unlabelled` when none. A tag is `#3`, or digits (after `-`, `_`, a space or
/// a letter) that only number trials: `A1`, `A2`, `A3` → `A`. Digits are kept when no other
/// label of the side shares the stem (`kernel2` alone stays `kernel2`: a side of one record
/// labelled `tlshttp2` was shown as `tlshttp`, the same name as the other side).
pub(crate) fn side_name(recs: &[RunRecord]) -> String {
    side_name_of(recs.iter().map(|r| r.label.as_str()))
}

/// [`side_name`] from the labels themselves.
pub(crate) fn side_name_of<'a>(labels: impl IntoIterator<Item = &'a str>) -> String {
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

fn side_info(
    recs: &[RunRecord],
    name: Option<&str>,
    letter: &str,
    opts: &CompareOptions,
) -> SideInfo {
    let name = name.map_or_else(|| side_name(recs), str::to_string);
    SideInfo {
        short: short_name(&name, letter),
        name,
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
pub(crate) fn method_text() -> String {
    format!(
        "Hodges-Lehmann shift (median of all B-A differences) with its exact {:.0}% Mann-Whitney interval, relative to A's median; a verdict needs >= {} unflagged trials a side, an interval excluding 0, and a shift >= the noise floor (--min-effect, default A's run-to-run spread 1.4826*MAD/median)",
        CONFIDENCE * 100.0,
        stats::MIN_TRIALS
    )
}

/// Compares trial set `a` with trial set `b` on every metric of [`METRICS`]; `names` name the
/// sides (`None`: from their labels: distinct labels without a trailing trial tag, `A1`, `A2`
/// → `A`).
pub fn compare(
    a: &[RunRecord],
    b: &[RunRecord],
    names: (Option<&str>, Option<&str>),
    opts: &CompareOptions,
) -> Comparison {
    let side_a = side_info(a, names.0, "A", opts);
    let side_b = side_info(b, names.1, "B", opts);
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
        if sa.is_empty()
            && sb.is_empty()
            && !in_excluded
            && (OPTIONAL_METRICS.contains(name)
                || TLS_SPLIT_METRICS.contains(name)
                || ACCEPT_WAIT_METRICS.contains(name))
        {
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
    // Latency depends on load: latency figures of phases at different offered rates are no
    // comparison (issue 37: each trial's latency phase ran at 80% of its own peak). Every
    // trial's rate counts, flagged ones too: whether the runs were like for like does not
    // depend on which trials the verdict keeps (and with every trial flagged there would be
    // nothing to say it from).
    let rates = |recs: &[RunRecord]| {
        let mut v: Vec<f64> = recs
            .iter()
            .filter_map(|r| latency_phase(r).and_then(|p| p.offered_per_sec))
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let offered_rates = (rates(a), rates(b));
    let all: Vec<f64> = offered_rates
        .0
        .iter()
        .chain(&offered_rates.1)
        .copied()
        .collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(l, h), &v| (l.min(v), h.max(v)));
    let one_rate = !all.is_empty() && (hi - lo) <= SAME_RATE * hi;
    let offered_per_sec = one_rate.then_some(hi);
    if !all.is_empty() && !one_rate && !closed_only {
        let span = |v: &[f64]| match v {
            [] => "-".to_string(),
            [one] => format!("{}/s", crate::numfmt::fixed(*one, 0)),
            [first, .., last] => format!(
                "{}–{}/s",
                crate::numfmt::fixed(*first, 0),
                crate::numfmt::fixed(*last, 0)
            ),
        };
        for m in metrics.iter_mut().filter(|m| m.phase == metrics::LATENCY) {
            if m.verdict != Verdict::NotApplicable {
                m.verdict = Verdict::DifferentLoads;
                m.relative_change = None;
                m.interval = None;
                m.p_value = None;
            }
        }
        notes.push(format!(
            "latency not compared: the latency phases ran at different offered rates (A {}, B {}), and latency depends on load; run both sides at one rate (`connstorm ab` does, from --rate or from the first pair's lower peak) for a latency comparison",
            span(&offered_rates.0),
            span(&offered_rates.1)
        ));
    } else if let Some(r) = offered_per_sec {
        notes.push(format!(
            "latency phases: every trial's at {}/s offered (one rate for both sides)",
            crate::numfmt::fixed(r, 0)
        ));
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
        offered_per_sec,
        offered_rates,
    }
}
