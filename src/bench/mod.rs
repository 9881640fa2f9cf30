//! The composition behind `connstorm bench`, `sweep` and `ab`: an in-process [`harness`] that runs
//! load phases against an in-process server (or an external target), the kernel [`floor`], the
//! `--netns` pair, per-thread CPU accounting, conversion into run records and the summary.

pub mod convert;
pub mod floor;
pub mod harness;
pub mod netns;
pub mod procstat;
pub mod record;
pub mod summary;
pub mod taskcpu;
