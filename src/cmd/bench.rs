//! `connstorm bench`: the benchmark most users run first. Server and load generator in one
//! process (or load only against `--target`), two phases — *peak* (closed loop, saturating) and
//! *latency* (open loop at 80% of the peak or `--rate`) — a summary, and a run record.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;

use crate::bench::harness::Setup;
use crate::bench::summary;
use crate::error::bad_input;
use crate::units;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The human summary on stdout.
    Text,
    /// The run record as JSON on stdout.
    Json,
}

/// Client close mode (see `connstorm load --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Close {
    /// SO_LINGER 0: RST, no TIME_WAIT anywhere.
    Rst,
    /// Client closes first: TIME_WAIT on the client (port budget!).
    Fin,
    /// Wait for the server's FIN, then close.
    Server,
}

impl From<Close> for loadgen::CloseMode {
    fn from(c: Close) -> Self {
        match c {
            Close::Rst => loadgen::CloseMode::Rst,
            Close::Fin => loadgen::CloseMode::Fin,
            Close::Server => loadgen::CloseMode::Server,
        }
    }
}

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
    /// CPUs of the load workers, or `auto`. Default: the CPUs not serving (the same CPU on a
    /// 1-CPU host).
    #[arg(long)]
    pub load_cpus: Option<String>,
    /// Server event engine: auto (io_uring if it works here, else epoll), io-uring, epoll.
    #[arg(long, default_value = "auto", value_parser = parse_engine)]
    pub engine: server::EngineChoice,
    /// Client close mode.
    #[arg(long, value_enum, default_value = "rst")]
    pub close: Close,
    /// Server mode: rst (SO_LINGER 0: no FIN_WAIT2/TIME_WAIT on either side), close (FIN: with
    /// the default client RST, a few orphaned FIN_WAIT2 minisocks make reused ports' SYNs be
    /// resent, see README), greet[:BYTES] (the client then measures first-byte latency), hold.
    #[arg(long, default_value = "rst", value_parser = parse_mode)]
    pub mode: server::Mode,
    /// listen() backlog per listener (capped by net.core.somaxconn).
    #[arg(long, default_value_t = 65535)]
    pub backlog: u32,
    /// Benchmark an external server (HOST:PORT, e.g. a gateway): load side only.
    #[arg(long, value_parser = parse_target)]
    pub target: Option<std::net::SocketAddr>,
    /// Run server and load in two fresh network namespaces joined by veth (needs root); counts
    /// must then agree exactly with the kernel's.
    #[arg(long)]
    pub netns: bool,
    /// With --netns: add this round-trip time with netem (e.g. `1ms`).
    #[arg(long, value_parser = units::parse_duration, requires = "netns")]
    pub rtt: Option<Duration>,
    /// Per-attempt connect timeout.
    #[arg(long, default_value = "3s", value_parser = units::parse_positive_duration)]
    pub connect_timeout: Duration,
    /// Label stored in the record and its file name.
    #[arg(long, default_value = "")]
    pub label: String,
    /// Directory for run records.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
}

/// Options of `connstorm bench`.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Args {
    /// Total measured time of both phases (40% peak, 60% latency, in whole seconds from 3 s up),
    /// plus a warm-up before each phase (1 s; duration/10 below 3 s).
    #[arg(long, default_value = "15s", value_parser = units::parse_positive_duration)]
    pub duration: Duration,
    /// Offered rate of the latency phase (e.g. `16.7k/s`, `1M/min`); default 80% of the
    /// measured peak.
    #[arg(long, value_parser = units::parse_rate)]
    pub rate: Option<f64>,
    /// Also measure the kernel floor (a blocking socket/connect/close pair on the same CPUs) and
    /// print connstorm's peak as a ratio of it.
    #[arg(long)]
    pub baseline: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Where and how to run.
    #[command(flatten)]
    pub setup: SetupArgs,
}

/// Longest `bench` run accepted (24 h): a benchmark, not a soak test (use `load` for those); its
/// per-second timeline must stay a small record.
pub const MAX_BENCH_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Highest offered rate accepted (10 M connections/s): far above what any Linux host completes
/// (loopback handshakes cost several µs of CPU each), yet finite, so schedules stay bounded.
pub const MAX_RATE_PER_SEC: f64 = 1e7;

/// Most attempts in flight accepted (1 M): each is a socket, and the fd limit bounds them anyway.
pub const MAX_CONCURRENCY: u32 = 1_000_000;

/// Longest per-attempt connect timeout accepted (1 h).
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(3600);

