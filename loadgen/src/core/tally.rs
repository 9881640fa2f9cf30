//! A worker's tallies ([`Tally`]): its counters over three scopes (whole run, measured window,
//! current second), per target, its latency histograms, and the one place where an attempt's
//! outcome is counted ([`Tally::ended`]), so that `attempts = successes + failures + abandoned`
//! holds by construction. Plain integers, merged only at report time; the per-second message a
//! worker sends to the coordinator ([`Second`]).

use crate::failures::{Failures, ProtoFailure, ProtoFailures};
use crate::latency::Latency;

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

/// One worker's one second, sent to the coordinator once per second (never per connection).
#[derive(Debug)]
pub(crate) struct Second {
    /// Index of the worker that sends it (in `LoadConfig::cpus`).
    pub worker: usize,
    /// Second index since the rows' origin ([`super::row_origin_ns`]).
    pub t_secs: u64,
    /// Counts of this second.
    pub counters: Counters,
    /// Handshake latencies of this second's successes, ns.
    pub handshake: Latency,
    /// CLOCK_MONOTONIC ns up to which the counts reach: the end of the second, or the moment
    /// the worker stopped when a signal ended the run within it.
    pub until_ns: u64,
}

/// How an attempt ended: each attempt ends exactly once, by one of these
/// ([`Tally::ended`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The handshake completed in time (with `--http`/`--tls`: and the exchange after it).
    Success,
    /// The handshake failed with this errno (`ETIMEDOUT`: the connect timeout).
    Failure(i32),
    /// The handshake completed, the exchange after it failed (its class).
    Proto(ProtoFailure),
    /// In flight when the run was interrupted, without an answer: neither a success nor a
    /// failure.
    Abandoned,
}

/// One worker's tallies. Every count of an attempt goes through one of its methods; the
/// outcome of each attempt through [`Tally::ended`] alone.
#[derive(Debug)]
pub(crate) struct Tally {
    /// Whole run.
    pub total: Counters,
    /// Measured window only.
    pub measured: Counters,
    /// The current second (taken by [`Tally::take_second`]).
    second: Counters,
    /// Whole-run counts per target, in `LoadConfig::targets` order.
    pub per_target: Vec<TargetCounters>,
    /// Measured failures after a successful handshake, by errno.
    pub post_connect: Failures,
    /// Measured handshake latency (intended start → connected), ns.
    pub handshake: Latency,
    /// Measured service latency (socket(2) → connected), ns.
    pub service: Latency,
    /// Measured first-byte latency (intended start → `expect_bytes` read), ns.
    pub first_byte: Latency,
    /// Open loop, measured starts: actual − scheduled start, ns (the generator's lag).
    pub lag: Latency,
    /// This second's handshake latencies, ns.
    sec_handshake: Latency,
    high_ns: u64,
}

impl Tally {
    /// Empty tallies for `targets` targets, histograms from 1 ns to `high_ns`.
    pub(crate) fn new(targets: usize, high_ns: u64) -> Tally {
        Tally {
            total: Counters::default(),
            measured: Counters::default(),
            second: Counters::default(),
            per_target: vec![TargetCounters::default(); targets],
            post_connect: Failures::default(),
            handshake: Latency::new(high_ns),
            service: Latency::new(high_ns),
            first_byte: Latency::new(high_ns),
            lag: Latency::new(high_ns),
            sec_handshake: Latency::new(high_ns),
            high_ns,
        }
    }

    /// Applies `f` to the whole-run, the current-second and (when `measured`) the measured
    /// counters.
    #[inline]
    fn bump(&mut self, measured: bool, f: impl Fn(&mut Counters)) {
        f(&mut self.total);
        f(&mut self.second);
        if measured {
            f(&mut self.measured);
        }
    }

    /// An attempt to `target` started (`late`: past the late threshold).
    #[inline]
    pub(crate) fn started(&mut self, measured: bool, target: usize, late: bool) {
        self.bump(measured, |c| {
            c.attempts += 1;
            c.offered += 1;
            c.late += u64::from(late);
        });
        self.per_target[target].attempts += 1;
    }

