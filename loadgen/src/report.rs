//! What a load run returns: measured counts, failures by cause, merged latency histograms, the
//! per-second timeline and per-worker CPU time.

use std::collections::BTreeMap;

use common::numfmt::count;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::config::{CloseMode, Pattern};
use crate::latency::{summary, summary_opt};
pub use crate::latency::{HistogramSummary, Overflow, PERCENTILES};

/// The failure class of a handshake the client completed but the server never accepted (see
/// [`LoadReport::reclassify_never_accepted`]).
pub const NEVER_ACCEPTED: &str = "NEVER_ACCEPTED";

/// The failure class of a handshake the server's kernel completed and queued, but that was
/// still in the listener's accept queue when the run ended and the server had been given time
/// to take it: never accepted by the server application (see
/// [`LoadReport::reclassify_still_queued`]).
pub const NEVER_ACCEPTED_QUEUED: &str = "NEVER_ACCEPTED_QUEUED";

/// Counts over the whole run including warm-up, for exact cross-checks against the kernel's
/// counters (e.g. `Tcp.ActiveOpens` delta == attempts that reached connect(2)).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Attempts started (socket(2) called).
    pub attempts: u64,
    /// Successful attempts: the handshake completed (with `--http`: and a complete response
    /// was read).
    pub successes: u64,
    /// TCP handshakes completed in time: the successes plus the attempts whose HTTP exchange
    /// failed after the handshake or was cut by an interrupt (what the server's kernel counts in
    /// `Tcp.PassiveOpens`).
    pub handshakes: u64,
    /// Failed attempts by cause: errno names, and the classes after the TCP handshake
    /// ([`crate::failures::ProtoFailures`], e.g. `HTTP parse error: truncated`).
    pub failures: BTreeMap<String, u64>,
    /// Attempts that started more than `late_threshold` after their intended time.
    pub late: u64,
    /// Intended starts never started: not begun within `connect_timeout` of the intended time
    /// (no free in-flight slot, or the generator fell that far behind), or still due when the
    /// window ended.
    pub dropped: u64,
    /// Attempts still waiting for their handshake (or, with `--http`/`--tls`, for their exchange after
    /// it) when the run was interrupted: each was asked
    /// where it stood first (a completed one is a success, a failed one a failure), and the rest
    /// are abandoned: counted here only, neither successes nor failures, so
    /// `attempts = successes + failures + abandoned` (each still sent its SYN: all are in the
    /// kernel's `Tcp.ActiveOpens`).
    pub abandoned: u64,
    /// Handshakes that completed after their connect timeout (counted `ETIMEDOUT` failures, never
    /// successes). `successes + completed_after_timeout` = handshakes the client completed.
    pub completed_after_timeout: u64,
}

/// The whole run's counts of one target address (warm-up included), so that a failure on one
/// address while another accepts is named.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetReport {
    /// The address.
    pub target: std::net::SocketAddr,
    /// Attempts started to it.
    pub attempts: u64,
    /// Handshakes completed with it in time.
    pub successes: u64,
    /// Failed attempts by errno name.
    pub failures: BTreeMap<String, u64>,
    /// Attempts to it still without an answer when the run was interrupted (neither successes
    /// nor failures).
    pub abandoned: u64,
}

/// One second's latency histogram, kept in HdrHistogram's V2 encoding (sparse: runs of empty
/// buckets collapse) instead of as a [`Histogram`]: a 1 ns – 1 s histogram at 3 significant
/// digits holds ~22,500 counters (~180 KiB) however few values it has, so a timeline of live
/// histograms grew by that much every second (130 MiB peak RSS over a 10-minute run at 1M CPM);
/// a second's encoding is a few hundred bytes. Decoded with [`SecondHistogram::decode`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecondHistogram(Vec<u8>);

impl SecondHistogram {
    /// Encodes `h` (V2, no deflate: encoding runs once a second, decoding at the end).
    pub fn of(h: &Histogram<u64>) -> SecondHistogram {
        use hdrhistogram::serialization::Serializer as _;
        let mut bytes = Vec::new();
        // Writing into a Vec cannot fail: the V2 serializer fails only on I/O errors and on
        // counts beyond i64, which a second of connections cannot reach.
        let _ = hdrhistogram::serialization::V2Serializer::new().serialize(h, &mut bytes);
        SecondHistogram(bytes)
    }

