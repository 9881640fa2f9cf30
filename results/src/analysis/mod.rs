//! What records mean: every judgement made from them, as data the rendering shows. It reads the
//! record schema ([`crate::record`]) and nothing above it: no text layout, no file format.
//!
//! Files:
//! - `acceptance` ([`reconcile`]): the client's handshakes reconciled with the server kernel's
//!   passive opens (which handshakes the server never accepted);
//! - `crosscheck` ([`cross_check`]): our counts against the kernel's counters;
//! - `diagnosis` ([`diagnose`]): named causes of lost, refused or delayed handshakes, and which
//!   drops were the run's (`PhaseRecord::drops`);
//! - `warnings` ([`warnings`]): what a reader must know to trust a record's numbers;
//! - `saturation` ([`client_limits`]): what limited a closed-loop peak, and whether the load
//!   generator limited an open-loop step;
//! - `latency` ([`LatencySummary`]): the figures read from a latency histogram;
//! - `stats`: medians, spreads, the Hodges–Lehmann shift and its exact Mann–Whitney interval;
//! - `compare` ([`compare()`]): A/B comparison of trial sets with verdicts (`compare/flags.rs`
//!   which trials are flagged, `compare/setup.rs` how setups differ, `compare/refuse.rs` what is
//!   refused);
//! - `paired` ([`abba_order`], `Paired::from_slices`): the paired kernel-floor baseline;
//! - `sweep` ([`knee`]): capacity sweep steps and the knee under a latency SLO on the latency
//!   it names ([`Slo`], [`SloLatency`]), never from a step the generator limited;
//! - `scale` ([`scale_figures`]): `connstorm scale`'s step figures, scaling efficiency and the
//!   knee with what limited it; `overhead` ([`profile_overhead`]): the paired cost of a kernel
//!   profile;
//! - `spread` ([`uneven_spread`]): how evenly the server workers shared the accepts, and each
//!   CPU's NET_RX/NET_TX softirqs in words;
//! - `merge` ([`merge()`]): the records of a multi-host run joined into one exact record.

mod acceptance;
mod compare;
mod crosscheck;
mod diagnosis;
mod latency;
mod merge;
mod overhead;
mod paired;
mod saturation;
mod scale;
mod spread;
mod stats;
mod sweep;
mod warnings;

pub use acceptance::{client_view_note, reconcile, Acceptance, AcceptanceCause, Exactness};
pub use compare::{
    check_setups, compare, latency_phase, rate_phase, refuse_duplicates, short_name, trial_flags,
    trial_line, CompareOptions, Comparison, Direction, Interval, MetricComparison, SetupDifference,
    SideInfo, TrialInfo, Verdict, CONFIDENCE, METRICS, RULE_HELP, SAME_RATE, SHORT_NAME_CHARS,
};
pub use crosscheck::{cross_check, pre_syn_failures, CrossCheckCounts, PRE_SYN_FAILURES};
pub use diagnosis::{diagnose, Cause, CauseKind, Evidence};
pub use latency::{
    generator_lag_artefact, Bucket, LatencySummary, DEFAULT_BUCKET_EDGES_NS, GENERATOR_LAG_DROP_NS,
};
pub use merge::{merge, MergeError, MergeInput, Merged, SKEW_BOUND_MS};
pub use overhead::profile_overhead;
pub use paired::abba_order;
pub use saturation::{client_limits, side_busy_pct, LATE_LIMIT, SATURATED_PCT};
pub use scale::{knee_disturbances, scale_figures, settled, DEFAULT_EFFICIENCY, SETTLE_TOLERANCE};
pub use spread::{
    accept_spread, softirq_line, spread_line, uneven_spread, UNEVEN_MAX_OVER_MEAN, UNEVEN_MIN_MEAN,
};
pub use stats::{Spread, MIN_TRIALS};
pub use sweep::{
    knee, parse_percent, search_end, step_rates, steps_from_record, Criteria, Knee, SearchEnd, Slo,
    SloLatency, Step, SweepError, SLO_LATENCIES,
};
pub use warnings::{
    cpu_contention, derived_warnings, warnings, CpuContention, FOREIGN_CPU_PCT, STEAL_PCT,
};

#[cfg(test)]
pub(crate) use compare::compare_samples;
pub(crate) use compare::{metric_values, side_name_of, LATENCY_PHASE, PEAK_PHASE};
pub(crate) use diagnosis::diagnose_phases;
pub(crate) use latency::buckets;
pub(crate) use paired::min_samples;
pub(crate) use saturation::{saturation, Saturation};
pub(crate) use stats::median;
pub(crate) use sweep::{criteria_of, parse_latency_ns, step_ok};

#[cfg(test)]
pub(crate) use compare::tests as compare_tests;
#[cfg(test)]
pub(crate) use merge::tests as merge_tests;
