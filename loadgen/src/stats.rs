//! Per-worker counters and histograms (plain integers; merged only at report time) and the
//! per-second message a worker sends to the coordinator.

use hdrhistogram::Histogram;

use crate::failures::Failures;

/// Counters of one worker over one scope (whole run, measured window, or one second).
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Intended starts that fell due (started + dropped).
    pub offered: u64,
    /// Attempts started.
    pub attempts: u64,
    /// Handshakes completed.
    pub successes: u64,
    /// Failed attempts by errno.
    pub failures: Failures,
    /// Late starts.
    pub late: u64,
    /// Dropped starts (never started: not begun within `connect_timeout` of the intended time,
    /// or still due when the window ended).
    pub dropped: u64,
    /// The part of `dropped` that found every in-flight slot busy (the `max_in_flight` bound).
    pub dropped_full: u64,
    /// In flight when interrupted.
    pub abandoned: u64,
}

impl Counters {
    /// Adds another set.
    pub fn add(&mut self, o: &Counters) {
        self.offered += o.offered;
        self.attempts += o.attempts;
        self.successes += o.successes;
        self.failures.add(&o.failures);
        self.late += o.late;
        self.dropped += o.dropped;
        self.dropped_full += o.dropped_full;
        self.abandoned += o.abandoned;
    }
}

/// A latency histogram in ns, 3 significant digits, from 1 ns to `high_ns` (values above are
/// recorded as `high_ns`, so a stall is never silently lost).
pub fn latency_histogram(high_ns: u64) -> Histogram<u64> {
    Histogram::new_with_bounds(1, high_ns.max(2), 3)
        .expect("valid histogram bounds: 1 <= 2 <= high")
}

/// One worker's one second, sent to the coordinator once per second (never per connection).
#[derive(Debug)]
pub struct Second {
    /// Second index since the run start.
    pub t_secs: u64,
    /// Counts of this second.
    pub counters: Counters,
    /// Handshake latencies of this second's successes, ns.
    pub handshake: Histogram<u64>,
}