    /// `n` intended starts were dropped, never started (`full`: every in-flight slot was busy).
    pub(crate) fn dropped(&mut self, n: u64, full: bool, measured: bool) {
        if n == 0 {
            return;
        }
        self.bump(measured, |c| {
            c.dropped += n;
            c.dropped_full += if full { n } else { 0 };
            c.offered += n;
        });
    }

    /// A handshake completed in time: `handshake_ns` from the intended start, `service_ns` from
    /// the socket(2) call. Counted in `handshakes`; the outcome is counted apart.
    #[inline]
    pub(crate) fn handshake(&mut self, measured: bool, handshake_ns: u64, service_ns: u64) {
        self.sec_handshake.record(handshake_ns);
        if measured {
            self.handshake.record(handshake_ns);
            self.service.record(service_ns);
        }
        self.bump(measured, |c| c.handshakes += 1);
    }

    /// A handshake completed after its connect timeout (it ends as an `ETIMEDOUT` failure).
    pub(crate) fn completed_late(&mut self, measured: bool) {
        self.bump(measured, |c| c.completed_late += 1);
    }

    /// The attempt to `target` ended with `outcome`: the one place where successes, failures
    /// and abandoned attempts are counted, so `attempts = successes + failures + abandoned`
    /// as long as every started attempt ends here exactly once (`crate::core::Core::end`).
    #[inline]
    pub(crate) fn ended(&mut self, measured: bool, target: usize, outcome: Outcome) {
        let t = &mut self.per_target[target];
        match outcome {
            Outcome::Success => t.successes += 1,
            Outcome::Failure(errno) => t.failures.count(errno),
            Outcome::Proto(f) => t.proto.count_one(f),
            Outcome::Abandoned => t.abandoned += 1,
        }
        self.bump(measured, |c| match outcome {
            Outcome::Success => c.successes += 1,
            Outcome::Failure(errno) => c.failures.count(errno),
            Outcome::Proto(f) => c.proto.count_one(f),
            Outcome::Abandoned => c.abandoned += 1,
        });
    }

    /// A connection that succeeded failed afterwards with `errno` (not an outcome: the
    /// attempt is a success).
    pub(crate) fn post_connect(&mut self, measured: bool, errno: i32) {
        if measured {
            self.post_connect.count(errno);
        }
    }

    /// First-byte latency of a measured attempt, ns.
    pub(crate) fn first_byte(&mut self, measured: bool, ns: u64) {
        if measured {
            self.first_byte.record(ns);
        }
    }

    /// The generator's lag of a measured open-loop start, ns.
    pub(crate) fn lag(&mut self, ns: u64) {
        self.lag.record(ns);
    }

    /// The current second's counters and handshake latencies; the next second starts empty.
    pub(crate) fn take_second(&mut self) -> (Counters, Latency) {
        let counters = std::mem::take(&mut self.second);
        let fresh = Latency::new(self.high_ns);
        (counters, std::mem::replace(&mut self.sec_handshake, fresh))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the outcomes, each scope and each target balance: attempts = successes +
    /// failures + abandoned.
    #[test]
    fn every_outcome_lands_in_one_class_of_each_scope() {
        let mut t = Tally::new(2, 1_000_000);
        let outcomes = [
            Outcome::Success,
            Outcome::Failure(libc::ECONNREFUSED),
            Outcome::Proto(ProtoFailure::HttpErrno(libc::ECONNRESET)),
            Outcome::Abandoned,
            Outcome::Success,
        ];
        for (k, &o) in outcomes.iter().enumerate() {
            let measured = k % 2 == 0;
            t.started(measured, k % 2, false);
            t.ended(measured, k % 2, o);
        }
        let balance = |c: &Counters| c.attempts == c.successes + c.failures_total() + c.abandoned;
        assert!(balance(&t.total) && balance(&t.measured));
        let (second, _) = t.take_second();
        assert!(balance(&second));
        assert_eq!(t.total.attempts, 5);
        assert_eq!(t.measured.attempts, 3);
        for p in &t.per_target {
            assert_eq!(
                p.attempts,
                p.successes + p.failures.total() + p.proto.total() + p.abandoned
            );
        }
        assert_eq!(t.take_second().0.attempts, 0);
    }
}
