//! The options of `connstorm bench` (and the [`SetupArgs`] that `sweep` and `ab` share) and
//! their value parsers; [`super::resolve`] checks them and `super` runs the benchmark.

// Doc comments of CLI options are the `--help` text, where `[sysctl]` or `greet[:BYTES]` mean
// what they say, not intra-doc links.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;
use std::time::Duration;

use common::units;

use crate::commands::metrics::MetricsArgs;
use crate::commands::Format;

/// Options shared by `bench`, `sweep` and `ab`: where server and load run and how.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct SetupArgs {
    /// Attempts in flight during the peak (closed-loop) phase; default 32 per load CPU.
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// CPUs of the server workers, or `auto` (placement planner: isolated CPUs on the NIC's NUMA
    /// node first, one per core). Default: the first third (at least one) of the CPUs this
    /// process may use.
    #[arg(long)]
    pub server_cpus: Option<String>,
    /// How many server workers, each with its own SO_REUSEPORT listener and event loop, spread
    /// round-robin over the server CPUs (as `connstorm server --server-workers`): more workers
    /// than CPUs oversubscribes them (a correctness test at many workers; the rate then
    /// measures the sharing). 1 to 4,096, at least one per server CPU. Default: one per server
    /// CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096), conflicts_with = "target")]
    pub server_workers: Option<u16>,
    /// CPUs of the load workers, or `auto`. Default: the CPUs not serving (the same CPU on a
    /// 1-CPU host).
    #[arg(long)]
    pub load_cpus: Option<String>,
    /// Server event engine: auto (io_uring if it works here, else epoll), io-uring, epoll.
    #[arg(long, default_value = "auto", value_parser = parse_engine)]
    pub engine: server::EngineChoice,
    /// One server worker and one load worker on every CPU this process may use (softirq work
    /// stays on the CPU that raised it); `--baseline`'s floor runs in the same shape.
    #[arg(long, conflicts_with_all = ["server_cpus", "load_cpus", "target"])]
    pub whole_machine: bool,
    /// Load side's connect engine: auto, io-uring, epoll (see `connstorm load --help`).
    #[arg(long, default_value = "auto")]
    pub load_engine: loadgen::LoadEngine,
    /// The accept-queue wait (the in-process server with the epoll load engine): `on` stamps
    /// each connection on both sides and samples the listeners' queue; `off` stamps nothing
    /// (to measure what stamping costs, or to spare it) and says once it was not measured.
    /// Not with --target: an external server's accepts cannot be stamped, so the wait is never
    /// measured there.
    #[arg(
        long,
        value_enum,
        value_name = "on|off",
        default_value = "on",
        conflicts_with = "target"
    )]
    pub accept_wait: crate::commands::server::args::OnOff,
    /// How many load workers, spread round-robin over the load CPUs (as `connstorm load
    /// --load-workers`): more workers than CPUs oversubscribes them (a correctness test at many
    /// workers; the rate then measures the sharing). 1 to 4,096, at least one per load CPU and
    /// no more than the peak's attempts in flight (--concurrency). Default: one per load CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub load_workers: Option<u16>,
    /// Whether each load worker connects from its own disjoint slice of the ephemeral port range
    /// (`on`: IP_LOCAL_PORT_RANGE, Linux 6.3; older kernels fall back to the shared range with a
    /// note) or all share the whole range (`off`, as a plain client does).
    #[arg(long, value_enum, default_value = "on")]
    pub port_slices: loadgen::PortSlices,
    /// Open loop: wake this long before each due start and poll (a bounded spin) until it is due,
    /// so the timer's wake-up latency falls before the start instead of after it; 0s = wake at
    /// the start, at most 1ms. Default `auto`: each load worker measures its CPU's wake-up
    /// latency at its start (the 99.9th percentile of 1,000 timer wake-ups, within 2 µs to
    /// 100 µs) and spins that long, since bench's load CPUs do nothing else (a CPU that holds
    /// several load workers, or bench's own server too, keeps 2us); a spin shorter than the
    /// wake-up leaves the rest of it as generator lag. The time spent spinning is printed
    /// apart from the load CPU's work per connection. Recorded (`load.spin_ns`, the longest
    /// spin a worker ran with, and `load.spin_auto` = 1 for `auto`).
    #[arg(long, default_value = "auto", value_parser = crate::commands::load::args::parse_spin)]
    pub spin: crate::commands::load::args::Spin,
    /// Open loop: at most this many due starts are made one after another after one wait
    /// (1..=4096; 1 = a wait before every start). Recorded (`load.start_batch`).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub start_batch: u64,
    /// Client close mode: rst (SO_LINGER 0), fin (client closes first), server (wait for the
    /// server's FIN). Default: server with --http or --mode http (the server closes after the
    /// response, as HTTP clients see it), else rst. The first line names the wire that ran.
    #[arg(long, value_enum)]
    pub close: Option<loadgen::CloseMode>,
    /// Server mode: rst (SO_LINGER 0: no FIN_WAIT2/TIME_WAIT on either side), close (FIN: with
    /// the default client RST, a few orphaned FIN_WAIT2 minisocks make reused ports' SYNs be
    /// resent, see docs/methodology.md), greet[:BYTES] (the client then measures first-byte latency), hold,
    /// http. Default: rst; with --tls close; with --http http (any other mode given with
    /// --http or --tls is refused, not replaced).
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<server::Mode>,
    /// listen() backlog per listener (capped by net.core.somaxconn).
    #[arg(long, default_value_t = 65535, value_parser = units::parse_backlog)]
    pub backlog: u32,
    /// Benchmark an external server (HOST:PORT, e.g. a gateway): load side only. A name must
    /// resolve to one address (one with several is refused, listing them).
    #[arg(long, value_parser = parse_target)]
    pub target: Option<BenchTarget>,
    /// Run server and load in two fresh network namespaces joined by veth (needs root); counts
    /// must then agree exactly with the kernel's.
    #[arg(long)]
    pub netns: bool,
    /// With --netns: add this round-trip time with netem (e.g. `1ms`), up to 549.755812s
    /// (rtt/2 on each side, netem's 32-bit tick field).
    #[arg(long, value_parser = parse_rtt, requires = "netns")]
    pub rtt: Option<Duration>,
    /// Per-attempt connect timeout, at most 1h.
    #[arg(long, default_value = "3s", value_parser = units::parse_positive_duration)]
    pub connect_timeout: Duration,
    /// Label stored in the record and (its first 64 characters, made file-safe) its file name;
    /// at most 1,024 bytes.
    #[arg(long, default_value = "", value_parser = parse_label)]
    pub label: String,
    /// Directory for run records.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// A TLS handshake on every connection (rustls, both sides): the in-process server uses
    /// --cert/--key or a self-signed certificate generated at start, which the load trusts;
    /// the default server mode becomes `close` (close_notify, close). Records TLS handshakes
    /// full/resumed, their latency and the server's TLS accepts.
    #[arg(long)]
    pub tls: bool,
    /// One HTTP/1.1 GET per connection (with --tls: over TLS); the default server mode becomes
    /// `http` (a 204 per request). Records status classes and response latency.
    #[arg(long)]
    pub http: bool,
    /// With --tls: the server's certificate chain, PEM (needs --key); the load then does not
    /// check the name.
    #[arg(long, value_name = "FILE", requires = "tls", requires = "key")]
    pub cert: Option<PathBuf>,
    /// With --tls: the private key of --cert, PEM.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// The load's TLS client options, the same as `load`'s (`--tls-version`, `--sni`,
    /// `--alpn`, `--tls-resume`, `--tls-resume-share`, `--tls-ciphers`, `--tls-groups`,
    /// `--insecure`, `--ca`); with the own server the check trusts its certificate unless
    /// --ca is given, and --insecure is refused (the certificate is known, so it is checked).
    #[command(flatten)]
    pub tls_client: crate::commands::tls::TlsClientArgs,
}

