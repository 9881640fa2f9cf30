//! Per-worker counters and histograms (plain integers; merged only at report time) and the
//! per-second message a worker sends to the coordinator.

use hdrhistogram::Histogram;

use crate::failures::{Failures, ProtoFailures};

/// Counters of one worker over one scope (whole run, measured window, or one second).
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    /// Intended starts that fell due (started + dropped).
    pub offered: u64,
    /// Attempts started.
    pub attempts: u64,
    /// Successes: handshakes completed (with `--http`: and a complete response read).
    pub successes: u64,
    /// TCP handshakes completed in time (successes, plus those whose HTTP exchange then failed
    /// or was cut by an interrupt): what the server's kernel counts in `Tcp.PassiveOpens`.
    pub handshakes: u64,
    /// Failed attempts by errno.
    pub failures: Failures,
    /// Failed attempts after the TCP handshake (HTTP exchange), by class.
    pub proto: ProtoFailures,
    /// Late starts.
    pub late: u64,
    /// Dropped starts (never started: not begun within `connect_timeout` of the intended time,
    /// or still due when the window ended).
    pub dropped: u64,
    /// The part of `dropped` that found every in-flight slot busy (the `max_in_flight` bound).
    pub dropped_full: u64,
    /// In flight when interrupted, still without an answer: abandoned, neither a success nor
    /// a failure (`attempts = successes + failures + abandoned`).
    pub abandoned: u64,
    /// Handshakes that completed, but after the attempt's connect timeout (measured from its
    /// socket(2) call): counted as `ETIMEDOUT` failures, never as successes. The server side did
    /// complete them, so they are handshakes when reconciling with the server's counters.
    pub completed_late: u64,
}

impl Counters {
    /// Adds another set.
    pub(crate) fn add(&mut self, o: &Counters) {
        self.offered += o.offered;
        self.attempts += o.attempts;
        self.successes += o.successes;
        self.handshakes += o.handshakes;
        self.failures.add(&o.failures);
        self.proto.add(&o.proto);
        self.late += o.late;
        self.dropped += o.dropped;
        self.dropped_full += o.dropped_full;
        self.abandoned += o.abandoned;
        self.completed_late += o.completed_late;
    }

    /// Failed attempts, all classes.
    pub(crate) fn failures_total(&self) -> u64 {
        self.failures.total() + self.proto.total()
    }

    /// Failed attempts by class name (errno names, then the [`ProtoFailures`] classes).
    pub(crate) fn failures_map(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m = self.failures.to_map();
        self.proto.add_to_map(&mut m);
        m
    }
}

/// One target address's whole-run counts on one worker (preallocated, one per target).
#[derive(Debug, Clone, Default)]
pub(crate) struct TargetCounters {
    /// Attempts started to it.
    pub attempts: u64,
    /// Handshakes completed in time.
    pub successes: u64,
    /// Failures by errno.
    pub failures: Failures,
    /// Failures after the TCP handshake, by class.
    pub proto: ProtoFailures,
    /// In flight when interrupted, still without an answer.
    pub abandoned: u64,
}

impl TargetCounters {
    /// Adds another set.
    pub(crate) fn add(&mut self, o: &TargetCounters) {
        self.attempts += o.attempts;
        self.successes += o.successes;
        self.failures.add(&o.failures);
        self.proto.add(&o.proto);
        self.abandoned += o.abandoned;
    }

    /// Failed attempts by class name.
    pub(crate) fn failures_map(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m = self.failures.to_map();
        self.proto.add_to_map(&mut m);
        m
    }
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
    pub(crate) fn overflow(&self) -> crate::report::Overflow {
        crate::report::Overflow {
            above: self.above,
            range_max_ns: self.hist.high(),
            true_max_ns: self.max_ns,
        }
    }
}

/// One worker's one second, sent to the coordinator once per second (never per connection).
#[derive(Debug)]
pub(crate) struct Second {
    /// Index of the worker that sends it (in `LoadConfig::cpus`).
    pub worker: usize,
    /// Second index since the rows' origin (`crate::worker::row_origin_ns`).
    pub t_secs: u64,
    /// Counts of this second.
    pub counters: Counters,
    /// Handshake latencies of this second's successes, ns.
    pub handshake: Latency,
    /// CLOCK_MONOTONIC ns up to which the counts reach: the end of the second, or the moment
    /// the worker stopped when a signal ended the run within it.
    pub until_ns: u64,
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
}
