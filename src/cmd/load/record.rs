//! `load --out DIR`: the run as a record in the bench schema (role `load`),
//! [`::bench::standalone::load_record`] with this binary's build.

use std::collections::BTreeMap;

use loadgen::segment::Segment;
use loadgen::{LoadConfig, LoadReport};
use results::record::RunRecord;

use super::multihost::ClockSync;

pub use ::bench::standalone::Starts;

/// Builds the load record ([`::bench::standalone::load_record`]: `counters` is the Δ of this
/// namespace's kernel counters, `kernel_completed` the target kernel's completed handshakes
/// when the targets are in this namespace).
pub fn load_record(
    cfg: &LoadConfig,
    report: &LoadReport,
    starts: Starts,
    segment: Option<(Segment, &ClockSync)>,
    counters: BTreeMap<String, i64>,
    kernel_completed: Option<u64>,
    warnings: &[String],
) -> RunRecord {
    let mut r = ::bench::standalone::load_record(
        cfg,
        report,
        starts,
        segment,
        ::bench::standalone::KernelView {
            counters,
            completed: kernel_completed,
        },
        warnings,
        &crate::bench::record::BUILD,
    );
    r.build = crate::version::build_info();
    r
}
