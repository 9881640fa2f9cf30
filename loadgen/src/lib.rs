//! `loadgen`: connstorm's load generator. It opens TCP connections at an intended rate (open
//! loop) or a fixed concurrency (closed loop) and measures how long handshakes take, optionally
//! followed by a TLS handshake and one HTTP/1.1 request per connection.
//!
//! # Layers
//! Each module depends only on the ones below it (no import circle):
//!
//! | layer | modules | what |
//! |---|---|---|
//! | run | `run`, [`render`], [`metrics`], [`segment`], [`start`], [`ports`], [`floor`] | start the workers, merge their seconds and results; text, Prometheus, splits over generators, the kernel floor |
//! | report | [`report`] | what a run returns ([`LoadReport`], [`TimelineRow`]) |
//! | worker | `worker` | one pinned thread's loop: a core and an engine |
//! | engines | [`engine`] (`engine::epoll`, `engine::uring`) | the syscalls: each owns its sockets, its event loop, its waits, behind one interface (`Engine`); the worker is generic over it |
//! | core | `core` (`schedule`, `pace`, `slot`, `tally`, `verdict`) | no syscalls: the schedule, the slots, the tallies with the one place an attempt's outcome is counted, the rules that turn what an engine saw into outcomes |
//! | protocols | [`http`], [`tls`] | without sockets: the HTTP exchange and the TLS client as state machines over byte buffers |
//! | vocabulary | [`config`], [`failures`], `latency`, [`error`], `clock`, `affinity` | the run's options (plain option types), failure classes, histograms |
//!
//! # Moving parts
//! - [`LoadConfig`] ([`config`]): targets, [`Pattern`], durations, CPUs, [`CloseMode`], sources,
//!   the HTTP request, the TLS options, the engine asked for ([`LoadEngine`]).
//! - One pinned worker thread per CPU (`worker`): its core (its own slice of the open-loop
//!   schedule, a preallocated slab of attempt slots, its own counters and HdrHistograms) and its
//!   engine (a mio poll plus a timerfd for sub-millisecond waits, or its own io_uring:
//!   `--load-engine`, the same accounting: [`engine`]). The hot path allocates nothing and shares
//!   nothing; failures are counted by errno in a fixed array ([`failures`]).
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
//! `run(cfg, stop, on_second)` → validate → resolve the engine → spawn + pin workers → barrier →
//! common start time (CLOCK_MONOTONIC, shared by all threads) → each worker's loop: the core says
//! what is due, the engine makes the syscalls and reports what it saw, the core counts it and
//! says what comes next (read on, or close) → per-second rows → join → merged [`LoadReport`].
//!
//! # Truth at the edges
//! - Overload: every loop turn does bounded work (events, reads, starts, expiries) and checks
//!   the stop flag; starts the worker cannot make are dropped and counted by arithmetic
//!   (`Schedule::skip_before`), never one by one, while the sockets in flight keep being served.
//!   Rates above [`MAX_RATE_PER_SEC`] and durations below [`MIN_DURATION`] are refused by
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

// Unsafe only in the io_uring ring (engine/uring.rs: SQEs point at memory the kernel reads).
#![deny(unsafe_code)]
// The public API is what the binary uses (issue 12); the workspace allows unreachable_pub, this
// library does not (set here rather than in Cargo.toml so it does not reach the test crates).
#![warn(unreachable_pub)]

mod affinity;
mod clock;
pub mod config;
mod core;
pub mod engine;
pub mod error;
pub mod failures;
pub mod floor;
pub mod http;
mod latency;
pub mod metrics;
pub mod ports;
pub mod render;
pub mod report;
pub mod rlimit;
mod run;
pub mod segment;
pub mod start;
pub mod tls;
mod worker;

pub use self::core::MAX_GENERATOR_LAG_NS;
pub use affinity::TIMER_SLACK_NS;
pub use config::{
    default_max_in_flight, AcceptStamps, Arrival, CloseMode, LoadConfig, Pacing, Pattern,
    PortSlices, AUTO_SPIN_MAX_NS, MAX_RATE_PER_SEC, MAX_SPIN_NS, MAX_START_BATCH, MAX_WORKERS,
    MIN_DURATION, SPIN_NS, START_BUDGET,
};
pub use engine::{accept_stamps_unavailable, EngineRan, LoadEngine, UringFeatures};
pub use error::LoadError;
pub use http::{HttpReport, HttpRequest};
pub use report::{
    ClientStamps, GeneratorLag, HistogramSummary, LoadReport, LoadWorkerReport, Overflow,
    SecondHistogram, TargetReport, TimelineRow, Totals, WorkerSecond, NEVER_ACCEPTED,
    NEVER_ACCEPTED_QUEUED, PERCENTILES,
};
pub use run::{never_started, run, run_at};
