//! The figures read from a latency histogram (nanoseconds): the summary every report shows
//! (percentiles, mean, spread) and the bucket table.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The open loop's drop rule, ns: a due start the generator reaches more than this after its
/// intended time is dropped, never started (`loadgen::MAX_GENERATOR_LAG_NS`, which a test of
/// `connstorm-app` checks this against). So no start it makes lags more than this.
pub const GENERATOR_LAG_DROP_NS: u64 = 100_000_000;

/// The note a generator-lag figure needs when it is the drop rule, not a measurement: at a rate
/// far above what the generator can start, every start it makes is one it reached just inside
/// [`GENERATOR_LAG_DROP_NS`] (p50 = p99 = max = 100.01 ms) and the rest were dropped, so the
/// figure is the rule's bound. Said when the median lag is within 10% of the bound: a generator
/// keeping up lags microseconds. `None` otherwise.
pub fn generator_lag_artefact(lag: &LatencySummary) -> Option<String> {
    (lag.count > 0 && lag.p50_ns >= GENERATOR_LAG_DROP_NS / 10 * 9).then(|| {
        format!(
            "not a measurement: the {} ms drop rule (the generator fell behind its schedule; the starts it made are those it reached just inside the rule, the rest were dropped: see dropped starts)",
            GENERATOR_LAG_DROP_NS / 1_000_000
        )
    })
}

/// The figures a report shows for one latency histogram, all in nanoseconds.
///
/// Percentiles are HdrHistogram's `value_at_quantile` (the highest value equivalent to the
/// sample at that rank, so within 0.1% above the true sample). With no samples, all are 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample (lowest equivalent value).
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// 99.99th percentile.
    pub p9999_ns: u64,
    /// Largest sample (highest equivalent value).
    pub max_ns: u64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// Population standard deviation.
    pub stddev_ns: f64,
}

impl LatencySummary {
    /// Reads the summary figures from a histogram of nanoseconds.
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary {
                count: 0,
                min_ns: 0,
                p50_ns: 0,
                p90_ns: 0,
                p99_ns: 0,
                p999_ns: 0,
                p9999_ns: 0,
                max_ns: 0,
                mean_ns: 0.0,
                stddev_ns: 0.0,
            };
        }
        LatencySummary {
            count: h.len(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            p9999_ns: h.value_at_quantile(0.9999),
            max_ns: h.max(),
            mean_ns: h.mean(),
            stddev_ns: h.stdev(),
        }
    }

    /// The percentiles every report shows, in order (p50, p90, p99, p99.9, p99.99), as
    /// `(label, ns)`.
    pub fn percentiles(&self) -> [(&'static str, u64); 5] {
        [
            ("p50", self.p50_ns),
            ("p90", self.p90_ns),
            ("p99", self.p99_ns),
            ("p99.9", self.p999_ns),
            ("p99.99", self.p9999_ns),
        ]
    }
}

/// One row of a latency bucket table: the samples in `[lo_ns, hi_ns)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// Inclusive lower edge in ns (0 for the first bucket).
    pub lo_ns: u64,
    /// Exclusive upper edge in ns; `None` for the last, open-ended bucket.
    pub hi_ns: Option<u64>,
    /// Samples in the bucket.
    pub count: u64,
    /// `count` as a fraction of all samples (0.0..=1.0; 0 when there are none).
    pub share: f64,
}

/// Splits a histogram into buckets at the given edges (like cyclictest's histogram).
///
/// `edges_ns` must be strictly increasing; `n` edges give `n + 1` buckets: `[0, e0)`, `[e0, e1)`,
/// ..., `[e_last, ∞)`. A sample goes to the bucket holding its HdrHistogram value (exact to 3
/// significant digits), so a sample within 0.1% of an edge may land on either side. With no
/// edges there is one bucket holding everything.
pub(crate) fn buckets(h: &Histogram<u64>, edges_ns: &[u64]) -> Vec<Bucket> {
    let mut counts = vec![0u64; edges_ns.len() + 1];
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let idx = edges_ns.partition_point(|&e| e <= value);
        counts[idx] += v.count_since_last_iteration();
    }
    let total = h.len();
    counts
        .iter()
        .enumerate()
        .map(|(i, &count)| Bucket {
            lo_ns: if i == 0 { 0 } else { edges_ns[i - 1] },
            hi_ns: edges_ns.get(i).copied(),
            count,
            share: if total == 0 {
                0.0
            } else {
                count as f64 / total as f64
            },
        })
        .collect()
}

/// Default bucket edges of `connstorm report`: 50 µs, 100 µs, 250 µs, 500 µs, 1 ms, 2.5 ms, 5 ms,
/// 10 ms, 100 ms, 1 s (in ns).
pub const DEFAULT_BUCKET_EDGES_NS: [u64; 10] = [
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::new_latency_histogram;

    /// Issue 35 item 6: lag p50 = p99 = max = 100.01 ms is the drop rule; 24 µs is a lag.
    #[test]
    fn a_generator_lag_at_the_drop_rule_is_an_artefact() {
        let mut h = new_latency_histogram();
        h.record_n(100_010_000, 1_000).unwrap();
        let a = generator_lag_artefact(&LatencySummary::of(&h)).unwrap();
        assert!(
            a.starts_with("not a measurement: the 100 ms drop rule"),
            "{a}"
        );
        let mut quiet = new_latency_histogram();
        quiet.record_n(24_000, 990).unwrap();
        quiet.record_n(45_000, 10).unwrap();
        assert_eq!(generator_lag_artefact(&LatencySummary::of(&quiet)), None);
        assert_eq!(
            generator_lag_artefact(&LatencySummary::of(&new_latency_histogram())),
            None
        );
    }

    fn sample() -> Histogram<u64> {
        let mut h = new_latency_histogram();
        for i in 1..=10_000u64 {
            h.record(i * 1_000 + i % 7).unwrap();
        }
        h
    }

    #[test]
    fn summary_matches_the_histogram_and_is_ordered() {
        let h = sample();
        let s = LatencySummary::of(&h);
        assert_eq!(s.count, 10_000);
        assert_eq!(s.p99_ns, h.value_at_quantile(0.99));
        assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p90_ns && s.p90_ns <= s.p99_ns);
        assert!(s.p99_ns <= s.p999_ns && s.p999_ns <= s.p9999_ns && s.p9999_ns <= s.max_ns);
        assert_eq!(LatencySummary::of(&new_latency_histogram()).count, 0);
    }

    #[test]
    fn buckets_partition_all_samples_at_the_edges() {
        let h = sample(); // 1 µs .. 10 ms, uniform
        let b = buckets(&h, &[1_000_000, 5_000_000]);
        assert_eq!(b.len(), 3);
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), h.len());
        // A tenth of the samples are below 1 ms, within HdrHistogram's 0.1% resolution.
        assert!((b[0].share - 0.1).abs() < 0.002, "{:?}", b[0]);
        assert!((b[1].share - 0.4).abs() < 0.002, "{:?}", b[1]);
        assert_eq!(b[2].hi_ns, None);
        assert_eq!(b[1].lo_ns, 1_000_000);
    }
}
