//! The options of `connstorm scale`; [`super::run`] checks and runs them.

// Doc comments of CLI options are the `--help` text, where `[::1]` means what it says.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;
use std::time::Duration;

use common::units;

use crate::commands::Format;

/// Which shapes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShapeArg {
    /// Server and load grow together: N server cores and N load cores per step.
    Together,
    /// A fixed server (`--server-cores`), the load growing: N load cores per step.
    FixedServer,
    /// Both: the together steps, then the fixed-server steps.
    Both,
}

/// Where a `together` step's workers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PairsArg {
    /// Server and load on different CPUs: N cores = 2N CPUs.
    Split,
    /// One server and one load worker on each of N CPUs (softirq stays where it was raised).
    Shared,
}

/// The examples after `connstorm scale --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # Both shapes at 1, 2, 4, ... cores on this host's placement, 5 s a step, record under ./runs
  connstorm scale
  # The plan only (each step's CPUs), for a big machine's topology snapshot taken there
  connstorm scale --dry-run --root ./big-host
  # This 2-CPU VM: 1 -> 2 cores, a server and a load worker per CPU, in private namespaces
  connstorm scale --shape together --pairs shared --netns --profile --plot scale.svg";

/// Options of `connstorm scale`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Which shapes to run: `together` (server and load grow one core each per core of the
    /// step), `fixed-server` (the server on `--server-cores` CPUs, the load growing), `both`.
    #[arg(long, value_enum, default_value = "both")]
    pub shape: ShapeArg,
    /// `together` steps: `split` (server and load on different CPUs, 2N CPUs for N cores) or
    /// `shared` (one server and one load worker on each of N CPUs).
    #[arg(long, value_enum, default_value = "split")]
    pub pairs: PairsArg,
    /// Cores per step, ascending, e.g. `1,2,4,8`; default 1, 2, 4, … up to the most that fit,
    /// and that most.
    #[arg(long, value_delimiter = ',', value_name = "CORES")]
    pub steps: Option<Vec<usize>>,
    /// `fixed-server`: the server's cores (default half of the worker CPUs).
    #[arg(long, value_name = "N")]
    pub server_cores: Option<usize>,
    /// CPUs the steps may use, in the kernel's cpulist syntax (default: every CPU this process
    /// may use); each must be online and in this process's affinity mask.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Let both SMT siblings of a core run workers (a node's second threads come after its
    /// cores, before the next node); default one worker per physical core.
    #[arg(long)]
    pub smt: bool,
    /// Physical cores kept for housekeeping (IRQs, the profile's collector) when no CPU is
    /// isolated; fewer on a host too small for two steps (the plan says so).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub housekeeping_cores: usize,
    /// Network device whose NUMA node the steps fill first (e.g. eth0).
    #[arg(long, value_name = "DEV")]
    pub dev: Option<String>,
    /// Measured time of each step (at least 2s, so that its settling can be judged).
    #[arg(long, default_value = "5s", value_parser = units::parse_positive_duration)]
    pub step_duration: Duration,
    /// Warm-up before each step's measured time.
    #[arg(long, default_value = "1s", value_parser = units::parse_duration)]
    pub warmup: Duration,
    /// Scaling efficiency (rate_N / (N × rate_1)) below which a step is the knee, 0 < E <= 1.
    #[arg(long, default_value_t = results::analysis::DEFAULT_EFFICIENCY, value_name = "E")]
    pub efficiency: f64,
    /// Attempts in flight per load core (closed loop; default 32).
    #[arg(long, value_name = "N")]
    pub concurrency_per_core: Option<u32>,
    /// Load workers per load core of each step (a step of N load cores runs N × this many,
    /// spread round-robin over its CPUs, as `connstorm load --load-workers`): more than one
    /// oversubscribes the cores. 1 to 4,096, at most --concurrency-per-core (the closed loop
    /// splits its attempts across the workers) and at most 4,096 workers in the largest step.
    /// Default 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub load_workers_per_core: Option<u16>,
    /// Server workers per server core of each step (a step of N server cores runs N × this
    /// many, each with its own SO_REUSEPORT listener, spread round-robin over its CPUs, as
    /// `connstorm server --server-workers`): more than one oversubscribes the cores; the same
    /// share per core at every step keeps the steps comparable. 1 to 4,096, and at most 4,096
    /// workers in the largest step. Default 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub server_workers_per_core: Option<u16>,
    /// Whether each load worker connects from its own disjoint slice of the ephemeral port range
    /// (`on`: IP_LOCAL_PORT_RANGE, Linux 6.3; older kernels fall back to the shared range with a
    /// note) or all share the whole range (`off`).
    #[arg(long, value_enum, default_value = "on")]
    pub port_slices: loadgen::PortSlices,
    /// A neper test's shape for every step: `tcp_crr -T THREADS -F FLOWS` gives FLOWS / THREADS
    /// attempts in flight per load core, --close fin, --mode hold (docs/neper.md).
    #[arg(long, value_name = "NEPER", conflicts_with_all = ["concurrency_per_core", "close", "mode"])]
    pub like: Option<String>,
    /// The kernel profile of the first and the last step of each shape (see --profile-all).
    #[command(flatten)]
    pub profile: crate::profile::ProfileArgs,
    /// With --profile: profile every step, not only each shape's first and last.
    #[arg(long, requires = "profile")]
    pub profile_all: bool,
    /// Print the plan (each step's server and load CPUs, nodes, what changes) and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: read the topology under this root, e.g. a snapshot of another host
    /// taken with `connstorm tune snapshot-topology`.
    #[arg(long, value_name = "DIR", requires = "dry_run")]
    pub root: Option<PathBuf>,
    /// Also draw conn/s and efficiency against cores to this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Server event engine: auto, io-uring, epoll.
    #[arg(long, default_value = "auto", value_parser = parse_engine)]
    pub engine: server::EngineChoice,
    /// Load side's connect engine: auto, io-uring, epoll.
    #[arg(long, default_value = "auto")]
    pub load_engine: loadgen::LoadEngine,
    /// Client close mode: rst, fin, server. Default: server with --mode http (the server closes
    /// after the response, as HTTP clients see it), else rst.
    #[arg(long, value_enum)]
    pub close: Option<loadgen::CloseMode>,
    /// Server mode (rst, close, greet[:BYTES], hold); default rst.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<server::Mode>,
    /// listen() backlog per listener (capped by net.core.somaxconn).
    #[arg(long, default_value_t = 65535, value_parser = units::parse_backlog)]
    pub backlog: u32,
    /// Each step in two fresh network namespaces joined by veth (needs root): counts must then
    /// agree exactly with the kernel's.
    #[arg(long)]
    pub netns: bool,
    /// Per-attempt connect timeout, at most 1h.
    #[arg(long, default_value = "3s", value_parser = units::parse_positive_duration)]
    pub connect_timeout: Duration,
    /// Label stored in the record and its file name.
    #[arg(long, default_value = "")]
    pub label: String,
    /// Directory for the run record.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Output on stdout: `text` (the step table and knees) or `json` (the run record).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

fn parse_engine(s: &str) -> Result<server::EngineChoice, String> {
    s.parse()
}

fn parse_mode(s: &str) -> Result<server::Mode, String> {
    s.parse()
}