    /// The histogram again, bounds and counts as encoded; an empty 1 ns – 1 s histogram for a
    /// default (empty) value.
    pub fn decode(&self) -> Histogram<u64> {
        hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut &self.0[..])
            .unwrap_or_else(|_| {
                Histogram::new_with_bounds(1, 1_000_000_000, 3)
                    .expect("valid histogram bounds: 1 <= 1e9")
            })
    }

    /// Encoded size, bytes.
    pub fn encoded_len(&self) -> usize {
        self.0.len()
    }
}

/// One second of the run (warm-up included, flagged).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TimelineRow {
    /// Which second: this row covers `[t, t+1)` seconds after the rows' origin, which is the
    /// start of the run when the warm-up is whole seconds (or none), and otherwise the start of
    /// the measured part minus the warm-up rounded up, so that the measured part begins at
    /// `t = ceil(warm-up)` and no row mixes warm-up with measured time (the first row is then
    /// partial: see `length_secs`).
    pub t_secs: u64,
    /// True when the second lies in the warm-up (no row straddles the start of the measured
    /// part).
    pub warmup: bool,
    /// Starts handled in this second: attempts started plus starts dropped (open loop; in
    /// closed loop the attempts started). Counted when the generator handled them, so after it
    /// fell behind a second holds starts that fell due in earlier ones and can exceed the
    /// rate; the run's totals are exact (offered = attempts + dropped).
    pub offered: u64,
    /// Attempts started.
    pub attempts: u64,
    /// Handshakes completed.
    pub successes: u64,
    /// Attempts failed.
    pub failures: u64,
    /// The same failures by cause (errno name → count); empty when there were none.
    pub failures_by_cause: BTreeMap<String, u64>,
    /// Late starts.
    pub late: u64,
    /// Dropped starts.
    pub dropped: u64,
    /// Median handshake latency (intended start → connected) of this second's successes, ns.
    pub p50_ns: u64,
    /// 99th percentile of the same, ns.
    pub p99_ns: u64,
    /// The largest handshake latency of this second, ns, unclamped (0 without successes).
    pub max_ns: u64,
    /// How much of this second lies inside the run's window (warm-up + duration), seconds:
    /// 1.0 for a whole second, less for a partial one — the last of a window that is not whole
    /// seconds, the first of a warm-up that is not (counts in it cover only that long: divide
    /// by it for a per-second rate) —, 0.0 for a drain second after the window
    /// (no new starts; in-flight attempts ending).
    pub length_secs: f64,
    /// This second's handshake latencies (ns), for per-second interval logs, kept encoded
    /// ([`SecondHistogram`]); `None` only in rows built by hand.
    #[serde(skip)]
    pub handshake: Option<SecondHistogram>,
    /// The same second per worker, in `LoadConfig::cpus` order (for per-worker metrics);
    /// empty in rows built by hand.
    #[serde(skip)]
    pub workers: Vec<WorkerSecond>,
}

/// One worker's counts in one [`TimelineRow`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerSecond {
    /// The CPU the worker is pinned to.
    pub cpu: usize,
    /// Attempts started.
    pub attempts: u64,
    /// Handshakes completed in time.
    pub successes: u64,
    /// Attempts failed.
    pub failures: u64,
    /// Attempts in flight when a signal stopped the run, without an answer.
    pub abandoned: u64,
    /// Dropped starts (open loop).
    pub dropped: u64,
}

impl TimelineRow {
    /// True for a second after the run's window: only the drain of attempts in flight.
    pub fn is_drain(&self) -> bool {
        self.length_secs <= 0.0
    }

    /// True for a row shorter than a second that is not a drain second.
    pub fn is_partial(&self) -> bool {
        self.length_secs > 0.0 && self.length_secs < 1.0
    }

    /// `count` per second of this row's length (`None` for a drain second).
    pub fn per_sec(&self, count: u64) -> Option<f64> {
        (self.length_secs > 0.0).then(|| count as f64 / self.length_secs)
    }
}

