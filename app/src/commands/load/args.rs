//! The options of `connstorm load` and their value parsers (targets resolved to every address,
//! source ranges expanded); [`super::config`] turns them into a [`loadgen::LoadConfig`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use common::units::{parse_cpus, parse_duration, parse_positive_duration, parse_rate};
use loadgen::segment::Segment;

use crate::commands::metrics::MetricsArgs;
use crate::commands::Format;

/// The examples after `connstorm load --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # Open loop: 20k connections/s for 30 s against a local server
  connstorm load --target 127.0.0.1:9000 --rate 20k/s --duration 30s
  # Closed loop: 256 attempts in flight from 16 loopback source addresses
  connstorm load --target 127.0.0.1:9000 --concurrency 256 --source 127.0.0.2-127.0.0.17
  # One HTTPS GET per connection, resuming TLS sessions with tickets
  connstorm load --target localhost:443 --tls --tls-resume tickets --http / --rate 5k/s
  # Generator 0 of 2 of a multi-host run (1/2 on the other host; then connstorm merge)
  connstorm load --target 192.0.2.10:9000 --rate 200k/s --segment 0/2 --out runs";

/// Options of `connstorm load`.
///
/// Exit codes: 0 completed; 1 run-time failure; 2 bad input; 3 completed but nothing succeeded
/// (all failed, none could start, or none was accepted); 128+signo interrupted by a signal after
/// the report.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Servers to connect to: HOST:PORT, comma-separated (IPv6 as `[::1]:9000`). A name is
    /// resolved to every address it has (`localhost` → 127.0.0.1 and ::1), and all of them are
    /// used and printed; IPv4 and IPv6 may be mixed. Attempts go round-robin over the addresses.
    #[arg(long, value_delimiter = ',', required = true, value_parser = parse_target_item)]
    pub target: Vec<Targets>,
    /// Use only the target addresses of this family: `4` (IPv4) or `6` (IPv6). Default: all.
    #[arg(long, value_enum)]
    pub family: Option<Family>,
    /// Open loop: offered rate for the whole run, e.g. `20k/s`, `2000/s`, `1M/min`; attempts start
    /// at scheduled times whatever the server does, and latency counts from the scheduled time.
    /// At most 1000M/s (one start per ns, the schedule's resolution); starts the machine cannot
    /// make are counted as dropped. Default 1000/s when neither --rate nor --concurrency is given.
    #[arg(long, value_parser = parse_rate, conflicts_with = "concurrency", allow_hyphen_values = true)]
    pub rate: Option<f64>,
    /// Closed loop: this many attempts always in flight (split over the workers; >= 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: Option<u32>,
    /// Measured part of the run, e.g. `30s`, `2m` (10 ms to 30 days).
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration)]
    pub duration: Duration,
    /// Run before the measured part (excluded from the measured numbers), e.g. `2s`; `0s` for none.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// CPUs for the workers, one pinned worker each, e.g. `1-3`. Default: every CPU this process
    /// may run on (keep the server on other CPUs when it runs on the same host).
    #[arg(long, value_parser = |s: &str| parse_cpus(s).map(CpuList))]
    pub cpus: Option<CpuList>,
    /// How many load workers, spread round-robin over --cpus (worker w on the w-th CPU of the
    /// list, wrapping): more workers than CPUs oversubscribes them (e.g. `--load-workers 32
    /// --cpus 0-1`, a test of correctness at many workers on few CPUs; rates then measure the
    /// sharing, not the host). 1 to 4,096, at least one per CPU. Default: one per CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub load_workers: Option<u16>,
    /// Whether each load worker connects from its own disjoint slice of the ephemeral port range
    /// (`on`: IP_LOCAL_PORT_RANGE on every socket, Linux 6.3; a kernel without it falls back to
    /// the shared range and the report says so) or all share the whole range (`off`, as a plain
    /// client does). Default `on`; the report's `ports:` line says what ran.
    #[arg(long, value_enum, default_value = "on")]
    pub port_slices: loadgen::PortSlices,
    /// How the client ends each connection: `rst` (SO_LINGER 0, no TIME_WAIT), `fin` (client
    /// closes first; TIME_WAIT on the client limits ports), `server` (wait for the server's FIN).
    /// Default: `server` with --http (the server closes after the response, as an HTTP client
    /// sending `Connection: close` sees it: wrk, h2load), else `rst`. The report's first line
    /// names the wire that ran.
    #[arg(long, value_enum)]
    pub close: Option<loadgen::CloseMode>,
    /// Source addresses, used round-robin with IP_BIND_ADDRESS_NO_PORT: a list and/or ranges, e.g.
    /// `127.0.0.2-127.0.0.250` (any 127.0.0.0/8 address works on loopback). Default: the kernel
    /// chooses.
    #[arg(long, value_delimiter = ',', value_parser = parse_source_item)]
    pub source: Vec<Sources>,
    /// How long one attempt may wait for its handshake (counted from socket()); past it the
    /// attempt counts as ETIMEDOUT. Also bounds the drain at the end of the run. At most 1h.
    #[arg(long, default_value = "3s", value_parser = parse_positive_duration)]
    pub connect_timeout: Duration,
    /// After the handshake, read this many bytes (a greeting server) and report first-byte
    /// latency (scheduled start → N bytes read). Default: read nothing.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub expect_bytes: Option<u32>,
    /// Open-loop spacing of scheduled starts: `uniform` (evenly spaced) or `poisson`
    /// (exponential gaps, same mean).
    #[arg(long, value_enum, default_value = "uniform")]
    pub arrival: loadgen::Arrival,
    /// Open loop: at most this many attempts in flight for the whole run (each holds a file
    /// descriptor); a start that finds none free waits, and is dropped after --connect-timeout
    /// (one the generator itself reaches more than 100 ms late is dropped then).
    /// Default: rate x connect timeout, at most 2048 per worker (thousands of sockets in flight
    /// make every new attempt cost more system time, so a generator that falls behind would not
    /// recover), and below RLIMIT_NOFILE's hard limit minus 256.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_in_flight: Option<u64>,
    /// Open loop: a start later than this after its scheduled time counts as `late`.
    #[arg(long, default_value = "1ms", value_parser = parse_positive_duration)]
    pub late_threshold: Duration,
    /// Open loop: wake this long before each due start and poll (a bounded spin) until it is due,
    /// so the timer's wake-up latency falls before the start instead of after it; 0s = wake at
    /// the start. At most 1ms. Costs the load CPU up to this per start (printed as load CPU per
    /// connection beside the generator lag): on a dedicated load CPU set it to about the CPU's
    /// wake-up latency, or give `auto`, which measures it on each load CPU at the start (the
    /// 99.9th percentile of 1,000 timer wake-ups, within 2 µs to 100 µs; `bench`'s default,
    /// whose load CPUs are its own). The time spent spinning is printed apart from the work.
    /// Recorded (`load.spin_ns`, and `load.spin_auto` = 1 for `auto`).
    #[arg(long, default_value = "2us", value_parser = parse_spin)]
    pub spin: Spin,
    /// Open loop: at most this many due starts are made one after another after one wait
    /// (1..=4096; 1 = a wait before every start). Recorded (`load.start_batch`).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub start_batch: u64,
    /// After the handshake send one HTTP/1.1 request for PATH (default `/`) with `Host` the
    /// target as given (`localhost:9443`; `IP:PORT` for an address) and `Connection: close`, and read the response (Content-Length, chunked or until the
    /// server's FIN): reports requests, responses by status class and code, parse errors, bytes,
    /// response latency and time to first byte (both from the scheduled start).
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "/", conflicts_with = "expect_bytes")]
    pub http: Option<String>,
    /// With --http: the request method (an HTTP token, e.g. GET, HEAD, POST). Default GET.
    #[arg(long, value_name = "METHOD", requires = "http")]
    pub http_method: Option<String>,
    /// With --http: an extra request header `Name: value`; repeat for more. A `Host` header
    /// replaces the default one.
    #[arg(long, value_name = "HEADER", requires = "http")]
    pub http_header: Vec<String>,
    /// With --http: send this file's contents as the request body (with Content-Length): a
    /// regular file of at most 16 MiB (the encoded request is kept in memory per target).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_body: Option<std::path::PathBuf>,
    /// After the TCP handshake do a TLS handshake (rustls, `aws-lc-rs` provider) and report its
    /// latency (TCP connected → TLS handshake done), full vs resumed handshakes and failures by
    /// alert. With --http the request goes over it (HTTPS). Without --http an attempt succeeds
    /// at the end of its TLS handshake; the client then sends close_notify and reads until the
    /// server closes.
    #[arg(long, conflicts_with = "expect_bytes")]
    pub tls: bool,
    /// The TLS client's options (`--tls-version`, `--sni`, `--alpn`, `--tls-resume`,
    /// `--tls-resume-share`, `--tls-ciphers`, `--tls-groups`, `--insecure`, `--ca`), shared with
    /// `bench`.
    #[command(flatten)]
    pub tls_client: crate::commands::tls::TlsClientArgs,
    /// Connect engine: `auto`, `io-uring` or `epoll` (the report says which ran and why).
    #[arg(long, default_value = "auto")]
    pub load_engine: loadgen::LoadEngine,
    /// Report format on stdout: `text` or `json` (per-second lines always go to stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also write the run as a run record (JSON, the bench schema with role `load`) into this
    /// directory (created if missing), for `report`, `compare`, `plot` and `merge`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Run only this generator's share of a run split over N generators: `i/N`, **0-based**
    /// (0/4 … 3/4, as Kubernetes' JOB_COMPLETION_INDEX). The open-loop --rate, the closed-loop
    /// --concurrency and the --source list are split into whole shares that sum exactly to the
    /// whole (the remainder goes one apiece to the first segments); sources in disjoint slices.
    #[arg(long, value_name = "i/N", value_parser = parse_segment)]
    pub segment: Option<Segment>,
    /// Start the schedule (warm-up included) at this wall-clock instant, so generators on
    /// several hosts start together: an RFC 3339 UTC time (`2026-12-01T07:00:00Z`) or `+2s`
    /// from now. A time in the past is refused. Needs synchronised clocks (chrony, NTP).
    #[arg(long, value_name = "TIME", value_parser = loadgen::start::parse_start_at)]
    pub start_at: Option<loadgen::start::StartAt>,
    /// Prometheus `/metrics`.
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// The kernel profile of the load CPUs during the measured part.
    #[command(flatten)]
    pub profile: crate::profile::ProfileArgs,
}

