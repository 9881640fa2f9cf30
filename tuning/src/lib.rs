//! `tuning`: everything connstorm reads from or changes on a Linux host.
//!
//! Six folders, one job each, all taking the host root as a path (`/` on a real host, a
//! fixture tree in tests):
//! - [`host`] — the host as it is: CPU topology, the kernel command line, NICs and their queue
//!   IRQs, what a run record says about the host ([`host::HostFacts`]), per-CPU busy time, the
//!   clock's sync state, capabilities probed in this process, the network namespaces connstorm
//!   runs in, and [`host::Finding`], the one observation type every check reports in;
//! - [`sysctl`] — the sysctl keys (validation, per-namespace vs global scope, reading and
//!   writing), the one table of what connstorm knows about them, and the files that set them:
//!   TOML presets, sysctl.conf and sysctl.d files, the presets shipped in the binary, scripts
//!   imported as sysctl settings;
//! - [`advice`] — judgements that change nothing: the doctor's one-screen summary, the kernel
//!   config audit, the CPU planner behind `--cpus auto`, the ephemeral-port budget;
//! - [`plan`] — everything that changes the host: sysctl presets checked, planned, applied and
//!   reverted, IRQ affinity plans, the A/B toggles of `connstorm ab`, and the snapshots that
//!   make each change reversible;
//! - [`profile`] — a sampling kernel and user profile of the benchmark CPUs during a phase
//!   (perf_event_open cpu-clock, symbolized from /proc/kallsyms), with the known contention
//!   points named;
//! - [`render`] — the text of every `tune` subcommand, and presets exported as sysctl.d files,
//!   tuned profiles and kernel command lines.
//!
//! [`counters`] (TCP counters from `/proc/<thread-self>/net` and per-run deltas) and
//! [`cpulist`] (the kernel's CPU-list syntax) are the `common` crate's, re-exported beside the
//! host facts.
//!
//! # Data flow
//! Readers (`host`, `sysctl`) produce plain structs; `advice` and `plan` turn them into findings
//! and plans; `render` turns those into text. Each folder uses only the folders listed before
//! it, never one after. Only [`plan`] writes to the host — always after saving a
//! [`plan::Snapshot`]. Each folder's files are private; its `mod.rs` re-exports the public API.
#![forbid(unsafe_code)]
// The public API is what its users call (issue 12): the workspace allows unreachable_pub (it
// would reach the binary and the test crates), this library does not.
#![warn(unreachable_pub)]

pub mod advice;
pub mod host;
pub mod plan;
pub mod profile;
pub mod render;
pub mod sysctl;

pub use common::{counters, cpulist};