impl SetupArgs {
    /// Checks every option that needs no host state beyond limits and the `--out` directory,
    /// before anything is created: concurrency, backlog, connect timeout, `--target`/`--netns`,
    /// and that `--out` can be written.
    ///
    /// # Errors
    /// Bad input (exit 2) naming the option, its limit and how to fix it.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.target.is_some() && self.netns {
            return Err(bad_input("--target and --netns exclude each other: --netns runs connstorm's own server in a private namespace"));
        }
        if let Some(c) = self.concurrency {
            if c == 0 {
                return Err(bad_input(
                    "--concurrency 0: keep at least one attempt in flight, e.g. --concurrency 32",
                ));
            }
            if c > MAX_CONCURRENCY {
                return Err(bad_input(format!(
                    "--concurrency {c} is above the most connstorm accepts ({MAX_CONCURRENCY}): each attempt holds a socket; give fewer"
                )));
            }
            let room = crate::bench::harness::fd_room_after_raise();
            if c as usize > room {
                return Err(bad_input(format!(
                    "--concurrency {c} needs {c} sockets but the open-file limit leaves the load side {room}: raise it (`ulimit -n`, RLIMIT_NOFILE) or give --concurrency {room} or less"
                )));
            }
        }
        if self.backlog == 0 || self.backlog > i32::MAX as u32 {
            return Err(bad_input(format!(
                "--backlog {} is outside 1..={}: listen(2) takes a positive int, and the kernel caps it at net.core.somaxconn anyway",
                self.backlog,
                i32::MAX
            )));
        }
        if self.connect_timeout > MAX_CONNECT_TIMEOUT {
            return Err(bad_input(format!(
                "--connect-timeout {:?} is longer than {} s: give a shorter one (a SYN retransmit schedule gives up after ~131 s anyway)",
                self.connect_timeout,
                MAX_CONNECT_TIMEOUT.as_secs()
            )));
        }
        crate::bench::record::check_writable_dir(&self.out)
    }

    /// Validates ([`SetupArgs::validate`]), resolves the CPUs and builds the harness setup.
    ///
    /// # Errors
    /// Bad input for CPU lists, limits and option conflicts.
    pub fn resolve(&self) -> anyhow::Result<Setup> {
        self.validate()?;
        let (server_cpus, load_cpus) = crate::bench::cpus::pick_cpus(
            self.server_cpus.as_deref(),
            self.load_cpus.as_deref(),
            self.target.is_some(),
        )?;
        let expect_bytes = match self.mode {
            server::Mode::Greet { bytes } => Some(bytes),
            _ => None,
        };
        Ok(Setup {
            server_cpus,
            load_cpus,
            engine: self.engine,
            mode: self.mode,
            backlog: self.backlog,
            close: self.close.into(),
            target: self.target,
            netns: self.netns,
            rtt: self.rtt,
            connect_timeout: self.connect_timeout,
            expect_bytes,
        })
    }

    /// Closed-loop concurrency of the peak phase.
    pub fn peak_concurrency(&self, load_cpus: usize) -> u32 {
        self.concurrency.unwrap_or(32 * load_cpus.max(1) as u32)
    }
}

fn parse_engine(s: &str) -> Result<server::EngineChoice, String> {
    s.parse()
}

fn parse_mode(s: &str) -> Result<server::Mode, String> {
    s.parse()
}

fn parse_target(s: &str) -> Result<std::net::SocketAddr, String> {
    units::parse_target(s)
}

/// Runs `connstorm bench`.
///
/// # Errors
/// Bad options (exit 2), server/load/namespace failures, record write failures.
pub fn run(args: Args) -> anyhow::Result<i32> {
    // Every input is checked before a record, a namespace or a server exists.
    validate(&args)?;
    let setup = args.setup.resolve()?;
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    let (record, path, result) = crate::bench::run::execute(&args, setup, &stop)?;
    match args.format {
        Format::Text => crate::output::out(&summary::render(&record, Some(&path))),
        Format::Json => {
            crate::output::out(&format!("{}\n", record.to_json()));
            crate::output::note(&format!("record: {}", path.display()));
        }
    }
    result?;
    Ok(exit_code(&record))
}

/// `3` when no phase completed a connection (nothing was measured), else `0`.
pub fn exit_code(record: &results::RunRecord) -> i32 {
    if record.phases.iter().all(|p| p.successes == 0) {
        3
    } else {
        0
    }
}

/// Checks `bench`'s own options (duration, rate); [`SetupArgs::resolve`] checks the shared ones.
///
/// # Errors
/// Bad input (exit 2) naming the option, its limit and how to fix it.
pub fn validate(args: &Args) -> anyhow::Result<()> {
    if args.duration < Duration::from_secs(1) {
        return Err(bad_input(format!(
            "--duration {:?} is too short: give at least 1s (each phase needs whole seconds of load)",
            args.duration
        )));
    }
    if args.duration > MAX_BENCH_DURATION {
        return Err(bad_input(format!(
            "--duration {:?} is longer than bench accepts ({} h): give a shorter one, or use `connstorm load` for long runs",
            args.duration,
            MAX_BENCH_DURATION.as_secs() / 3600
        )));
    }
    if let Some(rate) = args.rate {
        if !(1.0..=MAX_RATE_PER_SEC).contains(&rate) {
            return Err(bad_input(format!(
                "--rate {rate}/s is outside 1/s..={}/s: give a rate a host can be offered, e.g. --rate 20k/s",
                MAX_RATE_PER_SEC
            )));
        }
    }
    Ok(())
}
