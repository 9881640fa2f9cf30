//! `connstorm-bench`: the composition behind every `connstorm` command ([`commands`]). An
//! in-process [`harness`] runs load phases against an in-process server (or an external
//! target) — in the `--netns` pair of [`tuning::host::NsPair`] when asked — measures around each
//! phase (kernel counter deltas, per-side CPU from each worker's own thread CPU time,
//! `/proc/stat`), and turns what it measured into run-record parts ([`results::record`]).
//!
//! This crate composes the four library crates (`server`, `loadgen`, `tuning`, `results`),
//! which never depend on each other; the binary only parses the command line and maps it onto
//! [`commands`]. Every module but [`commands`] (and the printing primitives [`output`],
//! [`progress`], [`signals`]) **never prints**: it returns values and records, and reports
//! progress, notes and per-second rows through the callbacks its callers pass; [`commands`]
//! decides what goes to stdout and stderr.
//!
//! # Moving parts
//! - [`setup`]: what a harness is given ([`setup::Setup`], each phase's [`setup::PhaseSpec`]),
//!   the load side's descriptor budget, and how server and load errors map to bad input.
//! - [`cpus`]: which CPUs serve and which load (explicit lists, `auto`, a default split).
//! - [`harness`]: the server (and namespaces) for the life of a run, and one phase at a time.
//! - [`phase`]: one phase's measurements turned into its record part; [`convert`]: a load
//!   report in the record's form; [`taskcpu`]: each side's CPU time.
//! - [`limits`]: the bounds of the options, checked before anything is created.
//! - [`run`]: one `bench` run (also an `ab` trial): the peak phase, then the latency phase;
//!   [`baseline`]: the paired kernel floor of `bench --baseline` on the trial's server.
//! - [`record`]: the record's header (what ran, on which host) and the `--out` check.
//! - [`sweep`]: the phases of `connstorm sweep` (the peak probe, then one open-loop step per
//!   offered rate).
//! - [`summary`]: the text of a finished run and the per-second progress lines (strings, for
//!   the caller to print).
//! - [`k8s`]: the Kubernetes manifests of a multi-host run (`connstorm k8s render`).
//! - [`ab`]: the sides of `connstorm ab` (toggles, setup commands, names) and their restore.
//! - [`accept_queue`]: for `connstorm load` against a local target, the listener's accept queue
//!   at the end of the run after a bounded settle: what is left was never accepted.
//! - [`metrics`]: the run's Prometheus metrics (bench phase, load and server collectors).
//! - [`standalone`]: `connstorm load` and `connstorm server` on their own: the kernel's view of
//!   a load run, its warnings and JSON report, and both commands' `--out` records.
//! - [`commands`]: each command once its options are parsed (`load`, `server`, `tune`,
//!   `bench`, `ab`, `sweep`, what the record commands share, the `/metrics` endpoint), printing
//!   through [`output`] (never panics on a closed stream) and [`progress`]; [`signals`]: the
//!   stop flag, the second-signal hurry and the forced exit.
//! - [`cleanup`]: the registry of undo actions (namespaces, `ab` toggles) that the binary runs
//!   when a second signal forces an exit.
//!
//! Bad input found while resolving options (a CPU list, `--out`, netem refused) is an
//! `anyhow::Error` holding [`common::error::BadInput`]: the binary's exit code 2.

// The public API is what the binary calls (issue 12): the workspace allows unreachable_pub (it
// would reach the binary and the test crates), this library does not.
#![warn(unreachable_pub)]

pub mod ab;
pub mod accept_queue;
pub mod baseline;
pub mod cleanup;
pub mod commands;
pub mod convert;
pub mod cpus;
pub mod harness;
pub mod k8s;
pub mod limits;
pub mod metrics;
pub mod output;
pub mod phase;
pub mod progress;
pub mod record;
pub mod run;
pub mod setup;
pub mod signals;
pub mod standalone;
pub mod summary;
pub mod sweep;
pub mod taskcpu;

/// A bad-input error (exit code 2 in the binary) from a message saying what is wrong and how to
/// fix it.
pub(crate) fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(common::error::BadInput(msg.into()))
}