/// One worker's share.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadWorkerReport {
    /// The CPU it was pinned to.
    pub cpu: usize,
    /// Attempts started (whole run).
    pub attempts: u64,
    /// Handshakes completed (whole run).
    pub successes: u64,
    /// Failed attempts (whole run).
    pub failures: u64,
    /// Attempts started in the measured window (the part [`LoadReport::attempts`] counts: the
    /// workers' rows add up to it).
    pub measured_attempts: u64,
    /// Successes in the measured window (the rows add up to [`LoadReport::successes`], less
    /// [`LoadReport::workers_measured_successes_never_accepted`]).
    pub measured_successes: u64,
    /// Failed attempts in the measured window, all classes (the rows add up to the sum of
    /// [`LoadReport::failures`], plus the handshakes the server never accepted with several
    /// workers).
    pub measured_failures: u64,
    /// User CPU time of the worker thread, ns (getrusage(2) RUSAGE_THREAD; on kernels with
    /// tick-based accounting the user/sys split is sampled at scheduler ticks).
    pub cpu_user_ns: u64,
    /// On-CPU time of the worker thread, ns, exact (CLOCK_THREAD_CPUTIME_ID).
    pub cpu_run_ns: u64,
    /// System CPU time of the worker thread, ns.
    pub cpu_sys_ns: u64,
    /// Wall time of the worker's loop, ns.
    pub wall_ns: u64,
    /// The worker's slice of the ephemeral range, inclusive (`--port-slices on` where the kernel
    /// has IP_LOCAL_PORT_RANGE); `None` when it drew from the shared range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_slice: Option<(u16, u16)>,
    /// The CPU the worker thread was pinned to once its engine and core had made their
    /// per-worker memory (slot tables, buffers, ring, histograms, stamp buffer:
    /// [`common::numa::pinned_cpu`]); `None` when it was not pinned to one CPU then. Equal to
    /// [`LoadWorkerReport::cpu`]: first touch put that memory on the CPU's NUMA node
    /// (docs/engines.md, "Per-worker memory").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alloc_cpu: Option<usize>,
    /// The spin before each due start it ran with, ns: `--spin`, or what `--spin auto`
    /// measured on its CPU at its start.
    pub spin_ns: u64,
    /// On-CPU time of the spin passes that found nothing to do (no request to submit, no
    /// completion), ns: part of `cpu_run_ns`, the generator waiting for its due starts.
    pub spun_ns: u64,
}

/// The result of [`crate::run`]. Measured numbers exclude the warm-up; `total` includes it.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// How connections were closed.
    pub close: CloseMode,
    /// Open (rate) or closed (concurrency) loop.
    pub pattern: Pattern,
    /// Length of the measured window that ran, seconds (shorter than the duration when interrupted).
    pub measured_secs: f64,
    /// Offered rate, connections per second (open loop only).
    pub offered_per_sec: Option<f64>,
    /// Successful handshakes per second over the measured window.
    pub achieved_per_sec: f64,
    /// Measured intended starts that fell due (open loop): `attempts + dropped`. In closed loop
    /// equal to `attempts`.
    pub offered: u64,
    /// Measured attempts (intended start inside the measured window).
    pub attempts: u64,
    /// Measured successes.
    pub successes: u64,
    /// Measured failures by errno name (`ETIMEDOUT` = our connect timeout).
    pub failures: BTreeMap<String, u64>,
    /// Failures after a completed handshake (reading `expect_bytes` or waiting for the server's
    /// FIN), by errno name; these attempts count as successes above.
    pub post_connect_failures: BTreeMap<String, u64>,
    /// Measured handshakes that completed after their connect timeout (counted `ETIMEDOUT` in
    /// `failures`).
    pub completed_after_timeout: u64,
    /// Measured late starts.
    pub late: u64,
    /// Measured dropped starts (see [`Totals::dropped`]).
    pub dropped: u64,
    /// Measured attempts abandoned at an interrupt (see [`Totals::abandoned`]):
    /// `attempts = successes + failures + abandoned`.
    pub abandoned: u64,
    /// The part of `dropped` that found every in-flight slot busy (`max_in_flight` reached).
    pub dropped_in_flight_full: u64,
    /// Whole-run counts including warm-up.
    pub total: Totals,
    /// Handshake latency, ns: intended start → connect completed (measured successes).
    #[serde(serialize_with = "summary")]
    pub handshake: Histogram<u64>,
    /// Service latency, ns: socket(2) call (a kept socket's connect submission on the io_uring
    /// engine with `--close rst`: `engine::uring` docs, "Reuse") → connect completed.
    #[serde(serialize_with = "summary")]
    pub service: Histogram<u64>,
    /// First-byte latency, ns: intended start → `expect_bytes` read (only with `expect_bytes`).
    #[serde(serialize_with = "summary_opt")]
    pub first_byte: Option<Histogram<u64>>,
    /// Values above the handshake histogram's range (zero unless an invariant broke: a success
    /// is at most two connect timeouts after its intended start, the range is three plus 1 s).
    pub handshake_overflow: Overflow,
    /// The same for the service histogram.
    pub service_overflow: Overflow,
    /// The same for the first-byte histogram (only with `expect_bytes`).
    pub first_byte_overflow: Option<Overflow>,
    /// Open loop only: the generator's own lag, so handshake latency can be read net of it.
    pub generator_lag: Option<GeneratorLag>,
    /// Whole-run counts per target address, in `LoadConfig::targets` order.
    pub per_target: Vec<TargetReport>,
    /// One row per second, warm-up included.
    pub timeline: Vec<TimelineRow>,
    /// Per worker, in CPU-list order.
    pub workers: Vec<LoadWorkerReport>,
    /// Handshakes the rows of [`LoadReport::workers`] still count as successes although the
    /// server never accepted them (moved to failures in the totals by
    /// [`LoadReport::reclassify_never_accepted`] and [`LoadReport::reclassify_still_queued`]):
    /// with several workers the kernel's counters do not say whose they were, so the rows add up
    /// to the totals' successes plus this. With one worker its row moves them (0 here).
    pub workers_successes_never_accepted: u64,
    /// The part of [`LoadReport::workers_successes_never_accepted`] in the measured window:
    /// the rows' `measured_successes` add up to [`LoadReport::successes`] plus this.
    pub workers_measured_successes_never_accepted: u64,
    /// True when the stop flag ended the run early.
    pub interrupted: bool,
    /// The HTTP side of the run (`--http` only).
    pub http: Option<crate::http::HttpReport>,
    /// The TLS side of the run (`--tls` only).
    pub tls: Option<crate::tls::TlsReport>,
    /// The connect engine that ran, how `auto` chose it and (io_uring) which kernel features
    /// each step used; `None` when the run never started ([`crate::never_started`]).
    pub engine: Option<crate::engine::EngineRan>,
    /// The accept-queue wait's client stamps, every worker's ([`crate::AcceptStamps`]); `None`
    /// when not asked for or the engine cannot (io_uring). Not serialized: `bench` joins them
    /// with its server's and reports the waits.
    #[serde(skip)]
    pub accept_stamps: Option<ClientStamps>,
    /// How the workers got their ephemeral ports (their own slices, or the shared range and
    /// why); `None` when the run never started.
    pub port_slices: Option<crate::ports::SliceState>,
}

