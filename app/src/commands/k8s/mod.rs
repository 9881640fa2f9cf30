//! `connstorm k8s render`: write the Kubernetes manifests of a multi-host run — N load
//! generators as an Indexed Job (segment `i/N` from the job-completion index, one common start
//! time), the accept server as a Deployment + Service (optionally on the host network), and a
//! shared volume for the records — from the templates in `deploy/kubernetes/templates/`
//! ([`manifests`] fills and checks them).
//!
//! Exit codes: 0 written; 1 the files cannot be written; 2 bad input (refused before any file is
//! written).

use std::path::PathBuf;
use std::time::SystemTime;

pub mod manifests;

use common::units::{parse_duration, parse_positive_duration, parse_rate};
use manifests::{self as k8s, dns_label, parse_host_port};

/// `connstorm k8s` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write the manifests of a multi-host run (see deploy/kubernetes/README.md).
    Render(RenderArgs),
}

/// The examples after `connstorm k8s render --help` and `connstorm k8s --help` (it has no other
/// subcommand), and in their man pages.
pub const RENDER_EXAMPLES: &str = "\
Examples:
  # 8 generators, 400k connections/s in all, against the server's Service; then kubectl apply -f k8s
  connstorm k8s render --clients 8 --target connstorm-server:9000 --rate 400k/s --out k8s
  # The server on the node's network (no pod veth, NAT or conntrack in the path)
  connstorm k8s render --clients 4 --target 192.0.2.10:9000 --host-network --rate 100k/s --out k8s";

/// Options of `connstorm k8s render`.
#[derive(Debug, clap::Args)]
#[command(after_help = RENDER_EXAMPLES)]
pub struct RenderArgs {
    /// Load generators (pods of the Indexed Job; pod i runs segment i/N, 0-based), 1 to 10000.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub clients: u32,
    /// The server as the generators reach it, HOST:PORT: the Service
    /// (`connstorm-server.NAMESPACE.svc:9000`), a node address with --host-network, or a server
    /// outside the cluster. The name is resolved in the pods, not here.
    #[arg(long, value_parser = parse_host_port)]
    pub target: String,
    /// Open loop: the whole fleet's rate, e.g. `200k/s` (each generator takes its share).
    #[arg(long, value_parser = rate_text, conflicts_with = "concurrency")]
    pub rate: Option<String>,
    /// Closed loop: the whole fleet's connections in flight (each generator takes its share).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: Option<u32>,
    /// Measured part of the run, e.g. `60s`.
    #[arg(long, default_value = "60s", value_parser = duration_text(true))]
    pub duration: String,
    /// Warm-up before the measured part, e.g. `5s`.
    #[arg(long, default_value = "5s", value_parser = duration_text(false))]
    pub warmup: String,
    /// When every generator starts its schedule: an RFC 3339 UTC time. Default: 5 minutes after
    /// rendering (time to build, push and apply); apply before it passes, or the pods refuse it.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Container image (built from deploy/kubernetes/Dockerfile).
    #[arg(long, default_value = concat!("connstorm:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// Namespace for every object.
    #[arg(long, default_value = "connstorm", value_parser = dns_label)]
    pub namespace: String,
    /// Run the server on the node's network (`hostNetwork: true`): no pod veth, NAT or
    /// conntrack in the path, so it measures the node.
    #[arg(long)]
    pub host_network: bool,
    /// Port the server listens on.
    #[arg(long, default_value_t = 9000, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// Whole CPUs of the server pod (requests = limits: Guaranteed QoS, exclusive cores under
    /// the static CPU-manager policy).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub server_cpus: u32,
    /// Whole CPUs of each generator pod.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub load_cpus: u32,
    /// Memory of each pod (requests = limits), a Kubernetes quantity.
    #[arg(long, default_value = "1Gi")]
    pub memory: String,
    /// Directory to write the manifests into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

fn rate_text(s: &str) -> Result<String, String> {
    parse_rate(s).map(|_| s.trim().to_string())
}

fn duration_text(
    positive: bool,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        if positive {
            parse_positive_duration(s)?;
        } else {
            parse_duration(s)?;
        }
        Ok(s.trim().to_string())
    }
}

/// Runs `connstorm k8s`.
///
/// # Errors
/// Bad input (exit 2) for a start time in the past or a memory quantity that is not one;
/// exit 1 when a file cannot be written.
pub fn run(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::Render(a) => render_cmd(&a),
    }
}

fn render_cmd(a: &RenderArgs) -> anyhow::Result<i32> {
    common::files::check_output_dir("--out", &a.out, "the manifests")?;
    let start_at = k8s::start_time(a.start_at.as_deref(), SystemTime::now())?;
    let options = k8s::Options {
        clients: a.clients,
        target: a.target.clone(),
        rate: a.rate.clone(),
        concurrency: a.concurrency,
        duration: a.duration.clone(),
        warmup: a.warmup.clone(),
        image: a.image.clone(),
        namespace: a.namespace.clone(),
        host_network: a.host_network,
        port: a.port,
        server_cpus: a.server_cpus,
        load_cpus: a.load_cpus,
        memory: a.memory.clone(),
    };
    k8s::check(&options)?;
    let files = k8s::render(&options, &start_at);
    k8s::write(&files, &a.out)?;
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    eprintln!(
        "connstorm k8s: wrote {} into {}; generators start at {start_at}: apply before then (kubectl apply -f {})",
        names.join(", "),
        a.out.display(),
        a.out.display()
    );
    Ok(0)
}
