//! The metrics a comparison reads from each record, and from which phase (the `compare` module
//! docs say why: rates and CPU from the closed-loop peak, latency from the open-loop phase).

use super::Direction;
use crate::analysis::latency::LatencySummary;
use crate::record::{Latency, Pattern, PhaseRecord, RunRecord};

/// The metrics compared: name, unit, direction, and the phase they are read from (`"peak"`:
/// [`rate_phase`], `"latency"`: [`latency_phase`]).
pub const METRICS: [(&str, &str, Direction, &str); 20] = [
    ("connections/s", "conn/s", Direction::HigherIsBetter, PEAK),
    ("handshake p50", "µs", Direction::LowerIsBetter, LATENCY),
    ("handshake p99", "µs", Direction::LowerIsBetter, LATENCY),
    ("handshake max", "µs", Direction::LowerIsBetter, LATENCY),
    ("first-byte p99", "µs", Direction::LowerIsBetter, LATENCY),
    ("accept wait p50", "µs", Direction::LowerIsBetter, LATENCY),
    ("accept wait p99", "µs", Direction::LowerIsBetter, LATENCY),
    ("server CPU per conn", "µs", Direction::LowerIsBetter, PEAK),
    ("load CPU per conn", "µs", Direction::LowerIsBetter, PEAK),
    ("sys %", "%", Direction::LowerIsBetter, PEAK),
    ("responses/s", "resp/s", Direction::HigherIsBetter, PEAK),
    ("TLS handshakes/s", "hs/s", Direction::HigherIsBetter, PEAK),
    ("TLS handshake p50", "µs", Direction::LowerIsBetter, LATENCY),
    ("TLS handshake p99", "µs", Direction::LowerIsBetter, LATENCY),
    (
        "TLS full handshakes/s",
        "hs/s",
        Direction::HigherIsBetter,
        PEAK,
    ),
    (
        "TLS resumed handshakes/s",
        "hs/s",
        Direction::HigherIsBetter,
        PEAK,
    ),
    (
        "TLS full handshake p50",
        "µs",
        Direction::LowerIsBetter,
        LATENCY,
    ),
    (
        "TLS full handshake p99",
        "µs",
        Direction::LowerIsBetter,
        LATENCY,
    ),
    (
        "TLS resumed handshake p50",
        "µs",
        Direction::LowerIsBetter,
        LATENCY,
    ),
    (
        "TLS resumed handshake p99",
        "µs",
        Direction::LowerIsBetter,
        LATENCY,
    ),
];

/// The metrics of full and resumed TLS handshakes apart (`--tls-resume tickets|ids`: one
/// mixed distribution of 15 full and 585 resumed handshakes has percentiles of neither):
/// optional as [`OPTIONAL_METRICS`], measured only where the records keep the split.
pub(crate) const TLS_SPLIT_METRICS: [&str; 6] = [
    "TLS full handshakes/s",
    "TLS resumed handshakes/s",
    "TLS full handshake p50",
    "TLS full handshake p99",
    "TLS resumed handshake p50",
    "TLS resumed handshake p99",
];

/// The accept-queue wait's metrics: optional as [`OPTIONAL_METRICS`], measured only by
/// `bench` with its own server and the epoll load engine.
pub(crate) const ACCEPT_WAIT_METRICS: [&str; 2] = ["accept wait p50", "accept wait p99"];

/// Metrics of a kind a run may not measure at all (greeting, `--http`, `--tls`): left out of a
/// comparison when neither side has them.
pub(crate) const OPTIONAL_METRICS: [&str; 5] = [
    "first-byte p99",
    "responses/s",
    "TLS handshakes/s",
    "TLS handshake p50",
    "TLS handshake p99",
];

/// Phase label of the metrics read from [`rate_phase`] (closed loop, as fast as it goes).
pub(crate) const PEAK: &str = "peak";

/// Phase label of the metrics read from [`latency_phase`] (open loop at a fixed offered rate).
pub(crate) const LATENCY: &str = "latency";

/// What `sys %` is, for the notes of a comparison.
pub(crate) const SYS_PCT_MEANING: &str = "sys %: system CPU time of the server and load workers as a share of their CPU capacity (wall time × CPUs they ran on) during the peak phase; kernel work per connection shows here";

/// The phase rate and CPU metrics are read from (see the `compare` module docs).
pub fn rate_phase(rec: &RunRecord) -> Option<&PhaseRecord> {
    rec.phase("peak")
        .or_else(|| {
            rec.phases
                .iter()
                .find(|p| matches!(p.pattern, Pattern::Closed { .. }))
        })
        .or_else(|| rec.phases.first())
}

/// The phase latency metrics are read from (see the `compare` module docs): the `latency` phase,
/// else the last open-loop phase; `None` for a record without one (a closed loop's latency is
/// measured at whatever rate it reached, so beside an open loop's it is no like-for-like figure: an
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
pub(crate) fn metric_values(rec: &RunRecord) -> [Option<f64>; METRICS.len()] {
    metric_values_in(rec, false)
}

/// [`metric_values`]; with `closed_only` the latency figures come from [`rate_phase`] (when no
/// record compared has an open-loop phase).
pub(super) fn metric_values_in(rec: &RunRecord, closed_only: bool) -> [Option<f64>; METRICS.len()] {
    let rate = rate_phase(rec);
    let lat = if closed_only {
        rate
    } else {
        latency_phase(rec)
    };
    let hs = lat.and_then(|p| summary(p, Latency::Handshake));
    let fb = lat.and_then(|p| summary(p, Latency::FirstByte));
    let aw = lat.and_then(|p| summary(p, Latency::AcceptQueueWait));
    let tls = lat.and_then(|p| summary(p, Latency::TlsHandshake));
    let full = lat.and_then(|p| summary(p, Latency::TlsFull));
    let resumed = lat.and_then(|p| summary(p, Latency::TlsResumed));
    // The rates of each kind where the record keeps the split (its histograms), else unknown.
    fn split(p: &PhaseRecord) -> Option<&crate::record::TlsCounts> {
        p.tls.as_ref().filter(|_| p.histograms.tls_full.is_some())
    }
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
        aw.map(|s| us(s.p50_ns)),
        aw.map(|s| us(s.p99_ns)),
        rate.and_then(|p| p.cpu.server)
            .and_then(|c| c.us_per_conn()),
        rate.and_then(|p| p.cpu.load.us_per_conn()),
        sys_pct,
        rate.and_then(|p| per_sec(p, p.http.as_ref()?.responses)),
        rate.and_then(|p| per_sec(p, p.tls.as_ref()?.handshakes)),
        tls.map(|s| us(s.p50_ns)),
        tls.map(|s| us(s.p99_ns)),
        rate.and_then(|p| per_sec(p, split(p)?.full)),
        rate.and_then(|p| per_sec(p, split(p)?.resumed)),
        full.map(|s| us(s.p50_ns)),
        full.map(|s| us(s.p99_ns)),
        resumed.map(|s| us(s.p50_ns)),
        resumed.map(|s| us(s.p99_ns)),
    ]
}

/// Says which record phase each metric group was read from, naming the phases found.
pub(super) fn phase_note<'a>(
    recs: impl Iterator<Item = &'a RunRecord> + Clone,
    closed_only: bool,
) -> String {
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
        "phases: \"{PEAK} phase\" metrics (rates, CPU, sys %) are read from record phase {} (closed loop, as fast as it goes); \"{LATENCY} phase\" metrics (handshake, first-byte, accept-queue wait and TLS handshake latency) from phase {} (open loop at a fixed offered rate)",
        names(rate_phase),
        names(latency_phase)
    )
}