/// The generator's accept-queue wait stamps of a run ([`LoadReport::accept_stamps`]).
#[derive(Debug, Clone, Default)]
pub struct ClientStamps {
    /// Every connection whose handshake completed, warm-up included (so each port's
    /// connections are all there to join in order).
    pub stamps: common::acceptwait::Stamps,
    /// Where the measured window began, CLOCK_MONOTONIC ns: stamps before it are warm-up.
    pub measured_from_ns: u64,
}

impl LoadReport {
    /// The wire the run's connections were on, in words ([`common::wire::describe`]): the
    /// protocol (`--http`, `--tls`) and the close discipline (`--close`), the first words of
    /// its summary and of `load`'s JSON.
    pub fn wire(&self) -> String {
        common::wire::describe(self.close.name(), self.http.is_some(), self.tls.is_some())
    }

    /// Connections per minute: measured successes × 60 / measured seconds (0 when nothing was
    /// measured).
    pub fn cpm(&self) -> f64 {
        self.achieved_per_sec * 60.0
    }

    /// Measured failures, all causes.
    pub fn failures_total(&self) -> u64 {
        self.failures.values().sum()
    }

    /// Moves `never_accepted` handshakes from successes to the failure class
    /// [`NEVER_ACCEPTED`]: handshakes the client completed that the server's kernel never
    /// turned into a connection (found by reconciling with the server's `Tcp.PassiveOpens`, see
    /// `results::acceptance`). Applies to the whole-run totals; to the measured figures (and the
    /// achieved rate) only when `measured_is_whole_run` (no warm-up: then every attempt is
    /// measured), since the counters cannot tell warm-up handshakes apart. With a single target
    /// its per-target counts move too. At most the successes there are move.
    pub fn reclassify_never_accepted(&mut self, never_accepted: u64, measured_is_whole_run: bool) {
        let before = self.total.successes;
        fn shift(successes: &mut u64, failures: &mut BTreeMap<String, u64>, n: u64) {
            let n = n.min(*successes);
            if n > 0 {
                *successes -= n;
                *failures.entry(NEVER_ACCEPTED.to_string()).or_insert(0) += n;
            }
        }
        shift(
            &mut self.total.successes,
            &mut self.total.failures,
            never_accepted,
        );
        let measured_before = self.successes;
        if measured_is_whole_run {
            shift(&mut self.successes, &mut self.failures, never_accepted);
            self.achieved_per_sec = if self.measured_secs > 0.0 {
                self.successes as f64 / self.measured_secs
            } else {
                0.0
            };
        }
        if let [t] = self.per_target.as_mut_slice() {
            shift(&mut t.successes, &mut t.failures, never_accepted);
        }
        let moved = never_accepted.min(before);
        let moved_measured = measured_before - self.successes;
        self.workers_never_accepted(moved, moved_measured);
    }

