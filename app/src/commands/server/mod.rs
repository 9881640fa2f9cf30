//! `connstorm server`: run the per-core accept server until `--duration` passes or
//! SIGINT/SIGTERM. Its options ([`args`]; bad input refused by their parsers: unknown
//! engine/mode, an invalid, empty, offline or not-allowed CPU list, a backlog outside
//! 1..=2147483647, an address that does not parse or has a port above 65535), then [`run`]: the
//! TLS certificate (and `--cert-out`), the server started, one progress line per second on
//! stderr until `--duration` or a signal ([`watch`]), the `--out` record ([`record`]) and the
//! final report on stdout.
//!
//! Exit codes (the table of every command: 0 ok, 1 run-time failure, 2 bad input, 3 nothing
//! measured, 4 strict check failed, 128+signo interrupted):
//! - 0: the run ended and the report was printed, by `--duration` **or by SIGINT/SIGTERM** — a
//!   signal is how a server without `--duration` is meant to end, so it is not an interruption
//!   here (the report says `stopped by signal` / `"interrupted": true`); a run that accepted
//!   nothing is a true report of zero, also 0 (a server measures what it was sent);
//! - 1: a run-time fault (a worker could not set up its ring or epoll, a write of the report
//!   failed);
//! - 2: bad input, refused before any listener or thread exists: a `--metrics` address that
//!   cannot be bound (in use), an unusable CPU (the usable CPUs are listed), an address in use,
//!   a port below 1024 without privilege, `--engine io-uring` where io_uring cannot run, a bad
//!   certificate or key;
//! - 128+signo (130, 143): a second SIGINT/SIGTERM (two quick Ctrl-Cs): the report and the
//!   `--out` record are still written, then this code says the run was cut short.

pub mod args;
pub mod record;
pub mod watch;

pub use args::Args;

use std::io::Write as _;
use std::path::Path;

use anyhow::Context;
use results::record::BuildInfo;
use server::render::ReportText;
use server::{Mode, Server, ServerConfig};

use super::metrics;
use super::Format;
use crate::record::Build;
use args::OnOff;

/// The server's TLS configuration (`--tls` with `--cert`/`--key`, both or neither: a
/// self-signed certificate; `--tls-resume`); writes its certificate to `--cert-out` when asked.
///
/// # Errors
/// Bad input for unusable certificate or key files, and a `--cert-out` that is one of them or
/// cannot be written.
fn tls_config(f: &Args) -> anyhow::Result<server::tls::TlsServer> {
    let resumption = f.tls_resume == OnOff::On;
    let groups = (!f.tls_groups.is_empty())
        .then(|| loadgen::tls::kx_groups(&f.tls_groups))
        .transpose()
        .map_err(crate::bad_input)?;
    let t = server::tls::server_config_with_groups(
        f.cert.as_deref(),
        f.key.as_deref(),
        resumption,
        groups,
    )
    .map_err(|e| crate::bad_input(e.to_string()))?;
    if let Some(path) = &f.cert_out {
        // `--cert-out key.pem` would replace the private key with the certificate.
        let inputs: Vec<(&str, &Path)> = [("--cert file", &f.cert), ("--key file", &f.key)]
            .into_iter()
            .filter_map(|(what, p)| Some((what, p.as_deref()?)))
            .collect();
        common::files::check_output_file("--cert-out", path)?;
        common::files::refuse_overwriting_inputs("--cert-out", path, &inputs)?;
        write_cert_out(path, &t.cert_pem)?;
    }
    Ok(t)
}

