//! `load --segment i/N --start-at T`: one generator's share of a multi-host run
//! ([`loadgen::segment`]), started at a common wall-clock instant ([`loadgen::start`]), and the
//! host clock's sync state that makes such an instant mean the same on every host
//! ([`tuning::clock`]).

use loadgen::segment::Segment;
use loadgen::LoadConfig;

pub use loadgen::start::{
    never_started_warning, parse_start_at, planned_start, wait_until, StartAt,
};
pub use tuning::clock::{read as read_clock_sync, ClockSync};

/// Parses `--segment i/N` (0-based).
pub fn parse_segment(s: &str) -> Result<Segment, String> {
    s.parse()
        .map_err(|e: loadgen::segment::SegmentError| e.to_string())
}

/// Narrows `cfg` to `segment`'s share ([`Segment::apply`]).
///
/// # Errors
/// Bad input when the share is empty or the narrowed configuration does not validate.
pub fn apply_segment(
    cfg: LoadConfig,
    segment: Segment,
    max_in_flight_given: bool,
) -> Result<LoadConfig, common::error::BadInput> {
    segment.apply(cfg, max_in_flight_given)
}

/// The warning to print about `c` for a generator of a multi-host run, if any: an unknown or
/// unsynchronised clock, or an offset above [`results::merge::SKEW_BOUND_MS`].
pub fn clock_warning(c: &ClockSync) -> Option<String> {
    tuning::clock::warning(c, results::merge::SKEW_BOUND_MS as f64)
}
