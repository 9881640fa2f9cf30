//! The composition behind `connstorm bench`, `sweep` and `ab`: an in-process [`harness`] that runs
//! load phases against an in-process server (or an external target) — in the `--netns` pair of
//! [`tuning::netns`] when asked — per-thread CPU accounting, the kernel floor
//! ([`loadgen::floor`], with the kernel's count beside it), conversion into run records, and the
//! summary ([`results::bench_summary`]).

pub mod baseline;
pub mod convert;
pub mod cpus;
pub mod harness;
pub mod phase;
pub mod record;
pub mod run;
pub mod setup;
pub mod summary;
pub mod taskcpu;
