//! Latency histograms in nanoseconds ([`Latency`]: HdrHistogram, 3 significant digits, values
//! above the range counted with their true maximum, [`Overflow`]) and how reports summarise
//! them ([`HistogramSummary`], [`PERCENTILES`]). Plain data: recorded per worker without
//! allocation, added together at report time (never averaged).

use hdrhistogram::Histogram;
use serde::{Serialize, Serializer};

/// The percentiles every report prints: p50, p90, p99, p99.9, p99.99 and the maximum (100).
pub const PERCENTILES: [f64; 6] = [50.0, 90.0, 99.0, 99.9, 99.99, 100.0];

/// What lies outside a latency histogram's range (values above it are recorded at its top for
/// the percentiles, and counted here with their true maximum).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Overflow {
    /// Values above `range_max_ns`.
    pub above: u64,
    /// The histogram's highest trackable value, ns.
    pub range_max_ns: u64,
    /// The largest value recorded, ns, unclamped (0 when nothing was recorded).
    pub true_max_ns: u64,
}

/// A latency histogram in ns, 3 significant digits, from 1 ns to `high_ns`. Use it through
/// [`Latency`], which counts values above `high_ns` instead of clamping them silently.
pub(crate) fn latency_histogram(high_ns: u64) -> Histogram<u64> {
    Histogram::new_with_bounds(1, high_ns.max(2), 3)
        .expect("valid histogram bounds: 1 <= 2 <= high")
}

/// A latency histogram (ns) plus what it cannot hold: values above its range are recorded at the
/// top of the range (so percentiles stay defined) **and** counted in `above`, and the true
/// maximum is kept in `max_ns`. No allocation per value.
#[derive(Debug, Clone)]
pub(crate) struct Latency {
    /// The histogram, 1 ns ..= its `high()`.
    pub hist: Histogram<u64>,
    /// Values above `hist.high()`.
    pub above: u64,
    /// The largest value recorded, ns, unclamped (0 when empty).
    pub max_ns: u64,
}

impl Latency {
    /// An empty histogram from 1 ns to `high_ns`.
    pub(crate) fn new(high_ns: u64) -> Latency {
        Latency {
            hist: latency_histogram(high_ns),
            above: 0,
            max_ns: 0,
        }
    }

    /// Records `v` ns (values below 1 ns are recorded as 1 ns).
    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        let v = v.max(1);
        if v > self.hist.high() {
            self.above += 1;
        }
        self.max_ns = self.max_ns.max(v);
        self.hist.saturating_record(v);
    }

    /// Adds another one with the same range.
    ///
    /// # Panics
    /// If the ranges differ (every worker uses the same one).
    pub(crate) fn add(&mut self, o: &Latency) {
        self.hist
            .add(&o.hist)
            .expect("histograms with equal bounds add");
        self.above += o.above;
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    /// What lies outside the range, for reports.
    pub(crate) fn overflow(&self) -> Overflow {
        Overflow {
            above: self.above,
            range_max_ns: self.hist.high(),
            true_max_ns: self.max_ns,
        }
    }
}

/// A histogram as the reports print it. An empty histogram has no minimum, mean, deviation
/// or percentiles: they are `None` (JSON `null`), never 0 ns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramSummary {
    /// Recorded values.
    pub count: u64,
    /// Smallest value, ns (`None` when empty).
    pub min_ns: Option<u64>,
    /// Mean, ns (`None` when empty).
    pub mean_ns: Option<f64>,
    /// Standard deviation, ns (`None` when empty).
    pub stdev_ns: Option<f64>,
    /// `(percentile, value_ns)` for each of [`PERCENTILES`] (100 = max); values `None` when
    /// empty.
    pub percentiles: Vec<(f64, Option<u64>)>,
}

impl HistogramSummary {
    /// Summarises a histogram of nanoseconds.
    pub fn of(h: &Histogram<u64>) -> HistogramSummary {
        let empty = h.is_empty();
        HistogramSummary {
            count: h.len(),
            min_ns: (!empty).then(|| h.min()),
            mean_ns: (!empty).then(|| h.mean()),
            stdev_ns: (!empty).then(|| h.stdev()),
            percentiles: PERCENTILES
                .iter()
                .map(|&p| {
                    (
                        p,
                        (!empty).then(|| {
                            if p >= 100.0 {
                                h.max()
                            } else {
                                h.value_at_percentile(p)
                            }
                        }),
                    )
                })
                .collect(),
        }
    }
}

pub(crate) fn summary<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
    HistogramSummary::of(h).serialize(s)
}

pub(crate) fn summary_opt<S: Serializer>(
    h: &Option<Histogram<u64>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    h.as_ref().map(HistogramSummary::of).serialize(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values outside a histogram: a 6 s stall in a histogram that ends at 4.001 s is counted
    /// above the range and its true value kept, never clamped silently.
    #[test]
    fn values_above_the_range_are_counted_and_the_true_max_kept() {
        let mut l = Latency::new(4_001_000_000);
        l.record(50_000);
        l.record(6_000_000_000);
        l.record(7_500_000_000);
        assert_eq!(l.above, 2);
        assert_eq!(l.max_ns, 7_500_000_000);
        assert_eq!(l.hist.len(), 3);
        let mut m = Latency::new(4_001_000_000);
        m.record(8_000_000_000);
        m.add(&l);
        let o = m.overflow();
        assert_eq!((o.above, o.true_max_ns), (3, 8_000_000_000));
        assert!(o.range_max_ns >= 4_001_000_000 && o.range_max_ns < 8_000_000_000);
    }

    #[test]
    fn summary_has_every_percentile_and_the_max() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 10_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let s = HistogramSummary::of(&h);
        assert_eq!(s.count, 1000);
        assert_eq!(s.percentiles.len(), PERCENTILES.len());
        let p50 = s.percentiles[0].1.unwrap();
        assert!((499_000..=501_000).contains(&p50), "{p50}");
        assert!(s.percentiles[5].1.unwrap() >= 1_000_000);
        let empty = HistogramSummary::of(&Histogram::<u64>::new(3).unwrap());
        assert_eq!(empty.count, 0);
        // Nothing measured: no figure, never 0 ns.
        assert!(empty.percentiles.iter().all(|&(_, v)| v.is_none()));
        assert_eq!(
            (empty.min_ns, empty.mean_ns, empty.stdev_ns),
            (None, None, None)
        );
        assert_eq!(
            serde_json::to_value(&empty).unwrap()["percentiles"][0],
            serde_json::json!([50.0, null])
        );
    }
}
