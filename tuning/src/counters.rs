//! The kernel's TCP counters of one network namespace and per-run deltas: the one parser of the
//! workspace, [`common::counters`] (it lives in the leaf crate so `testkit` reads counters with
//! the same code without depending on `tuning`), re-exported here beside the other host facts.

pub use common::counters::*;
