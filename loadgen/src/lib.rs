//! `loadgen`: connstorm's load generator. It opens TCP connections at an intended rate (open
//! loop) or a fixed concurrency (closed loop) and measures how long handshakes take.
//!
//! # Moving parts
//! - [`LoadConfig`] ([`config`]): targets, [`Pattern`], durations, CPUs, [`CloseMode`], sources.
//! - One pinned worker thread per CPU (`worker`): its own mio poll (epoll) plus a timerfd for
//!   sub-millisecond waits, or its own io_uring ([`engine`]: `--load-engine`, the same accounting), its own slice of the open-loop `schedule`, a preallocated slab of
//!   attempt `slot`s, its own counters and HdrHistograms (`stats`). The hot path (`attempt.rs`)
//!   allocates nothing and shares nothing; failures are counted by errno in a fixed array
//!   ([`failures`]).
//! - Once per second each worker sends its second's counters and handshake histogram over a
//!   channel; [`run`] merges them into a [`TimelineRow`] for the caller's callback, and at the end
//!   merges the workers' histograms and counters into a [`LoadReport`] ([`report`]).
//! - [`segment`] splits a run over several generators (`i/N` shares of rate, concurrency,
//!   sources, [`segment::Segment::apply`]); [`run_at`] starts the schedule at a wall-clock
//!   instant so they start together, [`start`] parses that instant and waits for it.
//! - [`metrics`] sums those rows for Prometheus ([`metrics::LoadMetrics`], a collector read
//!   at scrape time: nothing on the hot path).
//! - [`render`] writes the text of a run: the per-second line and the report summary.
//! - [`ports`] estimates the ephemeral-port budget before a run; [`rlimit`] raises
//!   RLIMIT_NOFILE for callers that want it (the library never touches process-wide state: no
//!   signal handlers, no rlimits).
//!
//! # Data flow
//! `run(cfg, stop, on_second)` → validate → spawn + pin workers → barrier → common start time
//! (CLOCK_MONOTONIC, shared by all threads) → workers run warm-up + duration + drain → per-second
//! rows → join → merged [`LoadReport`].
//!
//! # Truth at the edges
//! - Overload: every loop turn does bounded work and checks the stop flag; starts the worker
//!   cannot make are dropped and counted by arithmetic (`Schedule::skip_before`),
//!   never one by one, while the sockets in flight keep being served. Rates above
//!   [`MAX_RATE_PER_SEC`] and durations below [`MIN_DURATION`] are refused by
//!   [`LoadConfig::validate`].
//! - Accounting: every started attempt ends as a success, a failure by errno, or — cut by an
//!   interrupt — abandoned (`attempts = successes + failures + abandoned`, equal to the kernel's
//!   `Tcp.ActiveOpens`): in-flight attempts get their connect timeout after the window; an
//!   interrupted run asks each socket where it stands and counts the undecided ones abandoned.
//! - A handshake seen after its connect timeout is `ETIMEDOUT` (counted
//!   `completed_after_timeout`), never a success; latencies above a histogram's range are
//!   counted with their true maximum ([`Overflow`]).
//! - Targets of both families may be mixed; counts are kept per target address
//!   ([`TargetReport`]). A handshake the server never accepted can only be seen from the
//!   server's counters: callers reconcile and call [`LoadReport::reclassify_never_accepted`];
//!   one still in the listener's accept queue at the end, from that queue:
//!   [`LoadReport::reclassify_still_queued`].
//! - A run interrupted before its schedule started (`--start-at`) still has a report:
//!   [`never_started`].
//!
//! Open loop follows the wrk2 method: latency counts from the *intended* start, so a stalled
//! server or a late generator shows as latency, not as silently lower load (no coordinated
//! omission).

// Unsafe only in the io_uring engine (engine::uring: SQEs point at memory the kernel reads).
#![deny(unsafe_code)]
// The public API is what the binary uses (issue 12); the workspace allows unreachable_pub, this
// library does not (set here rather than in Cargo.toml so it does not reach the test crates).
#![warn(unreachable_pub)]

mod attempt;
mod clock;
pub mod config;
pub mod engine;
pub mod error;
pub mod failures;
pub mod floor;
pub mod http;
pub mod metrics;
pub mod ports;
pub mod render;
pub mod report;
pub mod rlimit;
mod run;
mod schedule;
pub mod segment;
mod slot;
pub mod start;
mod stats;
pub mod tls;
mod worker;

pub use attempt::{MAX_GENERATOR_LAG_NS, START_BUDGET};
pub use config::{
    default_max_in_flight, Arrival, CloseMode, LoadConfig, Pacing, Pattern, MAX_SPIN_NS,
    MAX_START_BATCH, MIN_DURATION,
};
pub use engine::{EngineRan, LoadEngine, UringFeatures};
pub use error::LoadError;
pub use http::{HttpReport, HttpRequest};
pub use report::{
    GeneratorLag, HistogramSummary, LoadReport, LoadWorkerReport, Overflow, SecondHistogram,
    TargetReport, TimelineRow, Totals, WorkerSecond, NEVER_ACCEPTED, NEVER_ACCEPTED_QUEUED,
    PERCENTILES,
};
pub use run::{never_started, run, run_at};
pub use schedule::MAX_RATE_PER_SEC;
pub use worker::{SPIN_NS, TIMER_SLACK_NS};
