//! connstorm's results: the run record and everything read from it.
//!
//! Three folders, one job each; each uses only the folders listed before it, never one after:
//! - [`record`] — the schema: [`RunRecord`], one versioned JSON document per run, its types and
//!   their serde form, the schema version and the upgrade of older records, the stored
//!   HdrHistogram encoding (V2 + DEFLATE in base64), RFC 3339 timestamps, the failure classes,
//!   and the checks that refuse a record contradicting itself (each error names the file).
//! - [`analysis`] — what records mean: acceptance (handshakes the server never accepted),
//!   the cross-check of our counts against the kernel's, the diagnosis (named causes of lost,
//!   refused or delayed handshakes), warnings, saturation, latency summaries, A/B comparison
//!   with its statistics, the paired kernel-floor baseline, the sweep knee, and the merge of a
//!   multi-host run into one exact record.
//! - [`render`] — how they are shown: per-record reports (text, Markdown, JSON, CSV), the
//!   `bench` summary, comparisons, sweeps, the kernel section of `load`, one self-contained HTML
//!   page, SVG/PNG plots, and HdrHistogram interval logs (`.hlog`).
//!
//! [`numfmt`] (from `common`) is the one number formatter of every text.
//!
//! # Data flow
//! The binary turns a server/load report and host facts into a [`RunRecord`] and writes it
//! ([`RunRecord::write_atomic`]); `report`, `compare`, `merge`, `plot` and `sweep` read records
//! back ([`RunRecord::read`]), hand them to the analysis, and print what the rendering makes of
//! both. Each folder's files are private; its `mod.rs` re-exports the public API.
//!
//! This crate does not depend on the other connstorm crates: it only knows the record.

#![forbid(unsafe_code)]
// The public API is what its users call (issue 12): the workspace allows unreachable_pub (it
// would reach the binary and the test crates), this library does not.
#![warn(unreachable_pub)]

pub mod analysis;
pub mod record;
pub mod render;

pub use common::numfmt;

pub use record::{RecordError, RunRecord, SCHEMA_VERSION};
