//! Prometheus `/metrics` for `server`, `load` and `bench`: the HTTP endpoint ([`Endpoint`]),
//! the encoding helpers every collector uses ([`encode`]), the latency buckets
//! ([`LATENCY_BUCKETS_NS`], [`Buckets`]) and the classic text format for scrapers that ask for
//! it ([`text004`]).
//!
//! # Moving parts
//! - The metrics are [`prometheus_client`] (0.25) *collectors*: they read, at scrape time, what
//!   the workers already published for the per-second lines (the server's per-worker stats
//!   slots, the load generator's per-second rows). Scraping never touches a worker: no lock, no
//!   atomic, no channel is added to a hot path.
//! - [`Endpoint`] binds a TCP listener (any address: operators scrape from elsewhere), and one
//!   thread answers `GET /metrics` one request at a time, with a deadline per request; it ends
//!   at once when stopped (a pipe wakes it) and is joined, so no thread outlives the run.
//! - Names: one prefix `connstorm_` (the [`Registry`] of [`Endpoint`] adds it), base units
//!   (seconds) as a suffix from [`prometheus_client::registry::Unit`], `_total` on counters
//!   only, added by the encoder.
//! - OpenMetrics text (`application/openmetrics-text; version=1.0.0`, ending `# EOF`) is the
//!   default; a scraper whose `Accept` header prefers `text/plain` gets the classic Prometheus
//!   text format 0.0.4 ([`text004`]), which `promtool check metrics` reads.
//!
//! [`Registry`]: prometheus_client::registry::Registry

pub mod encode;
pub mod endpoint;
pub mod state;
pub mod text004;

pub use encode::{Buckets, LATENCY_BUCKETS_NS};
pub use endpoint::{Endpoint, EndpointError};
pub use prometheus_client;
pub use state::StateMetric;

/// The prefix of every connstorm metric name (`connstorm_server_accepted_total`, ...).
pub const PREFIX: &str = "connstorm";

/// The content type of the OpenMetrics text format, the default answer.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of the classic Prometheus text format (0.0.4), served when the `Accept`
/// header prefers `text/plain`.
pub const TEXT004_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
