//! The options of `connstorm sweep` (the range, the SLO, the durations; where and how to run is
//! `bench`'s [`SetupArgs`]). `super::run` checks the range and the SLO before anything runs.

use std::time::Duration;

use common::units;

use crate::commands::bench::SetupArgs;
use crate::commands::Format;

/// The examples after `connstorm sweep --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # Ten steps from 10% to 150% of the probed peak; the knee is where handshake p99 < 1 ms
  connstorm sweep
  # Server on CPUs 0-1, load on 2-7, an HTTP request per connection, SLO on the response
  connstorm sweep --server-cpus 0-1 --load-cpus 2-7 --http --slo 'response p99<1ms'
  # 20 steps from 50% to 120%, SLO p99.9 <= 500 us with at most 0.01% failed attempts
  connstorm sweep --from 50% --to 120% --steps 20 --slo 'p99.9<=500us' --max-errors 0.01%
  # A gateway's knee, one HTTP request per connection (load side only)
  connstorm sweep --target 192.0.2.10:80 --http --slo 'response p99<5ms'";

/// Options of `connstorm sweep`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EXAMPLES)]
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
    /// Latency SLO: `[LATENCY] pQ<BOUND`, e.g. `p99<1ms`, `p99.9<=500us`, `response p99<1ms`.
    /// LATENCY: handshake (the default), service, response (--http), first-byte (--http or
    /// --mode greet), tls-handshake (--tls), accept-queue-wait (the sweep's own server, epoll
    /// load engine: auto turns to it). The table's column names it.
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
