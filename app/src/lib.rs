//! `connstorm-app`: every `connstorm` command, from its options to its exit code, and the
//! in-process benchmark that `bench`, `sweep` and `ab` run. It composes the four library
//! crates (`server`, `loadgen`, `tuning`, `results`), which never depend on each other; the
//! binary (`src/`) only holds the top-level command line, dispatches to [`commands`] and maps
//! the outcome to an exit code.
//!
//! # Layout
//! One home per command, above the harness they share; a module depends only on modules below
//! it (no import circle):
//!
//! - [`commands`]: one module per subcommand (`commands::load`, `commands::bench`,
//!   `commands::tune`, …), each with its options (clap `Args`, the value parsers, the
//!   `--help` examples), their checks and its `run`, and what only that command uses (`load`'s
//!   kernel view and record, `server`'s watch loop, `sweep`'s phases, `ab`'s sides, `k8s`'s
//!   manifests, `bench`'s summary and Prometheus collector). What several commands share sits
//!   beside them: `--format`, `--metrics` ([`commands::metrics`]), the record commands' file
//!   handling ([`commands::records`]); `sweep` and `ab` take `bench`'s options
//!   ([`commands::bench::SetupArgs`]).
//! - The benchmark: [`run`] (one `bench` run, also an `ab` trial: the peak phase, then the
//!   latency phase) and [`baseline`] (the paired kernel floor of `bench --baseline`) over
//!   [`harness`] (the server, and the `--netns` pair of [`tuning::host::enter_netns`], for the life of a
//!   run; one load phase at a time, measured around: kernel counter deltas, per-side CPU from
//!   each worker's own thread CPU time, `/proc/stat`), which hands each phase's measurements
//!   to [`phase`] (the phase's record part; [`convert`]: a load report in the record's form;
//!   [`taskcpu`]: each side's CPU time). [`setup`] is what a harness is given
//!   ([`setup::Setup`], each phase's [`setup::PhaseSpec`]); [`cpus`] picks the CPUs that serve
//!   and load; [`limits`] bounds the options before anything is created; [`record`] fills the
//!   record's header (what ran, on which host, in which namespace).
//! - [`profile`]: `--profile` (the access check up front, the sides' CPUs, the collector on a
//!   housekeeping CPU, the profile armed around a phase's measured part, its record form).
//! - The process: [`output`] (stdout and stderr that never panic on a closed stream) over
//!   [`progress`] (the terminal's progress bar); [`signals`] (the stop flag, the second-signal
//!   hurry and the forced exit) over [`cleanup`] (the undo actions a forced exit runs: `--netns`
//!   namespaces, `ab` toggles).
//!
//! # Data flow
//! The binary parses the command line into a command's `Args` and calls its `run` with the
//! build facts (version, commit) for the record. `run` checks the options (bad input before
//! anything is created or changed), builds the libraries' configurations (e.g. a
//! `loadgen::LoadConfig`, or a [`setup::Setup`] and [`run::Plan`]), runs them — `load` and
//! `server` call their library directly, `bench`, `sweep` and `ab` run phases on a
//! [`harness::Harness`] — turns the reports and the kernel's counters into a
//! `results::RunRecord` written with `--out`, prints the report and returns the exit code.
//! Only [`commands`] prints, through [`output`] and [`progress`]: every other module returns
//! values and records and reports progress, notes and per-second rows through the callbacks
//! its caller passes.
//!
//! Bad input found while checking or resolving options (a CPU list, `--out`, netem refused) is
//! an `anyhow::Error` holding [`common::error::BadInput`]: the binary's exit code 2.

// The public API is what the binary calls (issue 12): the workspace allows unreachable_pub (it
// would reach the binary and the test crates), this library does not.
#![warn(unreachable_pub)]

pub mod acceptq;
pub mod baseline;
pub mod cleanup;
pub mod commands;
pub mod convert;
pub mod cpus;
pub mod harness;
pub mod limits;
pub mod output;
pub mod phase;
pub mod profile;
pub mod progress;
pub mod record;
pub mod run;
pub mod setup;
pub mod signals;
pub mod taskcpu;

/// A bad-input error (exit code 2 in the binary) from a message saying what is wrong and how to
/// fix it.
pub(crate) fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(common::error::BadInput(msg.into()))
}