/// Writes the certificate to `--cert-out`. The file is opened non-blocking: a FIFO that no
/// process reads (`mkfifo cert.pem`) then fails at once with ENXIO, where a plain open blocked the
/// server before it listened, forever and past SIGINT; a pipe with a reader (a shell's
/// process substitution) and a regular file are written as before (the descriptor is made
/// blocking again before the write).
///
/// # Errors
/// Bad input naming `--cert-out` and the fix.
fn write_cert_out(path: &Path, pem: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let cannot = |e: std::io::Error| {
        let why = if e.raw_os_error() == Some(libc::ENXIO) {
            "a FIFO that no process reads: writing it would block the server before it listens"
                .to_string()
        } else {
            e.to_string()
        };
        crate::bad_input(format!(
            "--cert-out {}: cannot write it ({why}): give a writable path",
            path.display()
        ))
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    nix::fcntl::fcntl(
        &file,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
    )
    .map_err(|e| cannot(e.into()))?;
    file.write_all(pem.as_bytes()).map_err(cannot)
}

/// Runs `connstorm server` and returns the exit code (see the module docs); `build`: the
/// binary's version and build, for the record.
///
/// # Errors
/// Bad input (exit 2, see the module docs) or a run-time fault (exit 1).
pub fn run(args: Args, build: (Build, BuildInfo)) -> anyhow::Result<i32> {
    // Refused before any listener exists when this process may not profile.
    let profile = args.profile.check()?;
    let mode = match (args.mode, args.http_response_bytes) {
        (Mode::Http { .. }, Some(body_bytes)) => Mode::Http { body_bytes },
        (m, None) => m,
        (m, Some(_)) => {
            return Err(crate::bad_input(format!(
            "--http-response-bytes needs --mode http (the mode is {m}): add --mode http or drop it"
        )))
        }
    };
    let mut cfg = ServerConfig {
        listen: args.listen,
        cpus: args.cpus.clone().unwrap_or_else(common::cpulist::usable),
        workers: args.server_workers.map_or(0, usize::from),
        engine: args.engine,
        backlog: args.backlog,
        mode,
        steer: args.steer,
        tls: None,
    };
    // As `load` and `bench` do: an unusable CPU is refused naming the option.
    common::cpulist::check_option("--cpus", &cfg.cpus).map_err(crate::bad_input)?;
    if cfg.workers != 0 && cfg.workers < cfg.cpus.len() {
        return Err(crate::bad_input(format!(
            "--server-workers: {} server workers on {} CPUs leaves CPUs without a worker: give at least one worker per CPU ({}), or fewer --cpus",
            cfg.workers,
            cfg.cpus.len(),
            cfg.cpus.len()
        )));
    }
    if args.tls {
        cfg.tls = Some(tls_config(&args)?);
    }
    let stop = crate::signals::stop_flag().context("installing SIGINT/SIGTERM handlers")?;
    // The library leaves the process-wide fd limit alone; a server wants all of it.
    let (_, nofile) =
        server::rlimit::raise_nofile().context("raising RLIMIT_NOFILE to its hard limit")?;
    if let Some(dir) = &args.out {
        crate::record::check_writable_dir(dir)?;
    }
    // Bound before the server: an address in use is bad input before any listener exists.
    let endpoint = metrics::start(&args.metrics, "server")?;
    let cfg_cpus = cfg.cpus.clone();
    let srv = Server::start(cfg).map_err(|e| {
        if let server::ServerError::AddrInUse { addr } = &e {
            // Who holds the port: a listener, or a connection whose local port it is (an
            // outgoing one given a port from the ephemeral range).
            let io = tuning::sysctl::ProcSys { root: "/".into() };
            if let Some(why) = tuning::advice::PortHolders::read(*addr, &io)
                .ok()
                .and_then(|h| tuning::advice::port_in_use(*addr, &h))
            {
                return crate::bad_input(why);
            }
        }
        if e.is_bad_input() {
            crate::bad_input(e.to_string())
        } else {
            anyhow::Error::new(e).context("starting the server")
        }
    })?;
    let metrics = endpoint.as_ref().map(|ep| {
        let m = server::metrics::ServerMetrics::new(&srv);
        ep.register(Box::new(std::sync::Arc::clone(&m)));
        m
    });
    if let Some(why) = srv.fallback_reason() {
        eprintln!("connstorm server: io_uring unavailable, using epoll: {why}");
    }
    eprintln!(
        "connstorm server: listening on {} (engine {}, {} on CPUs {:?}, mode {}{}, steering {}, RLIMIT_NOFILE {})",
        srv.local_addr(),
        srv.engine(),
        match srv.cpus().len() {
            1 => "1 worker".to_string(),
            n if n > cfg_cpus.len() => format!("{n} workers round-robin"),
            n => format!("{n} workers"),
        },
        cfg_cpus,
        mode,
        match (args.tls, args.tls_resume) {
            (true, OnOff::On) => " over TLS",
            (true, OnOff::Off) => " over TLS (resumption off: every handshake full)",
            (false, _) => "",
        },
        srv.steering(),
        results::numfmt::count(nofile)
    );
    let started_wall = std::time::SystemTime::now();
    let counters_before = args.out.as_ref().and_then(|_| {
        crate::record::counters(&mut |w| eprintln!("connstorm server: warning: {w}"))
    });
    // A server has no warm-up: the profile covers its CPUs from here to the stop.
    let armed = profile.map(|p| {
        crate::profile::Armed::arm(p.config(&[("server", srv.cpus())]), Default::default())
    });
    let watched = watch::watch(&srv, args.duration, &stop, &mut |l| {
        crate::output::note(l);
    });
    let profiled = armed.map(crate::profile::Armed::finish);
    let mut report = srv.stop();
    let profiled = match profiled {
        Some(Ok(Some(p))) => Some(crate::profile::to_record(&p)),
        Some(Ok(None)) => None,
        Some(Err(e)) => {
            eprintln!("connstorm server: warning: no profile: {e}");
            None
        }
        None => None,
    };
    report.interrupted = watched.stopped;
    if let Some(l) = watch::closing_line(&watched, watched.started.elapsed(), report.accepted()) {
        crate::output::note(&l);
    }
    if let Some(m) = &metrics {
        m.finish();
    }
    if let Some(dir) = &args.out {
        let counters = crate::record::delta_since(counters_before.as_ref());
        let mut rec = record::record(
            &report,
            started_wall,
            counters,
            // One signal is how a server without --duration is meant to end (see the exit
            // codes): its counts are whole. Two quick ones cut it short (exit 128+N), and the
            // record says so as the exit code does.
            crate::signals::hurry(),
            args.tls.then_some(args.tls_resume == OnOff::On),
            &build.0,
            build.1,
        );
        if let Some(p) = rec.phases.first_mut() {
            p.profile = profiled.clone();
        }
        let path = rec
            .write_atomic(dir)
            .context("writing the server record (--out)")?;
        eprintln!("connstorm server: record written to {}", path.display());
    }
    super::write_report("writing the server report to stdout failed", |out| {
        if args.format == Format::Json {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)
        } else {
            write!(out, "{}", ReportText(&report))
        }
    })?;
    if let Some(p) = &profiled {
        let text = results::render::profile_text("the server", p);
        if args.format == Format::Json {
            eprint!("{text}");
        } else {
            crate::output::out(&text);
        }
    }
    metrics::end(endpoint, &args.metrics);
    Ok(0)
}
