//! `tuning`: everything connstorm reads from or changes on a Linux host.
//!
//! Moving parts, all reading from a root path (`/` on a real host, a fixture tree in tests):
//! - [`host`]: the host as it is (CPU topology, command line, NICs, what a run record says about
//!   the host, per-CPU busy time, clock sync, probed capabilities, network namespaces, findings);
//! - [`counters`]: TCP counters from `/proc/<thread-self>/net` and per-run deltas;
//! - [`advice`]: judgements that change nothing: the doctor, the kernel config audit, the CPU
//!   planner behind `--cpus auto`, the ephemeral-port budget;
//! - sysctls: [`sysctl`] (key validation, per-netns vs global, read/write; preset, sysctl.conf
//!   and sysctl.d files; the presets shipped in the binary; imported scripts), [`plan`]
//!   (check → plan → apply → revert) and [`snapshot`] (the saved values, written atomically),
//!   [`export`] (presets as sysctl.d files and tuned profiles);
//! - [`render`]: the text of every `tune` subcommand;
//! - [`irq`]: IRQ → CPU plans.
//!
//! Data flows one way: readers produce plain structs, planners turn them into plans, and only
//! [`plan`] and [`irq`] write to the host — always after saving a [`snapshot::Snapshot`].
#![forbid(unsafe_code)]
// The public API is what its users call (issue 12): the workspace allows unreachable_pub (it
// would reach the binary and the test crates), this library does not.
#![warn(unreachable_pub)]

pub mod advice;
pub mod counters;
pub mod cpulist;
pub mod export;
pub mod host;
pub mod irq;
pub mod plan;
pub mod render;
pub mod snapshot;
pub mod sysctl;
pub mod toggle;
