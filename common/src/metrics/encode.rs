//! Helpers for collectors: counter and gauge families from plain numbers read at scrape time,
//! an info metric, a state gauge (one series per state, 1 for the current one), and a latency
//! histogram built from counts per bucket ([`Buckets`]).

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

/// A label set of owned key/value pairs (`[("worker", "0"), ("cpu", "3")]`).
pub type Labels = Vec<(&'static str, String)>;

/// The labels of one worker's series: its index in the CPU list and the CPU it is pinned to.
pub fn worker_labels(index: usize, cpu: usize) -> Labels {
    vec![("worker", index.to_string()), ("cpu", cpu.to_string())]
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`, as `uname -r` prints it), for
/// the engine info metric; `"unknown"` when unreadable.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Encodes a counter family `name` (the encoder appends the unit and `_total`) with one series
/// per `(labels, value)`. A family without series is left out (no descriptor without samples).
///
/// # Errors
/// Only when the writer fails.
pub fn counters<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    series: impl IntoIterator<Item = (L, u64)>,
) -> fmt::Result {
    let series: Vec<(L, u64)> = series.into_iter().collect();
    if series.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, unit, MetricType::Counter)?;
    for (labels, v) in &series {
        ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

/// Encodes a counter `name` with seconds as its value (`name_seconds_total`).
///
/// # Errors
/// Only when the writer fails.
pub fn counters_secs<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, f64)>,
) -> fmt::Result {
    let series: Vec<(L, f64)> = series.into_iter().collect();
    if series.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Counter)?;
    for (labels, v) in &series {
        ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

/// Encodes a gauge family `name` with one series per `(labels, value)`.
///
/// # Errors
/// Only when the writer fails.
pub fn gauges<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, i64)>,
) -> fmt::Result {
    let series: Vec<(L, i64)> = series.into_iter().collect();
    if series.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in &series {
        ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

/// Encodes an info metric `name` (the encoder appends `_info`; its value is always 1).
///
/// # Errors
/// Only when the writer fails.
pub fn info(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    labels: &Labels,
) -> fmt::Result {
    enc.encode_descriptor(name, help, None, MetricType::Info)?
        .encode_info(labels)
}

/// Encodes a state as a gauge family: one series per state of `states` under the label
/// `label`, 1 for `current` and 0 for the others (the classic Prometheus spelling of an
/// OpenMetrics state set, which `prometheus-client` 0.25 does not encode and the classic text
/// format does not know).
///
/// # Errors
/// Only when the writer fails.
pub fn state(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    label: &'static str,
    states: &[&str],
    current: &str,
) -> fmt::Result {
    gauges(
        enc,
        name,
        help,
        states
            .iter()
            .map(|s| (vec![(label, (*s).to_string())], i64::from(*s == current))),
    )
}

/// Upper bounds of the latency histograms' buckets, ns: 10 µs to 5 s in 1–2.5–5 steps (18
/// buckets plus `+Inf`), so a loopback handshake (tens of µs), a LAN one (hundreds of µs), a
/// stalled accept queue (ms) and a 1 s / 3 s SYN retransmit each land in a bucket of their
/// own. Exposed in seconds (`le="2.5e-5"`).
pub const LATENCY_BUCKETS_NS: [u64; 18] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
];

/// Cumulative counts of a latency histogram in the [`LATENCY_BUCKETS_NS`] buckets, with the sum
/// and the count, added to at the report interval (never per value on a hot path).
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    /// Values per bucket (not cumulative), the last one `+Inf`: `LATENCY_BUCKETS_NS.len() + 1`.
    per_bucket: Vec<u64>,
    /// Sum of the values, ns.
    sum_ns: u128,
    /// Number of values.
    count: u64,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            per_bucket: vec![0; LATENCY_BUCKETS_NS.len() + 1],
            sum_ns: 0,
            count: 0,
        }
    }
}

impl Buckets {
    /// Adds `n` values of `value_ns` ns each (the bucket is the first whose bound is ≥ it).
    pub fn add(&mut self, value_ns: u64, n: u64) {
        let i = LATENCY_BUCKETS_NS.partition_point(|&b| b < value_ns);
        self.per_bucket[i] += n;
        self.sum_ns += u128::from(value_ns) * u128::from(n);
        self.count += n;
    }

    /// Number of values added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the values added, seconds.
    pub fn sum_secs(&self) -> f64 {
        self.sum_ns as f64 / 1e9
    }

    /// Encodes the histogram `name` in seconds (`name_seconds_bucket`, `_sum`, `_count`).
    ///
    /// # Errors
    /// Only when the writer fails.
    pub fn encode(&self, enc: &mut DescriptorEncoder<'_>, name: &str, help: &str) -> fmt::Result {
        let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_NS
            .iter()
            .map(|&b| b as f64 / 1e9)
            .chain(std::iter::once(f64::INFINITY))
            .zip(self.per_bucket.iter().copied())
            .collect();
        enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?
            .encode_histogram::<NoLabelSet>(self.sum_secs(), self.count, &buckets, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_to_the_first_bucket_whose_bound_holds_them() {
        let mut b = Buckets::default();
        b.add(10_000, 2); // on the bound: le=1e-5
        b.add(10_001, 1); // just above: le=2.5e-5
        b.add(6_000_000_000, 1); // above the last bound: +Inf
        assert_eq!(b.per_bucket[0], 2);
        assert_eq!(b.per_bucket[1], 1);
        assert_eq!(b.per_bucket[LATENCY_BUCKETS_NS.len()], 1);
        assert_eq!(b.count(), 4);
        assert!((b.sum_secs() - 6.000_030_001).abs() < 1e-9);
    }
}
