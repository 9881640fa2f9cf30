//! Latency histograms in their stored form and the figures read from them.
//!
//! A run record stores each histogram as HdrHistogram's V2 + DEFLATE encoding in standard base64:
//! exactly the payload of one `.hlog` interval line, so any HdrHistogram implementation (Java's
//! `HistogramLogProcessor`, Python's `hdrh`, Go's `hdrhistogram-go`) can decode it. Values are
//! nanoseconds.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Lowest discernible value of [`new_latency_histogram`]: 1 ns.
pub const LOWEST_NS: u64 = 1;
/// Highest trackable value of [`new_latency_histogram`]: 1 hour in ns (larger values saturate).
pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Significant decimal digits of [`new_latency_histogram`]: 3 (0.1% value resolution).
pub const SIGFIG: u8 = 3;

/// Why an encoded histogram could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// The text is not standard base64 (`A-Z a-z 0-9 + /`, `=` padding).
    #[error("histogram is not valid base64 ({source}); it must be the V2+DEFLATE payload of an .hlog line, copied whole")]
    Base64 {
        /// The base64 decoder's complaint.
        #[source]
        source: base64::DecodeError,
    },
    /// The bytes are not an HdrHistogram V2 (compressed) histogram, or are cut short.
    #[error("histogram payload is not an HdrHistogram V2 encoding ({source}); the record may be damaged: re-run or restore it")]
    Format {
        /// HdrHistogram's complaint (bad cookie, truncated, unsupported feature...).
        #[source]
        source: hdrhistogram::serialization::DeserializeError,
    },
}

/// A histogram for latencies in nanoseconds: 1 ns to 1 h at 3 significant digits (values above
/// 1 h are clamped by [`Histogram::saturating_record`]; about 200 KiB of counters).
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG)
        .expect("constant bounds are valid: 1 <= 1 ns < 1 h, 3 significant digits")
}

/// Encodes a histogram as V2 + DEFLATE, standard base64 (the `.hlog` payload).
///
/// # Panics
/// If a count exceeds `i64::MAX`, which the V2 format cannot hold (never at real rates).
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("V2 encoding into memory fails only for counts above i64::MAX");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes what [`encode`] wrote (or any V2 / V2 + DEFLATE histogram in base64, e.g. from Java).
///
/// Surrounding whitespace is ignored.
///
/// # Errors
/// [`HistogramError::Base64`] for text that is not base64, [`HistogramError::Format`] for bytes
/// that are not an HdrHistogram V2 encoding (wrong cookie, cut short).
pub fn decode(s: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|source| HistogramError::Base64 { source })?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|source| HistogramError::Format { source })
}

/// The quantiles every report shows, with their labels: p50, p90, p99, p99.9, p99.99.
pub const REPORT_QUANTILES: [(f64, &str); 5] = [
    (0.50, "p50"),
    (0.90, "p90"),
    (0.99, "p99"),
    (0.999, "p99.9"),
    (0.9999, "p99.99"),
];

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

    /// The percentiles in [`REPORT_QUANTILES`] order, as `(label, ns)`.
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
pub fn buckets(h: &Histogram<u64>, edges_ns: &[u64]) -> Vec<Bucket> {
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

/// Formats nanoseconds with a readable unit: `850 ns`, `12.3 µs`, `1.25 ms`, `2.000 s`
/// ([`crate::numfmt::ns`], the tool's one formatter).
pub fn format_ns(ns: f64) -> String {
    crate::numfmt::ns(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Histogram<u64> {
        let mut h = new_latency_histogram();
        for i in 1..=10_000u64 {
            h.record(i * 1_000 + i % 7).unwrap();
        }
        h
    }

    #[test]
    fn encode_then_decode_gives_the_same_histogram() {
        let h = sample();
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.value_at_quantile(0.99), h.value_at_quantile(0.99));
    }

    #[test]
    fn decode_of_garbage_says_which_layer_failed() {
        assert!(matches!(
            decode("not base64 !!"),
            Err(HistogramError::Base64 { .. })
        ));
        assert!(matches!(
            decode("aGVsbG8gd29ybGQ="),
            Err(HistogramError::Format { .. })
        ));
        let cut = encode(&sample());
        let cut = &cut[..cut.len() / 2 / 4 * 4];
        assert!(matches!(decode(cut), Err(HistogramError::Format { .. })));
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

    #[test]
    fn format_ns_picks_the_unit() {
        assert_eq!(format_ns(850.0), "850 ns");
        assert_eq!(format_ns(12_345.0), "12.3 µs");
        assert_eq!(format_ns(1_250_000.0), "1.25 ms");
        assert_eq!(format_ns(2e9), "2.000 s");
    }
}
