//! `--metrics ADDR` and `--metrics-linger` of `server`, `load` and `bench`: the options, and the
//! endpoint's start ([`start`]) and end ([`end`]). The collectors live in the `server` and
//! `loadgen` crates and, for `bench`'s phase, in [`super::bench::prometheus`].

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::metrics::Endpoint;
use common::units::{parse_duration, parse_listen};

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

/// Binds and starts the endpoint when an address is given, and says where on stderr
/// (`connstorm COMMAND: metrics on http://127.0.0.1:PORT/metrics`).
///
/// # Errors
/// Bad input (exit 2) when the address cannot be bound (in use, not local, privileged port);
/// a run-time error when the thread cannot start.
pub fn start(o: &MetricsArgs, command: &str) -> anyhow::Result<Option<Endpoint>> {
    let Some(addr) = o.metrics else {
        return Ok(None);
    };
    let ep = Endpoint::start(addr).map_err(|e| {
        if e.is_bad_input() {
            crate::bad_input(e.to_string())
        } else {
            anyhow::Error::new(e)
        }
    })?;
    eprintln!(
        "connstorm {command}: metrics on http://{}/metrics",
        ep.local_addr()
    );
    Ok(Some(ep))
}

/// Ends the endpoint: after the linger (cut short by a SIGINT/SIGTERM that arrives during it;
/// one that ended the run before does not), stops its thread and joins it.
pub fn end(ep: Option<Endpoint>, o: &MetricsArgs) {
    let Some(mut ep) = ep else { return };
    if let Some(linger) = o.metrics_linger.filter(|d| !d.is_zero()) {
        let signals_before = crate::signals::count();
        let until = Instant::now() + linger;
        eprintln!(
            "connstorm: serving the final metrics for {} more (SIGINT/SIGTERM ends it)",
            humantime::format_duration(linger)
        );
        while Instant::now() < until && crate::signals::count() == signals_before {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    ep.stop();
}
