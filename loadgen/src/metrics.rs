//! The load generator's Prometheus metrics: a [`LoadMetrics`] collector fed with the run's
//! per-second rows ([`LoadMetrics::observe`], from the `on_second` callback of [`crate::run`]),
//! which the workers already send once per second for the progress lines. Scraping reads those
//! sums under a lock taken once per second by the coordinator and once per scrape — never by a
//! worker, never per connection. Values are as of the last second every worker reported: at
//! most about 1 s old (more only while a worker is too starved to send its second).
//!
//! Counts cover the whole run, warm-up and drain included, and keep adding up over several runs
//! fed to the same collector (the phases of `bench`). They are what the client saw: a handshake
//! the server never accepted (`NEVER_ACCEPTED`, found afterwards from the server's counters)
//! is a success here and a failure only in the report.
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `connstorm_load_attempts_total` | counter | `worker`, `cpu` | connection attempts started (socket + connect) |
//! | `connstorm_load_successes_total` | counter | `worker`, `cpu` | handshakes completed within the connect timeout |
//! | `connstorm_load_failures_total` | counter | `cause` (errno name, `errno_<n>`) | failed attempts by cause |
//! | `connstorm_load_abandoned_total` | counter | `worker`, `cpu` | attempts cut by a stop signal without an answer |
//! | `connstorm_load_dropped_starts_total` | counter | `worker`, `cpu` | open-loop starts never made (the generator was behind, or every slot was in flight) |
//! | `connstorm_load_handshake_seconds` | histogram | — | intended start → connected, buckets [`LATENCY_BUCKETS_NS`](common::metrics::LATENCY_BUCKETS_NS) |
//! | `connstorm_load_phase` | gauge | `phase` (`starting`, `warmup`, `measure`, `drain`, `done`) | 1 for the run's phase |
//! | `connstorm_load_engine_info` | info | `engine`, `pattern`, `close`, `kernel` | what ran |

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use common::metrics::encode::{self, worker_labels, Labels};
use common::metrics::prometheus_client::collector::Collector;
use common::metrics::prometheus_client::encoding::DescriptorEncoder;
use common::metrics::Buckets;

use crate::config::{CloseMode, Pattern};
use crate::report::{TimelineRow, WorkerSecond};

/// The states of `connstorm_load_phase`.
pub const PHASES: [&str; 5] = ["starting", "warmup", "measure", "drain", "done"];

#[derive(Debug, Default)]
struct State {
    /// Per worker index, whole-run sums (the CPU of the latest run).
    workers: Vec<WorkerSecond>,
    failures: BTreeMap<String, u64>,
    handshake: Buckets,
    phase: &'static str,
    info: Labels,
}

/// The collector of a load generator's metrics (see the module docs). Register it with
/// [`common::metrics::Endpoint::register`] as `Box::new(Arc::clone(&m))`.
#[derive(Debug, Default)]
pub struct LoadMetrics {
    state: Mutex<State>,
}