    /// `n` whole-run successes became failures (never accepted), `measured` of them in the
    /// measured window: one worker's row moves them; with several, which rows hold them is
    /// unknown and [`LoadReport::workers_successes_never_accepted`] (and its measured part)
    /// counts them (issue 35: `workers[]` counted them as successes where the totals did not).
    fn workers_never_accepted(&mut self, n: u64, measured: u64) {
        match self.workers.as_mut_slice() {
            [w] => {
                let m = n.min(w.successes);
                w.successes -= m;
                w.failures += m;
                let m = measured.min(w.measured_successes);
                w.measured_successes -= m;
                w.measured_failures += m;
            }
            _ => {
                self.workers_successes_never_accepted += n;
                self.workers_measured_successes_never_accepted += measured;
            }
        }
    }

    /// Moves `queued` handshakes from successes to the failure class [`NEVER_ACCEPTED_QUEUED`]:
    /// connections of this run still waiting in the listener's accept queue after the run ended
    /// and the server was given time to accept them (the caller reads the queue). The accept
    /// queue is FIFO (`reqsk_queue_remove` takes the head, include/net/request_sock.h), so what
    /// is left in it is the newest connections: they move from the measured successes first
    /// (at most those there are; the rest from the warm-up, whole-run totals only), and the
    /// achieved rate is recomputed. With a single target its per-target counts move too. At most
    /// the whole-run successes move (a queued connection the client saw complete only after its
    /// connect timeout is already an `ETIMEDOUT` failure). Returns how many moved.
    pub fn reclassify_still_queued(&mut self, queued: u64) -> u64 {
        let n = queued.min(self.total.successes);
        if n == 0 {
            return 0;
        }
        let class = || NEVER_ACCEPTED_QUEUED.to_string();
        self.total.successes -= n;
        *self.total.failures.entry(class()).or_insert(0) += n;
        let measured = n.min(self.successes);
        if measured > 0 {
            self.successes -= measured;
            *self.failures.entry(class()).or_insert(0) += measured;
            self.achieved_per_sec = if self.measured_secs > 0.0 {
                self.successes as f64 / self.measured_secs
            } else {
                0.0
            };
        }
        if let [t] = self.per_target.as_mut_slice() {
            let m = n.min(t.successes);
            t.successes -= m;
            *t.failures.entry(class()).or_insert(0) += m;
        }
        self.workers_never_accepted(n, measured);
        n
    }