/// `--target HOST:PORT`: the one address, and the host's name when it was given as one (the
/// default SNI of `--tls`, as `load` sends it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchTarget {
    /// The address.
    pub addr: std::net::SocketAddr,
    /// The name, when the host was a name.
    pub name: Option<String>,
}

/// Options of `connstorm bench`.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Args {
    /// Total measured time of both phases: from 3 s up the peak phase gets 40% rounded to whole
    /// seconds and the latency phase the rest (e.g. `3.5s`: 1 s and 2.5 s); below 3 s, 40% and
    /// 60% exactly. Plus a warm-up before each phase: 1 s, or duration/10 below 3 s.
    #[arg(long, default_value = "15s", value_parser = units::parse_positive_duration)]
    pub duration: Duration,
    /// Offered rate of the latency phase (e.g. `16.7k/s`, `1M/min`); default 80% of the
    /// measured peak.
    #[arg(long, value_parser = units::parse_rate)]
    pub rate: Option<f64>,
    /// Also measure the kernel floor (a blocking socket/connect/close pair on the same CPUs)
    /// paired with connstorm's peak: slices alternate in ABBA order, and the median paired ratio
    /// is printed with its 95% interval.
    #[arg(long)]
    pub baseline: bool,
    /// With --baseline: pairs of slices (floor, connstorm) in ABBA order, 1..=100; 6 is the
    /// fewest that give a 95% interval for the median ratio.
    #[arg(long, default_value_t = crate::baseline::DEFAULT_PAIRS, requires = "baseline")]
    pub baseline_pairs: usize,
    /// With --baseline: measured time of each slice (0.5s..=60s), after a 0.5 s warm-up.
    #[arg(long, default_value = "2s", value_parser = units::parse_positive_duration, requires = "baseline")]
    pub baseline_slice: Duration,
    /// Output on stdout: `text` (the human summary) or `json` (the run record).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Where and how to run.
    #[command(flatten)]
    pub setup: SetupArgs,
}