impl LoadMetrics {
    /// An empty collector (phase `starting`).
    pub fn new() -> Arc<LoadMetrics> {
        let m = LoadMetrics::default();
        m.lock().phase = PHASES[0];
        Arc::new(m)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A run with this pattern and close mode is about to start: phase `starting`, and the
    /// engine info of this run.
    pub fn begin(&self, pattern: Pattern, close: CloseMode) {
        let mut s = self.lock();
        s.phase = "starting";
        s.info = vec![
            ("engine", "epoll".into()),
            (
                "pattern",
                match pattern {
                    Pattern::Open { .. } => "open".into(),
                    Pattern::Closed { .. } => "closed".into(),
                },
            ),
            (
                "close",
                match close {
                    CloseMode::Rst => "rst".into(),
                    CloseMode::Fin => "fin".into(),
                    CloseMode::Server => "server".into(),
                },
            ),
            ("kernel", encode::kernel_release()),
        ];
    }

    /// Adds one per-second row (its counts per worker, its failures by cause, its handshake
    /// latencies) and sets the phase from it (`warmup`, `measure`, or `drain` after the window).
    pub fn observe(&self, row: &TimelineRow) {
        let mut s = self.lock();
        for (i, w) in row.workers.iter().enumerate() {
            if s.workers.len() <= i {
                s.workers.resize(i + 1, WorkerSecond::default());
            }
            let acc = &mut s.workers[i];
            acc.cpu = w.cpu;
            acc.attempts += w.attempts;
            acc.successes += w.successes;
            acc.failures += w.failures;
            acc.abandoned += w.abandoned;
            acc.dropped += w.dropped;
        }
        for (cause, n) in &row.failures_by_cause {
            *s.failures.entry(cause.clone()).or_insert(0) += n;
        }
        if let Some(h) = row
            .handshake
            .as_ref()
            .map(crate::report::SecondHistogram::decode)
        {
            for v in h.iter_recorded() {
                let value = h.median_equivalent(v.value_iterated_to());
                s.handshake.add(value, v.count_at_value());
            }
        }
        s.phase = if row.is_drain() {
            "drain"
        } else if row.warmup {
            "warmup"
        } else {
            "measure"
        };
    }

    /// The run ended (phase `done`).
    pub fn finish(&self) {
        self.lock().phase = "done";
    }
}

impl Collector for LoadMetrics {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> fmt::Result {
        let s = self.lock();
        let per_worker = |f: fn(&WorkerSecond) -> u64| {
            s.workers
                .iter()
                .enumerate()
                .map(move |(i, w)| (worker_labels(i, w.cpu), f(w)))
        };
        encode::counters(
            &mut enc,
            "load_attempts",
            "Connection attempts started by each load worker (socket + non-blocking connect).",
            None,
            per_worker(|w| w.attempts),
        )?;
        encode::counters(
            &mut enc,
            "load_successes",
            "Handshakes completed within the connect timeout, per load worker.",
            None,
            per_worker(|w| w.successes),
        )?;
        encode::counters(
            &mut enc,
            "load_failures",
            "Failed connection attempts by cause (errno name).",
            None,
            s.failures
                .iter()
                .map(|(k, &v)| (vec![("cause", k.clone())], v)),
        )?;
        encode::counters(
            &mut enc,
            "load_abandoned",
            "Attempts in flight when a stop signal ended the run, without an answer.",
            None,
            per_worker(|w| w.abandoned),
        )?;
        encode::counters(
            &mut enc,
            "load_dropped_starts",
            "Open-loop starts never made: the generator was behind or every slot was in flight.",
            None,
            per_worker(|w| w.dropped),
        )?;
        s.handshake.encode(
            &mut enc,
            "load_handshake",
            "Handshake latency from the intended start to connect completion (open loop: no coordinated omission).",
        )?;
        encode::state(
            &mut enc,
            "load_phase",
            "The load run's phase: 1 for the current one (as of the last second reported).",
            "phase",
            &PHASES,
            s.phase,
        )?;
        if !s.info.is_empty() {
            encode::info(
                &mut enc,
                "load_engine",
                "What ran: the event engine, the arrival pattern, the close mode, the kernel release.",
                &s.info,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_add_up_per_worker_and_by_cause() {
        let m = LoadMetrics::new();
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
        h.record_n(40_000, 3).unwrap();
        h.record(3_000_000_000).unwrap();
        let row = TimelineRow {
            warmup: true,
            length_secs: 1.0,
            successes: 4,
            failures_by_cause: [("ECONNREFUSED".to_string(), 2)].into_iter().collect(),
            handshake: Some(crate::report::SecondHistogram::of(&h)),
            workers: vec![
                WorkerSecond {
                    cpu: 1,
                    attempts: 4,
                    successes: 3,
                    failures: 1,
                    ..Default::default()
                },
                WorkerSecond {
                    cpu: 3,
                    attempts: 2,
                    successes: 1,
                    failures: 1,
                    ..Default::default()
                },
            ],
            ..TimelineRow::default()
        };
        m.observe(&row);
        m.observe(&TimelineRow {
            warmup: false,
            ..row
        });
        let s = m.lock();
        assert_eq!(s.workers[0].attempts, 8);
        assert_eq!((s.workers[1].cpu, s.workers[1].successes), (3, 2));
        assert_eq!(s.failures["ECONNREFUSED"], 4);
        assert_eq!(s.handshake.count(), 8);
        assert_eq!(s.phase, "measure");
    }
}