    /// The worker with the largest on-CPU share of its loop's wall time: `(cpu, share 0..1)`;
    /// `None` without workers or wall time.
    pub fn busiest_worker(&self) -> Option<(usize, f64)> {
        self.workers
            .iter()
            .filter(|w| w.wall_ns > 0)
            .map(|w| (w.cpu, w.cpu_run_ns as f64 / w.wall_ns as f64))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Open loop: a warning when the generator did not keep its schedule in the measured window
    /// (more than 1% of starts later than `late_threshold`, or any start dropped), else `None`.
    /// Then the achieved rate and the latencies describe the generator as much as the server.
    pub fn schedule_warning(&self) -> Option<String> {
        self.schedule_warning_with(true)
    }

    /// [`Self::schedule_warning`] for a command with (`load`) or without (`bench`, whose
    /// latency phase has no such flag) `--max-in-flight`: without it the advice does not name it.
    pub fn schedule_warning_with(&self, max_in_flight_flag: bool) -> Option<String> {
        if !matches!(self.pattern, Pattern::Open { .. }) {
            return None;
        }
        let late_pct = if self.attempts > 0 {
            100.0 * self.late as f64 / self.attempts as f64
        } else {
            0.0
        };
        if late_pct <= 1.0 && self.dropped == 0 {
            return None;
        }
        if self.dropped > 0 && self.dropped_in_flight_full == self.dropped {
            // Every drop found every in-flight slot held by an unfinished connection. That is the
            // target's slowness only while the generator had CPU to spare: a worker on CPU for
            // (nearly) all of its loop finishes its connections late itself — on one host its CPU
            // also runs the kernel's handshake work for both ends (loopback softirq).
            let head = format!(
                "{} of {} scheduled starts dropped: each was due while every in-flight slot was held \
                 by a connection not yet completed ({late_pct:.1}% of the starts made were late)",
                count(self.dropped),
                count(self.offered)
            );
            return Some(match self.busiest_worker() {
                Some((cpu, share)) if share >= SATURATED_WORKER => format!(
                    "{head} — but the generator's worker on CPU {cpu} was on CPU {:.0}% of its run: \
                     it was saturated too, so the slow completions may be its own (on one host that CPU \
                     also runs the kernel's handshake work of both ends); add --cpus or lower --rate, \
                     and read the achieved rate as the generator's limit as much as the target's",
                    share * 100.0
                ),
                _ => format!(
                    "{head} — the target is slower than the offered rate, not the generator (its \
                     workers had CPU to spare); lower --rate{}",
                    if max_in_flight_flag {
                        ", or raise --max-in-flight to keep offering while the target is slow"
                    } else {
                        ""
                    }
                ),
            });
        }
        let full = if self.dropped_in_flight_full > 0 {
            format!(
                " ({} of the drops found every in-flight slot busy: a slow server holds them{})",
                count(self.dropped_in_flight_full),
                if max_in_flight_flag {
                    ", or raise --max-in-flight"
                } else {
                    ""
                }
            )
        } else {
            String::new()
        };
        if self.dropped == 0 {
            return Some(format!(
                "{late_pct:.1}% of starts were late (behind schedule by more than the late threshold, 1 ms by default): \
                 their handshake latency includes that generator lag; all {} scheduled starts ran",
                count(self.offered)
            ));
        }
        Some(format!(
            "the generator fell behind its schedule: {late_pct:.1}% of the starts made late, {} of {} scheduled starts dropped{full} \
             — achieved rate and latency reflect the generator, not only the server; lower --rate, add --cpus, \
             or check for other load on the CPUs",
            count(self.dropped),
            count(self.offered)
        ))
    }
}

/// The on-CPU share of its loop's wall time from which a load worker counts as saturated
/// (CLOCK_THREAD_CPUTIME_ID over the loop's wall time): 0.9. A worker with spare CPU sleeps in
/// epoll_wait / io_uring_enter between events; one at 90% has (almost) none to spare.
pub const SATURATED_WORKER: f64 = 0.9;

/// The open-loop generator's own lag: for every measured start, actual start − scheduled start
/// (ns). Handshake latency counts from the scheduled start (no coordinated omission), so it
/// includes this lag; reading both shows how much of a handshake percentile is the generator's.
/// One value per measured attempt: its count equals [`LoadReport::attempts`].
#[derive(Debug, Clone, Serialize)]
pub struct GeneratorLag {
    /// Lag, ns (1 ns for a start made on time).
    #[serde(serialize_with = "summary")]
    pub hist: Histogram<u64>,
    /// Values above the histogram's range.
    pub overflow: Overflow,
    /// Timer slack the load workers ran with, ns (PR_GET_TIMERSLACK; `None` if it could not be
    /// set, then the kernel default of 50 µs applies).
    pub timer_slack_ns: Option<u64>,
    /// The spin threshold and start batch the workers ran with (`--spin`, `--start-batch`).
    pub pacing: crate::config::Pacing,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(successes: u64, warm: u64) -> LoadReport {
        LoadReport {
            close: CloseMode::Rst,
            pattern: Pattern::Closed { concurrency: 1 },
            measured_secs: 2.0,
            offered_per_sec: None,
            achieved_per_sec: successes as f64 / 2.0,
            offered: successes,
            attempts: successes,
            successes,
            failures: BTreeMap::new(),
            post_connect_failures: BTreeMap::new(),
            completed_after_timeout: 0,
            late: 0,
            dropped: 0,
            dropped_in_flight_full: 0,
            abandoned: 0,
            total: Totals {
                attempts: successes + warm,
                successes: successes + warm,
                ..Totals::default()
            },
            handshake: Histogram::new(3).unwrap(),
            service: Histogram::new(3).unwrap(),
            first_byte: None,
            handshake_overflow: Overflow::default(),
            service_overflow: Overflow::default(),
            first_byte_overflow: None,
            generator_lag: None,
            per_target: vec![TargetReport {
                target: "127.0.0.1:9".parse().unwrap(),
                attempts: successes + warm,
                successes: successes + warm,
                failures: BTreeMap::new(),
                abandoned: 0,
            }],
            timeline: vec![],
            workers: vec![],
            workers_successes_never_accepted: 0,
            workers_measured_successes_never_accepted: 0,
            interrupted: false,
            http: None,
            tls: None,
            engine: None,
            accept_stamps: None,
            port_slices: None,
        }
    }

