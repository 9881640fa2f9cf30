//! `--metrics ADDR` and `--metrics-linger` of `server`, `load` and `bench` (the endpoint is
//! started and ended by [`::app::commands::start_metrics`]; the collectors live in the
//! `server`, `loadgen` and `bench` crates).

use std::net::SocketAddr;
use std::time::Duration;

use crate::units::{parse_duration, parse_listen};

/// The Prometheus options.
#[derive(Debug, Clone, Default, clap::Args)]
#[group(skip)]
pub struct MetricsArgs {
    /// Serve Prometheus metrics on http://ADDR/metrics while the command runs (IP:PORT; any
    /// address, scrapers usually run elsewhere; port 0 picks a free one, printed on stderr):
    /// OpenMetrics text, or the classic text format 0.0.4 when the scraper's Accept header
    /// prefers text/plain. Counts are the workers' published figures (server: ≤ 50 ms old, load:
    /// ≤ ~1 s). An address in use is refused (exit 2) before anything starts.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub metrics: Option<SocketAddr>,
    /// With --metrics: after the run, keep serving the final values this long (e.g. `15s`, one
    /// scrape interval) so the last scrape sees the end; a SIGINT/SIGTERM that arrives during
    /// the wait ends it. Default: exit at once.
    #[arg(long, value_name = "DURATION", requires = "metrics", value_parser = parse_duration)]
    pub metrics_linger: Option<Duration>,
}

impl MetricsArgs {
    /// The options as [`::app::commands`] takes them.
    pub fn options(&self) -> ::app::commands::MetricsOptions {
        ::app::commands::MetricsOptions {
            addr: self.metrics,
            linger: self.metrics_linger,
        }
    }
}
