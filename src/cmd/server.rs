//! `connstorm server`: run the per-core accept server until `--duration` passes or SIGINT/SIGTERM,
//! print one progress line per second on stderr, then the final report (text, or JSON with
//! `--format json`) on stdout.
//!
//! Exit codes: 0 the run ended (by duration or signal) and the report was printed; 1 a run-time
//! fault; 2 bad input (unknown engine/mode, invalid or offline CPU, address in use, port below 1024
//! without privilege, `--engine io-uring` where io_uring cannot run) — nothing is left running.

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use server::{EngineChoice, Mode, Server, ServerConfig, ServerReport, Steer};

use crate::cli::bad_input;
use crate::units::{parse_cpus, parse_positive_duration};

/// A parsed `--cpus` list (an alias, so clap takes the parser's whole `Vec` as one value).
pub type CpuList = Vec<usize>;

/// Options of `connstorm server`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on (every worker binds it with SO_REUSEPORT); port 0 picks a free port,
    /// printed on stderr at start.
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub listen: SocketAddr,
    /// CPUs to run workers on, one pinned worker and one listener each, e.g. `0-3,8`. Default:
    /// every CPU this process may run on.
    #[arg(long, value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
    /// Event engine: `auto` (io_uring when it works here, else epoll with a note why), `io-uring`
    /// (multishot accept, Linux 5.19+; an error where unavailable) or `epoll` (mio).
    #[arg(long, default_value = "auto")]
    pub engine: EngineChoice,
    /// listen(2) backlog per listener (accept queue and SYN queue bound), connections; the kernel
    /// caps it at net.core.somaxconn (4096 by default since Linux 5.4).
    #[arg(long, default_value_t = 65535)]
    pub backlog: u32,
    /// What to do with each accepted connection: `close` (server sends FIN), `rst` (SO_LINGER 0:
    /// RST, no TIME_WAIT), `greet:BYTES` (write BYTES, at most 1 MiB, then close; e.g. `greet:64`)
    /// or `hold` (keep open until the client closes; bounded by RLIMIT_NOFILE).
    #[arg(long, default_value = "close")]
    pub mode: Mode,
    /// Flow steering: `none` (4-tuple hash), `cpu` (flows to the worker on the CPU that processed
    /// their packets: SO_INCOMING_CPU on Linux 6.1+, else a reuseport CBPF program), or force
    /// `incoming-cpu` / `cbpf`.
    #[arg(long, default_value = "none")]
    pub steer: Steer,
    /// Stop after this long, e.g. `30s`, `2m`. Default: run until SIGINT/SIGTERM.
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Final report format on stdout: `text` or `json`.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
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
    let cpus = match args.cpus {
        Some(c) => c,
        None => allowed_cpus().context("reading this process's CPU affinity")?,
    };
    let stop = crate::signals::stop_flag().context("installing SIGINT/SIGTERM handlers")?;
    // The library leaves the process-wide fd limit alone; a server wants all of it.
    let (_, nofile) =
        server::rlimit::raise_nofile().context("raising RLIMIT_NOFILE to its hard limit")?;
    let cfg = ServerConfig {
        listen: args.listen,
        cpus,
        engine: args.engine,
        backlog: args.backlog,
        mode: args.mode,
        steer: args.steer,
    };
    let srv = Server::start(cfg).map_err(|e| {
        if e.is_bad_input() {
            bad_input(e.to_string())
        } else {
            anyhow::Error::new(e).context("starting the server")
        }
    })?;
    let mut err = std::io::stderr().lock();
    if let Some(why) = srv.fallback_reason() {
        let _ = writeln!(
            err,
            "connstorm server: io_uring unavailable, using epoll: {why}"
        );
    }
    let _ = writeln!(
        err,
        "connstorm server: listening on {} (engine {}, {} workers on CPUs {:?}, mode {}, steering {}, RLIMIT_NOFILE {nofile})",
        srv.local_addr(),
        srv.engine(),
        srv.cpus().len(),
        srv.cpus(),
        args.mode,
        srv.steering()
    );
    drop(err);
    let started = Instant::now();
    let mut last = srv.stats();
    let mut next_tick = started + Duration::from_secs(1);
    let interrupted = loop {
        if crate::signals::stopped(&stop) {
            break true;
        }
        let now = Instant::now();
        if args.duration.is_some_and(|d| now >= started + d) {
            break false;
        }
        if now >= next_tick {
            let cur = srv.stats();
            let per: Vec<u64> = cur
                .accepted_per_worker
                .iter()
                .zip(&last.accepted_per_worker)
                .map(|(c, l)| c - l)
                .collect();
            let _ = writeln!(
                std::io::stderr(),
                "t={:>4}s accepts/s {:>9} (per worker min {} max {}) total {} errors {}",
                started.elapsed().as_secs(),
                per.iter().sum::<u64>(),
                per.iter().min().copied().unwrap_or(0),
                per.iter().max().copied().unwrap_or(0),
                cur.accepted(),
                cur.errors_total
            );
            last = cur;
            next_tick += Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut report = srv.stop();
    report.interrupted = interrupted;
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &report).context("writing the JSON report")?;
            writeln!(out)?;
        }
        Format::Text => write_text(&mut out, &report)?,
    }
    out.flush()?;
    Ok(0)
}

fn write_text(out: &mut impl Write, r: &ServerReport) -> std::io::Result<()> {
    let secs = r.wall_time_secs().max(1e-9);
    writeln!(
        out,
        "engine {}{}, steering {}, mode {}, listen {}, backlog {}{}",
        r.engine,
        r.ring_setup
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default(),
        r.steering,
        r.mode,
        r.listen,
        r.backlog,
        if r.interrupted {
            ", stopped by signal"
        } else {
            ""
        }
    )?;
    if let Some(why) = &r.fallback_reason {
        writeln!(out, "fell back to epoll: {why}")?;
    }
    writeln!(
        out,
        "wall time {secs:.3} s, accepted {} ({:.1}/s)",
        r.accepted(),
        r.accepted() as f64 / secs
    )?;
    writeln!(
        out,
        "{:>5} {:>12} {:>12} {:>9} {:>9} {:>8}  errors",
        "cpu", "accepted", "accepts/s", "user_s", "sys_s", "emfile"
    )?;
    for w in &r.workers {
        let errs: Vec<String> = w.errors.iter().map(|(k, v)| format!("{k}={v}")).collect();
        writeln!(
            out,
            "{:>5} {:>12} {:>12.1} {:>9.3} {:>9.3} {:>8}  {}",
            w.cpu,
            w.accepted,
            w.accepted as f64 / secs,
            w.cpu_user_ns as f64 / 1e9,
            w.cpu_sys_ns as f64 / 1e9,
            w.emfile_backoffs,
            if errs.is_empty() {
                "-".to_string()
            } else {
                errs.join(" ")
            }
        )?;
        if w.left_in_queue > 0 {
            writeln!(
                out,
                "      {} connections left in the accept queue at stop (reset by the kernel)",
                w.left_in_queue
            )?;
        }
    }
    Ok(())
}

fn allowed_cpus() -> anyhow::Result<Vec<usize>> {
    Ok(tuning::topology::allowed_cpus(std::path::Path::new("/"))?)
}
