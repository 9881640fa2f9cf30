//! `connstorm-common`: the one leaf crate of shared vocabulary that every connstorm crate may
//! depend on (docs/design.md: "errno names, cpulists, units and number formatting"). It depends on no
//! sibling, so the server, the load generator, the tuning code and the run records can all read
//! and print the same things the same way.
//!
//! # Moving parts
//! - [`acceptwait`]: the accept-queue wait's connection key and the stamps each side of one
//!   process records (`bench`), joined after the phase by the composition crate.
//! - [`counters`]: the kernel's TCP counters of one network namespace (`/proc/thread-self/net`
//!   snmp, netstat, softnet_stat, sockstat, conntrack) and per-run deltas; `tuning::counters`
//!   re-exports it, and `testkit` reads counters with it.
//! - [`cpulist`]: the kernel's CPU-list syntax (`0-3,8`, strides `0-7:1/2`, `N`, `all`), one
//!   parser and one set of error messages for every `--cpus` option and every sysfs list.
//! - [`numfmt`]: the one number formatter (thousands separators in text, a space before a unit,
//!   `n/a` for what was not measured); JSON and CSV keep raw numbers.
//! - [`table`]: the one table renderer (aligned text and Markdown), for every listing and
//!   report.
//! - [`errno`]: errno names (one spelling for unknown values) and the fixed per-errno failure
//!   table of the accept and connect loops.
//! - [`rlimit`]: raising RLIMIT_NOFILE, for the binary to call once.
//! - [`threadcpu`]: a thread's own CPU time (CLOCK_THREAD_CPUTIME_ID, RUSAGE_THREAD), which every
//!   server and load worker publishes.
//! - [`numa`]: the one CPU a thread is pinned to ([`numa::pinned_cpu`]), read where a worker
//!   allocated its per-worker memory (first touch puts it on that CPU's NUMA node).
//! - [`syncpu`]: with `--steer cpu`, the share of connections accepted on their packets' CPU.
//! - [`addr`]: `--target` names resolved to every address, `--source` ranges, local addresses.
//! - [`units`]: the command line's units (durations, connection rates, `HOST:PORT`, CPU lists),
//!   the `value_parser`s of every option that takes them.
//! - [`error`]: [`error::BadInput`], the error kind that means exit code 2.
//! - [`files`]: writing an output file atomically (temporary file + rename).
//! - [`uring`]: the one wording of an io_uring_setup(2) failure (server and load engines).
//! - [`tls`]: the one wording of an unverified TLS run (`--insecure`) in the first line of
//!   `load`, `bench` and `report`.
//! - [`wire`]: the wire a run puts on the network in words (protocol and close discipline),
//!   the first words of every report.
//! - [`metrics`]: the Prometheus `/metrics` endpoint and the encoding helpers of the server's
//!   and the load generator's collectors.
//!
//! # Data flow
//! Text comes in (command-line values through [`units`] and [`cpulist`], kernel files through
//! [`counters`] and [`cpulist`]) as plain values; the crates above compute with them and send
//! them back out through one formatter each ([`numfmt`] for numbers, [`table`] for tables,
//! [`errno`] for failure names, [`files`] for output files, [`metrics`] for Prometheus). The
//! crate imports no other crate of the workspace; inside it, [`units`], [`files`] and [`table`]
//! build on [`addr`], [`cpulist`], [`numfmt`] and [`error::BadInput`].

#![forbid(unsafe_code)]
// The public API is what its users call (issue 12): the workspace allows unreachable_pub (it
// would reach the binary and the test crates), this library does not.
#![warn(unreachable_pub)]

pub mod acceptwait;
pub mod addr;
pub mod counters;
pub mod cpulist;
pub mod errno;
pub mod error;
pub mod files;
pub mod metrics;
pub mod numa;
pub mod numfmt;
pub mod rlimit;
pub mod syncpu;
pub mod table;
pub mod threadcpu;
pub mod tls;
pub mod units;
pub mod uring;
pub mod wire;
