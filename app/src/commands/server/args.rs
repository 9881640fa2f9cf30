//! The options of `connstorm server` and their value parsers (bad input refused here: unknown
//! engine/mode, an invalid, empty, offline or not-allowed CPU list, a backlog outside
//! 1..=2147483647, an address that does not parse or has a port above 65535).

use std::net::SocketAddr;
use std::time::Duration;

use common::units::{parse_backlog, parse_cpus, parse_listen, parse_positive_duration};
use server::{EngineChoice, Mode, Steer};

use crate::commands::metrics::MetricsArgs;
use crate::commands::Format;

/// A switch given as `on` or `off` (`server --tls-resume`, `bench --accept-wait`): each option's
/// own help says what its `on` and `off` do. The variants carry no doc comment on purpose: clap
/// would print it under every option that takes the type (bench's `--accept-wait` listed
/// `off: Not offered: every handshake full`, the words of `--tls-resume`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[allow(missing_docs)]
pub enum OnOff {
    On,
    Off,
}

/// A parsed `--cpus` list (an alias, so clap takes the parser's whole `Vec` as one value).
pub type CpuList = Vec<usize>;

/// The examples after `connstorm server --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # Every usable CPU on 127.0.0.1:9000 until Ctrl-C, then the report
  connstorm server
  # All addresses, CPUs 0-3, each flow to the worker on the CPU that received it, for 60 s
  connstorm server --listen 0.0.0.0:9000 --cpus 0-3 --steer cpu --duration 60s
  # HTTPS (self-signed, written for the clients' --ca) with a run record under ./runs
  connstorm server --tls --mode http --cert-out server.pem --out runs";

/// Options of `connstorm server`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Address to listen on, IP:PORT (every worker binds it with SO_REUSEPORT); port 0 picks a
    /// free port, printed on stderr at start.
    #[arg(long, default_value = "127.0.0.1:9000", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// CPUs to run workers on, one pinned worker and one listener each, in the kernel's cpulist
    /// syntax: `0-3,8`, `0-7:1/2` (every other CPU), `1-N` (N = the last possible CPU), `all`.
    /// Every CPU must be online and allowed (taskset/cpuset). Default: every CPU this process may
    /// run on.
    #[arg(long, value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
    /// How many server workers, each with its own SO_REUSEPORT listener and event loop, spread
    /// round-robin over --cpus (worker w on the w-th CPU of the list, wrapping): more workers
    /// than CPUs oversubscribes them (e.g. `--server-workers 16 --cpus 0-1`, a test of
    /// correctness at many workers on few CPUs; rates then measure the sharing, not the host).
    /// 1 to 4,096, at least one per CPU. Default: one per CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub server_workers: Option<u16>,
    /// Event engine: `auto` (io_uring when it works here, else epoll with a note why), `io-uring`
    /// (multishot accept, Linux 5.19+; an error where unavailable) or `epoll` (mio).
    #[arg(long, default_value = "auto")]
    pub engine: EngineChoice,
    /// listen(2) backlog per listener (accept queue and SYN queue bound), connections, 1 to
    /// 2147483647; the kernel caps it at net.core.somaxconn (4096 by default since Linux 5.4).
    #[arg(long, default_value_t = 65535, value_parser = parse_backlog)]
    pub backlog: u32,
    /// What to do with each accepted connection: `close` (server sends FIN), `rst` (SO_LINGER 0:
    /// RST, no TIME_WAIT), `greet:BYTES` (write BYTES, at most 1 MiB, then close; e.g. `greet:64`)
    /// `hold` (keep open until the client closes; bounded by RLIMIT_NOFILE) or `http` (read a
    /// request head, answer `204 No Content` or, with --http-response-bytes, `200 OK` with a
    /// body, close; a connection is served when the whole response is written).
    #[arg(long, default_value = "close")]
    pub mode: Mode,
    /// Flow steering: `none` (4-tuple hash), `cpu` (flows to the worker on the CPU that processed
    /// their packets: SO_INCOMING_CPU on Linux 6.1+, else a reuseport CBPF program), or force
    /// `incoming-cpu` / `cbpf`. With steering the report gives the share of connections
    /// accepted on the CPU that processed their packets (SO_INCOMING_CPU read on 1 accepted
    /// connection in 16 per worker; the io_uring engine then accepts plain descriptors, not
    /// direct ones).
    #[arg(long, default_value = "none")]
    pub steer: Steer,
    /// With `--mode http`: answer `200 OK` with a body of this many bytes (at most 1 MiB; plain
    /// bytes or `64K`, `1M`) instead of `204 No Content`.
    #[arg(long, value_name = "BYTES", value_parser = parse_response_bytes)]
    pub http_response_bytes: Option<u32>,
    /// A TLS handshake on every connection (rustls, `aws-lc-rs` provider; TLS 1.3 and 1.2, session
    /// tickets and a session-ID cache for resumption) before the mode's work: `close` (close_notify,
    /// close) or `http` (the request and response over TLS), on both engines. Certificate: --cert/--key, else a self-signed one generated
    /// at start for localhost, 127.0.0.1 and ::1.
    #[arg(long)]
    pub tls: bool,
    /// With --tls: the certificate chain, PEM (leaf first). Needs --key.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub cert: Option<std::path::PathBuf>,
    /// With --tls: the private key of --cert, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub key: Option<std::path::PathBuf>,
    /// With --tls: `on` offers resumption (TLS 1.3/1.2 session tickets and a TLS 1.2 session-ID
    /// cache), `off` offers none: no ticket is sent and no session kept, so every handshake is
    /// full whatever the client asks (to measure full handshakes with clients that resume when
    /// they can, as h2load does).
    #[arg(
        long,
        value_enum,
        value_name = "on|off",
        default_value = "on",
        requires = "tls"
    )]
    pub tls_resume: OnOff,
    /// With --tls: the key exchange groups the server accepts, in its order of preference,
    /// comma-separated (`x25519`, `p256`, `p384`, `X25519MLKEM768`, ...: the names of `load
    /// --tls-groups`); a client that offers none of them fails its handshake. Default: the
    /// aws-lc-rs provider's list (X25519, P-256, P-384, X25519MLKEM768).
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "tls")]
    pub tls_groups: Vec<String>,
    /// With --tls: write the certificate (PEM) the server uses to this file, e.g. the generated
    /// self-signed one, for a client's `--ca`.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub cert_out: Option<std::path::PathBuf>,
    /// Stop after this long, e.g. `30s`, `2m`. Default: run until SIGINT/SIGTERM.
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Final report format on stdout: `text` or `json`.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also write the run as a run record (JSON, the bench schema with role `server`: accepts
    /// per worker, this namespace's counter deltas) into this directory, for `report` and
    /// `merge` (which checks the accepts against the load generators' handshakes).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Prometheus `/metrics`.
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// The kernel profile of the server CPUs from start to stop.
    #[command(flatten)]
    pub profile: crate::profile::ProfileArgs,
}

/// `--http-response-bytes`: at most [`server::config::MAX_GREET_BYTES`].
fn parse_response_bytes(s: &str) -> Result<u32, String> {
    common::units::parse_bytes_at_most(s, u64::from(server::config::MAX_GREET_BYTES))
        .map(|v| v as u32)
}
