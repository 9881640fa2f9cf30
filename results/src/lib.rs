//! connstorm's results: the run record and everything read from it.
//!
//! Moving parts, in data-flow order:
//! - [`record`]: [`record::RunRecord`], one versioned JSON document per run, written atomically
//!   by the binary (which converts server/load reports and host facts into it) and read back
//!   with errors that name the file and what is wrong.
//! - [`histogram`]: the figures read from latency histograms (percentiles, buckets).
//! - [`diagnosis`]: named causes of lost, refused or delayed handshakes from counters and settings.
//! - [`paired`]: the paired baseline (floor and connstorm slices in ABBA order, median ratio and
//!   its order-statistic interval).
//! - [`stats`] and [`compare`]: A/B comparison of trial sets with confidence intervals.
//! - [`sweep`]: the knee of a capacity sweep under a latency SLO.
//! - [`numfmt`]: the one number formatter (separators in text, units with a space).
//! - [`merge`]: the records of a multi-host run (one per load generator and server) joined into
//!   one exact record.
//! - [`render`]: every text, table, file and picture: reports (text, Markdown, JSON, CSV), the
//!   bench summary, comparisons, HTML, plots, `.hlog` interval logs.
//!
//! This crate does not depend on the other connstorm crates: it only knows the record.

#![forbid(unsafe_code)]
// The public API is what its users call (issue 12): the workspace allows unreachable_pub (it
// would reach the binary and the test crates), this library does not.
#![warn(unreachable_pub)]

pub mod acceptance;
pub mod compare;
pub mod crosscheck;
pub mod diagnosis;
pub mod histogram;
pub mod merge;
pub mod paired;
pub use common::numfmt;
pub mod record;
pub mod render;
pub mod stats;
pub mod sweep;
pub mod warnings;

pub use record::{RecordError, RunRecord, SCHEMA_VERSION};
