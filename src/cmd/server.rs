//! `connstorm server`: run the per-core accept server until `--duration` passes or SIGINT/SIGTERM,
//! print one progress line per second on stderr, then the final report (text, or JSON with
//! `--format json`) on stdout.
//!
//! Exit codes (the table of every command: 0 ok, 1 run-time failure, 2 bad input, 3 nothing
//! measured, 4 strict check failed, 128+signo interrupted):
//! - 0: the run ended and the report was printed, by `--duration` **or by SIGINT/SIGTERM** — a
//!   signal is how a server without `--duration` is meant to end, so it is not an interruption
//!   here (the report says `stopped by signal` / `"interrupted": true`); a run that accepted
//!   nothing is a true report of zero, also 0 (a server measures what it was sent);
//! - 1: a run-time fault (a worker could not set up its ring or epoll, a write of the report
//!   failed);
//! - 2: bad input, refused before any listener or thread exists: unknown engine/mode, a
//!   `--metrics` address that does not parse or cannot be bound (in use), an invalid,
//!   empty, offline or not-allowed CPU list (the usable CPUs are listed), a backlog outside
//!   1..=2147483647, an address that does not parse or has a port above 65535, an address in use,
//!   a port below 1024 without privilege, `--engine io-uring` where io_uring cannot run;
//! - 128+signo (130, 143): a second SIGINT/SIGTERM (two quick Ctrl-Cs): the report and the
//!   `--out` record are still written, then this code says the run was cut short.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use ::bench::standalone;
use anyhow::Context;
use server::render::ReportText;
use server::{EngineChoice, Mode, Server, ServerConfig, Steer};

use crate::error::bad_input;
use crate::units::{parse_backlog, parse_cpus, parse_listen, parse_positive_duration};

/// A parsed `--cpus` list (an alias, so clap takes the parser's whole `Vec` as one value).
pub type CpuList = Vec<usize>;

/// Options of `connstorm server`.
#[derive(Debug, clap::Args)]
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
    /// `incoming-cpu` / `cbpf`.
    #[arg(long, default_value = "none")]
    pub steer: Steer,
    /// With `--mode http`: answer `200 OK` with a body of this many bytes (at most 1 MiB)
    /// instead of `204 No Content`.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(0..=i64::from(server::config::MAX_GREET_BYTES)))]
    pub http_response_bytes: Option<u32>,
    /// A TLS handshake on every connection (rustls, `ring` provider; TLS 1.3 and 1.2, session
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
    pub metrics: crate::cmd::metrics::MetricsArgs,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable table.
    Text,
    /// The `ServerReport` as JSON.
    Json,
}

/// Runs `connstorm server`.
///
/// # Errors
/// Bad input (exit 2, see the module docs) or a run-time fault (exit 1).
pub fn run(args: Args) -> anyhow::Result<i32> {
    let mode = match (args.mode, args.http_response_bytes) {
        (Mode::Http { .. }, Some(body_bytes)) => Mode::Http { body_bytes },
        (m, None) => m,
        (m, Some(_)) => {
            return Err(bad_input(format!(
            "--http-response-bytes needs --mode http (the mode is {m}): add --mode http or drop it"
        )))
        }
    };
    let cpus = match args.cpus {
        Some(c) => c,
        None => common::cpulist::usable(),
    };
    // As `load` and `bench` do: an unusable CPU is refused naming the option.
    common::cpulist::check_option("--cpus", &cpus).map_err(bad_input)?;
    let tls = if args.tls {
        let t = server::tls::server_config(args.cert.as_deref(), args.key.as_deref())
            .map_err(|e| bad_input(e.to_string()))?;
        if let Some(path) = &args.cert_out {
            // `--cert-out key.pem` would replace the private key with the certificate.
            let inputs: Vec<(&str, &std::path::Path)> =
                [("--cert file", &args.cert), ("--key file", &args.key)]
                    .into_iter()
                    .filter_map(|(what, p)| Some((what, p.as_deref()?)))
                    .collect();
            common::files::refuse_overwriting_inputs("--cert-out", path, &inputs)?;
            std::fs::write(path, &t.cert_pem).map_err(|e| {
                bad_input(format!(
                    "--cert-out {}: cannot write it ({e}): give a writable path",
                    path.display()
                ))
            })?;
        }
        Some(t)
    } else {
        None
    };
    let stop = crate::signals::stop_flag().context("installing SIGINT/SIGTERM handlers")?;
    // The library leaves the process-wide fd limit alone; a server wants all of it.
    let (_, nofile) =
        server::rlimit::raise_nofile().context("raising RLIMIT_NOFILE to its hard limit")?;
    if let Some(dir) = &args.out {
        crate::bench::record::check_writable_dir(dir)?;
    }
    // Bound before the server: an address in use is bad input before any listener exists.
    let endpoint = crate::cmd::metrics::start(&args.metrics, "server")?;
    let cfg = ServerConfig {
        listen: args.listen,
        cpus,
        engine: args.engine,
        backlog: args.backlog,
        mode,
        steer: args.steer,
        tls,
    };
    let srv = Server::start(cfg).map_err(|e| {
        if e.is_bad_input() {
            bad_input(e.to_string())
        } else {
            anyhow::Error::new(e).context("starting the server")
        }
    })?;
    let metrics = endpoint.as_ref().map(|ep| {
        let m = server::metrics::ServerMetrics::new(&srv);
        ep.register(Box::new(std::sync::Arc::clone(&m)));
        m
    });
    let mut err = std::io::stderr().lock();
    if let Some(why) = srv.fallback_reason() {
        let _ = writeln!(
            err,
            "connstorm server: io_uring unavailable, using epoll: {why}"
        );
    }
    let _ = writeln!(
        err,
        "connstorm server: listening on {} (engine {}, {} workers on CPUs {:?}, mode {}, steering {}, RLIMIT_NOFILE {})",
        srv.local_addr(),
        srv.engine(),
        srv.cpus().len(),
        srv.cpus(),
        mode,
        srv.steering(),
        results::numfmt::count(nofile)
    );
    drop(err);
    let started_wall = std::time::SystemTime::now();
    let counters_before = args
        .out
        .as_ref()
        .and_then(|_| standalone::counters(&mut |w| eprintln!("connstorm server: warning: {w}")));
    let interrupted = standalone::server::watch(&srv, args.duration, &stop, &mut |l| {
        crate::output::note(l);
    });
    let mut report = srv.stop();
    report.interrupted = interrupted;
    if let Some(m) = &metrics {
        m.finish();
    }
    if let Some(dir) = &args.out {
        let counters = standalone::delta_since(counters_before.as_ref());
        let path = standalone::server::record(
            &report,
            started_wall,
            counters,
            // One signal is how a server without --duration is meant to end (see the exit
            // codes): its counts are whole. Two quick ones cut it short (exit 128+N), and the
            // record says so as the exit code does.
            crate::signals::hurry(),
            &crate::bench::record::BUILD,
            crate::version::build_info(),
        )
        .write_atomic(dir)
        .context("writing the server record (--out)")?;
        eprintln!("connstorm server: record written to {}", path.display());
    }
    let mut out = std::io::stdout().lock();
    let written = (|| -> std::io::Result<()> {
        match args.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            }
            Format::Text => write!(out, "{}", ReportText(&report))?,
        }
        out.flush()
    })();
    match written {
        // The reader went away (`| head`): the server ran to its end.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.context("writing the server report to stdout failed")?,
    }
    crate::cmd::metrics::end(endpoint, &args.metrics);
    Ok(0)
}
