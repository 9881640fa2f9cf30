//! `connstorm load`: open connections to one or more servers at an intended rate (open loop) or a
//! fixed concurrency (closed loop) and report connections per minute and handshake latency
//! ([`::app::commands::load`] runs it; its docs give the exit codes).

mod args;
pub(crate) mod config;

pub use args::Args;

use anyhow::Context;
use loadgen::segment::Segment;

/// Parses `--segment i/N` (0-based).
fn parse_segment(s: &str) -> Result<Segment, String> {
    s.parse()
        .map_err(|e: loadgen::segment::SegmentError| e.to_string())
}

/// Runs `connstorm load`.
///
/// # Errors
/// Bad input (exit 2): an inconsistent configuration or an unusable CPU. Others (exit 1): the
/// workers cannot start, or stdout cannot be written.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let command_start = std::time::SystemTime::now();
    let nofile = loadgen::rlimit::raise_nofile_limit().context("raising the open-file limit")?;
    let command = ::app::commands::load::LoadCommand {
        cfg: config::config(&args, nofile)?,
        segment: args.segment,
        max_in_flight_given: args.max_in_flight.is_some(),
        fd_capped_in_flight: config::fd_capped_in_flight(&args, nofile),
        start_at: args.start_at,
        out: args.out,
        json: args.format == ::app::commands::Format::Json,
        metrics: args.metrics,
        build: crate::version::build(),
    };
    ::app::commands::load::run(command, command_start)
}