fn parse_engine(s: &str) -> Result<server::EngineChoice, String> {
    s.parse()
}

fn parse_mode(s: &str) -> Result<server::Mode, String> {
    s.parse()
}

fn parse_target(s: &str) -> Result<BenchTarget, String> {
    let r = common::addr::resolve_targets(s)?;
    match r.addrs.as_slice() {
        [one] => Ok(BenchTarget {
            addr: *one,
            name: r.name,
        }),
        // Several addresses: refused, with the list ([`units::parse_target`]'s message).
        _ => units::parse_target(s).map(|addr| BenchTarget { addr, name: r.name }),
    }
}

/// The examples after `connstorm bench --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # Peak and latency phases on loopback, 15 s in all; the record goes under ./runs
  connstorm bench
  # An external server (a gateway) over TLS: load side only, latency phase at 20k conn/s
  connstorm bench --target 192.0.2.10:443 --tls --rate 20k/s
  # A neper test (tcp_crr) in two network namespaces, with the kernel profile of its peak
  connstorm bench --netns --like 'tcp_crr -T 8 -F 1000' --profile
  # The plan for server CPUs 0-1 and load CPUs 2-3 (workers, engines, phases); nothing runs
  connstorm bench --server-cpus 0-1 --load-cpus 2-3 --dry-run";

/// The `connstorm bench` command line: the benchmark's options (shared with `ab`) and
/// `bench`'s own `--metrics`, `--profile` and `--like`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Command {
    /// The benchmark.
    #[command(flatten)]
    pub args: Args,
    /// Prometheus `/metrics`.
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// The kernel profile of the peak phase.
    #[command(flatten)]
    pub profile: crate::profile::ProfileArgs,
    /// With --profile: also measure what the profile costs, in PAIRS off/on pairs of 2 s
    /// closed-loop slices (ABBA order, 1..=100; 6 give a 95% interval) on the same server
    /// after the phases; prints the median change of conn/s and CPU per connection. Without
    /// it, the cost measured in docs/kernel-profile.md is printed.
    #[arg(long, value_name = "PAIRS", requires = "profile",
          value_parser = clap::value_parser!(u64).range(1..=100))]
    pub profile_overhead: Option<u64>,
    /// Reproduce a neper test: `tcp_crr -T THREADS -F FLOWS [-l SECS]` becomes --concurrency
    /// FLOWS, --close fin, --mode hold, at most THREADS load workers and a SECS-second peak
    /// phase (docs/neper.md: the mapping and what differs). Not with --load-workers: -T sets
    /// them.
    #[arg(long, value_name = "NEPER", conflicts_with_all = ["concurrency", "close", "mode", "duration", "target", "load_workers"])]
    pub like: Option<String>,
    /// Print the plan (server and load CPUs, workers, engines, phases with their durations,
    /// what would change on the host) after every check a run makes first, and exit 0 without
    /// starting a server, opening a socket or writing a record. Bad options exit 2 as in a run.
    #[arg(long)]
    pub dry_run: bool,
}

/// `--rtt`: a duration netem can add ([`tuning::host::check_rtt`]), refused when parsed.
fn parse_rtt(s: &str) -> Result<Duration, String> {
    let d = units::parse_duration(s)?;
    tuning::host::check_rtt(d)?;
    Ok(d)
}

/// `--label`: at most [`results::record::MAX_LABEL_BYTES`] bytes (reports print it in every
/// table and plot, and records with a longer one are refused when read).
pub(crate) fn parse_label(s: &str) -> Result<String, String> {
    let max = results::record::MAX_LABEL_BYTES;
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(format!(
            "{:?} holds the control character {:?}: a label is printed in reports; give one without control characters",
            s,
            c
        ));
    }
    if s.len() > max {
        return Err(format!(
            "{} bytes: a label is at most {} bytes; give a shorter one",
            results::numfmt::count(s.len() as u64),
            results::numfmt::count(max as u64)
        ));
    }
    Ok(s.to_string())
}
