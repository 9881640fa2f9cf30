//! `connstorm sweep`: capacity planning. Probes the peak (closed loop), then steps the offered rate
//! in open loop from `--from` to `--to` of it, recording achieved rate, latency and errors per
//! step, and reports the knee: the highest rate that meets the SLO — as CPM, connections/s and per
//! server core. One run record holds every step as a phase (`step-1`, …).

use std::time::Duration;

use ::bench::commands::sweep::Sweep;
use results::analysis::{self as sweep, Slo};

use crate::cli::Format;
use crate::cmd::bench::SetupArgs;
use crate::error::bad_input;
use crate::units;

/// Options of `connstorm sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Lowest offered rate, as a share of the probed peak.
    #[arg(long, default_value = "10%", allow_hyphen_values = true)]
    pub from: String,
    /// Highest offered rate, as a share of the probed peak.
    #[arg(long, default_value = "150%", allow_hyphen_values = true)]
    pub to: String,
    /// Number of steps from --from to --to (evenly spaced), 1 to 1000.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub steps: u64,
    /// Latency SLO on the handshake latency, e.g. `p99<1ms`, `p99.9<=500us`.
    #[arg(long, default_value = "p99<1ms")]
    pub slo: String,
    /// Largest share of failed attempts a step may have and still count.
    #[arg(long, default_value = "0.1%")]
    pub max_errors: String,
    /// Measured time of each step.
    #[arg(long, default_value = "3s", value_parser = units::parse_positive_duration)]
    pub step_duration: Duration,
    /// Measured time of the peak probe.
    #[arg(long, default_value = "3s", value_parser = units::parse_positive_duration)]
    pub probe_duration: Duration,
    /// Warm-up before the probe and each step (whole seconds keep the per-second timeline
    /// aligned with the measured window).
    #[arg(long, default_value = "1s", value_parser = units::parse_duration)]
    pub warmup: Duration,
    /// Output on stdout: `text` (a table of the steps and the knee) or `json` (the run record).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Where and how to run.
    #[command(flatten)]
    pub setup: SetupArgs,
}

/// Runs `connstorm sweep`.
///
/// # Errors
/// Bad options (exit 2), harness failures, record write failures.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let slo = Slo::parse(&args.slo).map_err(|e| bad_input(e.to_string()))?;
    let from = sweep::parse_percent(&args.from).map_err(|e| bad_input(format!("--from: {e}")))?;
    let to = sweep::parse_percent(&args.to).map_err(|e| bad_input(format!("--to: {e}")))?;
    let max_err = sweep::parse_percent(&args.max_errors)
        .map_err(|e| bad_input(format!("--max-errors: {e}")))?;
    if max_err > 1.0 {
        return Err(bad_input(format!(
            "--max-errors {} is above 100%: give a share of attempts, e.g. `0.1%`",
            args.max_errors
        )));
    }
    let sweep = Sweep {
        steps: ::bench::sweep::Steps {
            from,
            to,
            count: args.steps as usize,
            duration: args.step_duration,
            warmup: args.warmup,
        },
        slo: (args.slo.clone(), slo),
        max_errors: max_err,
        probe_duration: args.probe_duration,
        concurrency: args.setup.concurrency,
        label: args.setup.label.clone(),
        out: args.setup.out.clone(),
        json: args.format == Format::Json,
        build: crate::version::build(),
    };
    ::bench::commands::sweep::run(&sweep, || args.setup.resolve())
}