/// One `--target` item: every address its name resolves to, in the resolver's order, and the
/// host name when it was given as a name (the default `--sni`).
#[derive(Debug, Clone)]
pub struct Targets(pub Vec<SocketAddr>, pub Option<String>);

/// `--family`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Family {
    /// IPv4 only.
    #[value(name = "4")]
    V4,
    /// IPv6 only.
    #[value(name = "6")]
    V6,
}

/// `--cpus`: ascending CPU ids.
#[derive(Debug, Clone)]
pub struct CpuList(pub Vec<usize>);

/// One `--source` item: one address or an expanded range.
#[derive(Debug, Clone)]
pub struct Sources(pub Vec<IpAddr>);

/// Parses `--segment i/N` (0-based).
/// The `value_parser` of `--spin` (`load` and `bench`): a duration of at most
/// [`loadgen::MAX_SPIN_NS`], refused as the user wrote it. The load config's own check said
/// `--spin 1500000 ns`, and only once `bench` had started its server and written a record.
///
/// # Errors
/// A bad duration ([`parse_duration`]), or one longer than 1 ms.
pub fn parse_spin(s: &str) -> Result<Spin, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Spin::Auto);
    }
    // parse_duration's examples (`30s`, `2m`) are all above a spin's 1 ms: give a spin's own.
    let d = parse_duration(s).map_err(|_| {
        format!(
            "invalid duration {:?} for a spin: give at most 1ms with its unit, e.g. `2us`, `50us` or `1ms`, or `auto`",
            s.trim()
        )
    })?;
    if d.as_nanos() > u128::from(loadgen::MAX_SPIN_NS) {
        return Err(format!(
            "{:?} is longer than 1ms: a longer spin only burns the worker's CPU; give 0s to 1ms, or `auto`",
            s.trim()
        ));
    }
    Ok(Spin::Fixed(d))
}