    #[test]
    fn never_accepted_moves_from_successes_to_its_own_class() {
        let mut r = report(10_000, 0);
        r.reclassify_never_accepted(1132, true);
        assert_eq!((r.successes, r.total.successes), (8868, 8868));
        assert_eq!(r.failures[NEVER_ACCEPTED], 1132);
        assert_eq!(r.total.failures[NEVER_ACCEPTED], 1132);
        assert_eq!(r.per_target[0].successes, 8868);
        assert_eq!(r.achieved_per_sec, 4434.0);
        assert_eq!(r.successes + r.failures_total(), r.attempts);
        // With a warm-up only the whole-run totals move; never below zero.
        let mut r = report(100, 50);
        r.reclassify_never_accepted(500, false);
        assert_eq!((r.successes, r.total.successes), (100, 0));
        assert_eq!(r.total.failures[NEVER_ACCEPTED], 150);
        assert!(r.failures.is_empty());
    }

    /// Issue 35 item 6: `workers[]` rows counted handshakes the server never accepted as
    /// successes where the totals did not. One worker's row moves them; with several, the
    /// report says how many the rows still hold (whose they were is unknown).
    #[test]
    fn worker_rows_do_not_count_never_accepted_handshakes_as_successes_unsaid() {
        let worker = |cpu, n| LoadWorkerReport {
            cpu,
            attempts: n,
            successes: n,
            ..LoadWorkerReport::default()
        };
        let mut one = report(10_000, 0);
        one.workers = vec![worker(1, 10_000)];
        one.reclassify_never_accepted(1132, true);
        one.reclassify_still_queued(20);
        assert_eq!(one.workers[0].successes, 8848);
        assert_eq!(one.workers[0].failures, 1152);
        assert_eq!(one.workers[0].successes, one.total.successes);
        assert_eq!(one.workers_successes_never_accepted, 0);
        let mut two = report(10_000, 0);
        two.workers = vec![worker(1, 6_000), worker(2, 4_000)];
        two.reclassify_never_accepted(1132, true);
        two.reclassify_still_queued(20);
        let rows: u64 = two.workers.iter().map(|w| w.successes).sum();
        assert_eq!(two.workers_successes_never_accepted, 1152);
        assert_eq!(
            rows,
            two.total.successes + two.workers_successes_never_accepted
        );
        let json = serde_json::to_value(&two).unwrap();
        assert_eq!(json["workers_successes_never_accepted"], 1152);
    }

    /// Issue 33: the rows' measured counts move with the totals' measured part, so the rows
    /// still add up to the measured totals after a reclassification (one worker), or to them
    /// plus the count the report names (several workers). With a warm-up only what left the
    /// measured successes leaves the rows' measured part.
    #[test]
    fn worker_rows_measured_part_moves_with_the_measured_totals() {
        let worker = |cpu, measured, warm| LoadWorkerReport {
            cpu,
            attempts: measured + warm,
            successes: measured + warm,
            measured_attempts: measured,
            measured_successes: measured,
            ..LoadWorkerReport::default()
        };
        let mut one = report(100, 50);
        one.workers = vec![worker(1, 100, 50)];
        one.reclassify_never_accepted(10, false);
        assert_eq!(one.successes, 100, "warm-up: the measured part stays");
        assert_eq!(one.workers[0].measured_successes, 100);
        assert_eq!(one.reclassify_still_queued(30), 30);
        let w = &one.workers[0];
        assert_eq!(
            (w.successes, w.measured_successes, w.measured_failures),
            (110, 70, 30)
        );
        assert_eq!(w.measured_successes, one.successes);
        assert_eq!(w.successes, one.total.successes);
        let mut two = report(100, 50);
        two.workers = vec![worker(1, 60, 30), worker(2, 40, 20)];
        two.reclassify_still_queued(30);
        let rows: u64 = two.workers.iter().map(|w| w.measured_successes).sum();
        assert_eq!(two.workers_measured_successes_never_accepted, 30);
        assert_eq!(
            rows,
            two.successes + two.workers_measured_successes_never_accepted
        );
    }