/// `--spin`: a fixed spin before each due start, or `auto` (each load worker measures its
/// CPU's timer wake-up latency at its start and spins that long: [`loadgen::Pacing::spin_auto`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spin {
    /// Measured per worker at its start, within 2 µs to 100 µs.
    Auto,
    /// This long (at most 1 ms).
    Fixed(Duration),
}

fn parse_segment(s: &str) -> Result<Segment, String> {
    s.parse()
        .map_err(|e: loadgen::segment::SegmentError| e.to_string())
}

/// Resolves one `HOST:PORT` to every address it has ([`common::addr::resolve_targets`]).
fn parse_target_item(s: &str) -> Result<Targets, String> {
    common::addr::resolve_targets(s).map(|r| Targets(r.addrs, r.name))
}

/// One `--source` item: an address or an inclusive range `A-B` of one family
/// ([`common::addr::parse_sources`]).
fn parse_source_item(s: &str) -> Result<Sources, String> {
    common::addr::parse_sources(s).map(Sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--spin`: `auto` in any case and spacing, a duration up to 1 ms; anything else is named
    /// with a spin's own examples (none of which would be refused in turn).
    #[test]
    fn a_spin_is_auto_or_a_short_duration_and_a_bad_one_gets_a_spins_examples() {
        for ok in ["auto", " AUTO ", "Auto"] {
            assert_eq!(parse_spin(ok), Ok(Spin::Auto), "{ok:?}");
        }
        assert_eq!(parse_spin("1ms"), Ok(Spin::Fixed(Duration::from_millis(1))));
        assert_eq!(parse_spin("0s"), Ok(Spin::Fixed(Duration::ZERO)));
        for bad in ["", " ", "5", "autox", "inf", "-1us", "a u t o"] {
            let e = parse_spin(bad).unwrap_err();
            assert!(
                e.starts_with("invalid duration ")
                    && e.ends_with(" for a spin: give at most 1ms with its unit, e.g. `2us`, `50us` or `1ms`, or `auto`"),
                "{bad:?}: {e}"
            );
        }
        for example in ["2us", "50us", "1ms"] {
            assert!(parse_spin(example).is_ok(), "{example}");
        }
        assert!(parse_spin("1.0001ms")
            .unwrap_err()
            .contains("is longer than 1ms"));
    }
}