    /// What is still queued at the end is the newest connections (the accept queue is FIFO):
    /// they leave the measured successes first, then the warm-up's; never below zero.
    #[test]
    fn still_queued_moves_from_measured_successes_first() {
        let mut r = report(20, 0);
        assert_eq!(r.reclassify_still_queued(20), 20);
        assert_eq!((r.successes, r.total.successes), (0, 0));
        assert_eq!(r.failures[NEVER_ACCEPTED_QUEUED], 20);
        assert_eq!(r.total.failures[NEVER_ACCEPTED_QUEUED], 20);
        assert_eq!(r.per_target[0].failures[NEVER_ACCEPTED_QUEUED], 20);
        assert_eq!(r.achieved_per_sec, 0.0);
        assert_eq!(r.successes + r.failures_total(), r.attempts);
        let mut r = report(100, 50);
        assert_eq!(r.reclassify_still_queued(120), 120);
        assert_eq!((r.successes, r.total.successes), (0, 30));
        assert_eq!(r.failures[NEVER_ACCEPTED_QUEUED], 100);
        assert_eq!(r.total.failures[NEVER_ACCEPTED_QUEUED], 120);
        let mut r = report(10, 0);
        assert_eq!(r.reclassify_still_queued(0), 0);
        assert!(r.failures.is_empty());
        assert_eq!(r.reclassify_still_queued(1_000), 10);
        assert_eq!(r.total.failures[NEVER_ACCEPTED_QUEUED], 10);
    }

    /// A second's histogram survives its encoding exactly and is small: 10,000 values over
    /// 1 µs – 10 ms encode in a few KiB against ~180 KiB held live.
    #[test]
    fn a_second_histogram_round_trips_and_stays_small() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).unwrap();
        for i in 0..10_000u64 {
            h.record(1_000 + i * 997).unwrap();
        }
        let s = SecondHistogram::of(&h);
        assert_eq!(s.decode(), h);
        assert!(s.encoded_len() < 32 * 1024, "{}", s.encoded_len());
        assert_eq!(SecondHistogram::default().decode().len(), 0);
    }

    #[test]
    fn the_schedule_warning_counts_have_separators() {
        let mut r = report(372_134, 0);
        r.pattern = Pattern::Open {
            rate_per_sec: 200_000.0,
            arrival: crate::config::Arrival::Uniform,
        };
        r.offered = 400_000;
        r.dropped = 27_866;
        r.dropped_in_flight_full = 12_000;
        r.late = 10_000;
        let w = r.schedule_warning().unwrap();
        assert!(
            w.contains("27,866 of 400,000 scheduled starts dropped (12,000 of the drops found every in-flight slot busy"),
            "{w}"
        );
        r.dropped_in_flight_full = 27_866;
        let w = r.schedule_warning().unwrap();
        assert!(
            w.contains(
                "27,866 of 400,000 scheduled starts dropped: each was due while every in-flight slot was held"
            ) && w.contains("the target is slower than the offered rate, not the generator")
                && !w.contains("fell behind"),
            "{w}"
        );
        // The generator starved, kind "every slot held while its own CPU was saturated": the
        // drops are not blamed on the target alone.
        r.workers = vec![LoadWorkerReport {
            cpu: 1,
            cpu_run_ns: 3_982_000_000,
            wall_ns: 4_000_000_000,
            ..LoadWorkerReport::default()
        }];
        let w = r.schedule_warning().unwrap();
        assert!(
            w.contains("worker on CPU 1 was on CPU 100% of its run")
                && !w.contains("not the generator"),
            "{w}"
        );
        r.workers[0].cpu_run_ns = 1_000_000_000;
        let w = r.schedule_warning().unwrap();
        assert!(w.contains("not the generator"), "{w}");
        r.dropped = 0;
        r.dropped_in_flight_full = 0;
        let w = r.schedule_warning().unwrap();
        assert!(w.contains("all 400,000 scheduled starts ran"), "{w}");
    }
}
