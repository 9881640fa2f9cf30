//! `connstorm load`: open connections to one or more servers at an intended rate (open loop) or a
//! fixed concurrency (closed loop) and report connections per minute and handshake latency.
//!
//! Exit codes: 0 the run completed (some attempts may have failed: see the report); 1 the run
//! could not run; 2 bad input (including a CPU this process may not use); 3 the run completed
//! but no attempt of the whole run succeeded: every attempt failed (e.g. nothing listens on the
//! target) or none could start (every scheduled start was dropped).

use std::io::{IsTerminal, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use loadgen::{
    Arrival, CloseMode, HistogramSummary, LoadConfig, LoadError, LoadReport, Pattern, TimelineRow,
};

use crate::cli::bad_input;
use crate::units::{parse_cpus, parse_duration, parse_positive_duration, parse_rate};

/// Largest number of addresses one `--source` range may name.
const MAX_SOURCES: u128 = 65_536;

/// Options of `connstorm load`.
///
/// Exit codes: 0 completed; 1 could not run; 2 bad input; 3 completed but every attempt failed
/// or none could start.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Servers to connect to: HOST:PORT, comma-separated (IPv6 as `[::1]:9000`); attempts go
    /// round-robin over them.
    #[arg(long, value_delimiter = ',', required = true, value_parser = parse_target)]
    pub target: Vec<SocketAddr>,
    /// Open loop: offered rate for the whole run, e.g. `20k/s`, `2000/s`, `1M/min`; attempts start
    /// at scheduled times whatever the server does, and latency counts from the scheduled time.
    /// Default 1000/s when neither --rate nor --concurrency is given.
    #[arg(long, value_parser = parse_rate, conflicts_with = "concurrency", allow_hyphen_values = true)]
    pub rate: Option<f64>,
    /// Closed loop: this many attempts always in flight (split over the workers; >= 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: Option<u32>,
    /// Measured part of the run, e.g. `30s`, `2m`.
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration)]
    pub duration: Duration,
    /// Run before the measured part (excluded from the measured numbers), e.g. `2s`; `0s` for none.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// CPUs for the workers, one pinned worker each, e.g. `1-3`. Default: every CPU this process
    /// may run on (keep the server on other CPUs when it runs on the same host).
    #[arg(long, value_parser = |s: &str| parse_cpus(s).map(CpuList))]
    pub cpus: Option<CpuList>,
    /// How the client ends each connection: `rst` (SO_LINGER 0, no TIME_WAIT), `fin` (client
    /// closes first; TIME_WAIT on the client limits ports), `server` (wait for the server's FIN).
    #[arg(long, value_enum, default_value = "rst")]
    pub close: CloseArg,
    /// Source addresses, used round-robin with IP_BIND_ADDRESS_NO_PORT: a list and/or ranges, e.g.
    /// `127.0.0.2-127.0.0.250` (any 127.0.0.0/8 address works on loopback). Default: the kernel
    /// chooses.
    #[arg(long, value_delimiter = ',', value_parser = parse_source_item)]
    pub source: Vec<Sources>,
    /// How long one attempt may wait for its handshake (counted from socket()); past it the
    /// attempt counts as ETIMEDOUT. Also bounds the drain at the end of the run.
    #[arg(long, default_value = "3s", value_parser = parse_positive_duration)]
    pub connect_timeout: Duration,
    /// After the handshake, read this many bytes (a greeting server) and report first-byte
    /// latency (scheduled start → N bytes read). Default: read nothing.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub expect_bytes: Option<u32>,
    /// Open-loop spacing of scheduled starts: `uniform` (evenly spaced) or `poisson`
    /// (exponential gaps, same mean).
    #[arg(long, value_enum, default_value = "uniform")]
    pub arrival: ArrivalArg,
    /// Open loop: at most this many attempts in flight for the whole run (each holds a file
    /// descriptor); a start that finds none free waits, and is dropped after --connect-timeout.
    /// Default: rate x connect timeout, at most 2048 per worker (thousands of sockets in flight
    /// make every new attempt cost more system time, so a generator that falls behind would not
    /// recover), and below RLIMIT_NOFILE's hard limit minus 256.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_in_flight: Option<u64>,
    /// Open loop: a start later than this after its scheduled time counts as `late`.
    #[arg(long, default_value = "1ms", value_parser = parse_positive_duration)]
    pub late_threshold: Duration,
    /// Report format on stdout: `text` or `json` (per-second lines always go to stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// `--cpus`: ascending CPU ids.
#[derive(Debug, Clone)]
pub struct CpuList(pub Vec<usize>);

/// One `--source` item: one address or an expanded range.
#[derive(Debug, Clone)]
pub struct Sources(pub Vec<IpAddr>);

/// `--close`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CloseArg {
    /// SO_LINGER 0: RST, no TIME_WAIT.
    Rst,
    /// Client FIN first: TIME_WAIT on the client.
    Fin,
    /// Wait for the server's FIN.
    Server,
}

/// `--arrival`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced.
    Uniform,
    /// Exponential gaps.
    Poisson,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable.
    Text,
    /// The report as JSON.
    Json,
}

fn parse_target(s: &str) -> Result<SocketAddr, String> {
    crate::units::parse_target(s)
}

/// One `--source` item: an address or an inclusive range `A-B` of one family.
fn parse_source_item(s: &str) -> Result<Sources, String> {
    parse_sources(s).map(Sources)
}

fn parse_sources(s: &str) -> Result<Vec<IpAddr>, String> {
    let s = s.trim();
    let ip = |t: &str| -> Result<IpAddr, String> {
        t.trim().parse().map_err(|_| {
            format!("invalid source address {t:?}: write an IP address or a range like `127.0.0.2-127.0.0.250`")
        })
    };
    let Some((a, b)) = s.split_once('-') else {
        return Ok(vec![ip(s)?]);
    };
    let (a, b) = (ip(a)?, ip(b)?);
    let (lo, hi, v4) = match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            (u128::from(u32::from(a)), u128::from(u32::from(b)), true)
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), false),
        _ => return Err(format!("source range {s:?} mixes IPv4 and IPv6")),
    };
    if hi < lo {
        return Err(format!(
            "source range {s:?} ends before it starts: write low-high"
        ));
    }
    if hi - lo >= MAX_SOURCES {
        return Err(format!(
            "source range {s:?} names more than {MAX_SOURCES} addresses"
        ));
    }
    Ok((lo..=hi)
        .map(|v| {
            if v4 {
                IpAddr::from(std::net::Ipv4Addr::from(v as u32))
            } else {
                IpAddr::from(std::net::Ipv6Addr::from(v))
            }
        })
        .collect())
}

/// Runs `connstorm load`.
///
/// # Errors
/// Bad input (exit 2): an inconsistent configuration or an unusable CPU. Others (exit 1): the
/// workers cannot start, or stdout cannot be written.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let nofile = loadgen::rlimit::raise_nofile_limit().context("raising the open-file limit")?;
    let cfg = config(&args, nofile)?;
    let budget = loadgen::ports::read_port_range(Path::new("/proc"))
        .map(|r| loadgen::ports::port_budget(r, &cfg.targets, &cfg.sources, cfg.close));
    match &budget {
        Ok(b) => warn_port_budget(&cfg, b),
        Err(e) => eprintln!(
            "connstorm load: warning: cannot read ip_local_port_range ({e}); no port-budget check"
        ),
    }
    eprintln!("{}", plan_line(&cfg));
    let stop = crate::signals::stop_flag().context("installing the SIGINT/SIGTERM handler")?;
    let total_secs = (cfg.warmup + cfg.duration).as_secs_f64().ceil() as u64;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(total_secs);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len}s {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let offered = match cfg.pattern {
        Pattern::Open { rate_per_sec, .. } => Some(rate_per_sec),
        Pattern::Closed { .. } => None,
    };
    let mut on_second = |row: &TimelineRow| {
        let line = second_line(row, offered);
        match &bar {
            Some(b) => {
                b.println(&line);
                b.set_position((row.t_secs + 1).min(total_secs));
            }
            None => eprintln!("{line}"),
        }
    };
    let report = loadgen::run(&cfg, &stop, &mut on_second).map_err(|e| match e {
        LoadError::Config(_) | LoadError::Pin { .. } => bad_input(e.to_string()),
        e => anyhow::Error::new(e).context("running the load"),
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let warnings: Vec<String> = report.schedule_warning().into_iter().collect();
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            let json = serde_json::to_string_pretty(&JsonReport {
                cpm: report.cpm(),
                port_budget: budget.as_ref().ok(),
                warnings: &warnings,
                report: &report,
            })?;
            writeln!(out, "{json}")?;
            for w in &warnings {
                eprintln!("connstorm load: WARNING: {w}");
            }
        }
        Format::Text => write_text(&mut out, &report, &warnings)?,
    }
    out.flush()?;
    Ok(exit_code(&report))
}

/// 3 when no attempt of the whole run succeeded (all failed, or none could start), else 0.
fn exit_code(report: &LoadReport) -> i32 {
    if report.total.successes == 0 {
        3
    } else {
        0
    }
}

/// The report as `--format json` prints it.
#[derive(serde::Serialize)]
struct JsonReport<'a> {
    cpm: f64,
    port_budget: Option<&'a loadgen::ports::PortBudget>,
    /// The same WARNING lines as the text report (e.g. the generator fell behind its schedule).
    warnings: &'a [String],
    #[serde(flatten)]
    report: &'a LoadReport,
}

fn config(args: &Args, nofile: u64) -> anyhow::Result<LoadConfig> {
    let pattern = match (args.rate, args.concurrency) {
        (_, Some(c)) => Pattern::Closed { concurrency: c },
        (rate, None) => Pattern::Open {
            rate_per_sec: rate.unwrap_or(1000.0),
            arrival: match args.arrival {
                ArrivalArg::Uniform => Arrival::Uniform,
                ArrivalArg::Poisson => Arrival::Poisson,
            },
        },
    };
    let fd_room = nofile.saturating_sub(256).max(1);
    let max_in_flight = match args.max_in_flight {
        Some(m) if m > fd_room => {
            return Err(bad_input(format!(
                "--max-in-flight {m} needs more file descriptors than RLIMIT_NOFILE ({nofile}) allows: \
                 lower it to at most {fd_room} or raise the hard limit (ulimit -Hn)"
            )))
        }
        Some(m) => m,
        None => match pattern {
            Pattern::Open { rate_per_sec, .. } => {
                let workers = args.cpus.as_ref().map_or_else(
                    || allowed_cpus().map_or(1, |c| c.len()),
                    |c| c.0.len(),
                );
                let d = loadgen::default_max_in_flight(rate_per_sec, args.connect_timeout, workers);
                (d as u64).min(fd_room)
            }
            Pattern::Closed { .. } => fd_room,
        },
    };
    if let Pattern::Closed { concurrency } = pattern {
        if u64::from(concurrency) > fd_room {
            return Err(bad_input(format!(
                "--concurrency {concurrency} needs more file descriptors than RLIMIT_NOFILE ({nofile}) allows: \
                 lower it to at most {fd_room} or raise the hard limit (ulimit -Hn)"
            )));
        }
    }
    let cpus = match &args.cpus {
        Some(c) => c.0.clone(),
        None => allowed_cpus().context("reading this process's CPU affinity")?,
    };
    let mut seen = std::collections::HashSet::new();
    let sources: Vec<IpAddr> = args
        .source
        .iter()
        .flat_map(|s| s.0.iter().copied())
        .filter(|ip| seen.insert(*ip))
        .collect();
    for ip in &sources {
        // bind(2) to port 0 fails with EADDRNOTAVAIL for an address no interface has; catch that
        // here rather than as a run full of "port exhaustion" failures.
        if let Err(e) = std::net::UdpSocket::bind((*ip, 0)) {
            return Err(bad_input(format!(
                "--source {ip} is not an address of this host ({e}): use addresses of local interfaces (any 127.0.0.0/8 on loopback)"
            )));
        }
    }
    let cfg = LoadConfig {
        targets: args.target.clone(),
        pattern,
        duration: args.duration,
        warmup: args.warmup,
        cpus,
        close: match args.close {
            CloseArg::Rst => CloseMode::Rst,
            CloseArg::Fin => CloseMode::Fin,
            CloseArg::Server => CloseMode::Server,
        },
        sources,
        connect_timeout: args.connect_timeout,
        expect_bytes: args.expect_bytes,
        max_in_flight: usize::try_from(max_in_flight).unwrap_or(usize::MAX),
        late_threshold: args.late_threshold,
    };
    cfg.validate().map_err(|e| bad_input(e.to_string()))?;
    Ok(cfg)
}

fn allowed_cpus() -> anyhow::Result<Vec<usize>> {
    Ok(tuning::topology::allowed_cpus(Path::new("/"))?)
}

/// The budget assumes no TIME_WAIT reuse; net.ipv4.tcp_tw_reuse (ip-sysctl.rst: 0 off, 1 on,
/// 2 = loopback only, the default since 5.8) lets connect() reuse a TIME_WAIT port after
/// tcp_tw_reuse_delay (1 s), which raises the real limit.
fn tw_reuse_note() -> &'static str {
    match std::fs::read_to_string("/proc/sys/net/ipv4/tcp_tw_reuse").map(|s| s.trim().to_string()) {
        Ok(v) if v == "1" => " — tcp_tw_reuse=1 lets TIME_WAIT ports be reused after ~1 s, so the real limit is higher",
        Ok(v) if v == "2" => " — on loopback targets tcp_tw_reuse=2 (the default) lets TIME_WAIT ports be reused after ~1 s, so the real limit is higher there",
        _ => "",
    }
}

fn warn_port_budget(cfg: &LoadConfig, b: &loadgen::ports::PortBudget) {
    let (lo, hi) = b.range;
    let fix =
        "use more --source addresses (any 127.0.0.0/8 on loopback), more targets, --close rst or \
               --close server, a wider net.ipv4.ip_local_port_range, or net.ipv4.tcp_tw_reuse=1";
    if let (Some(per_sec), Pattern::Open { rate_per_sec, .. }) = (b.per_sec, cfg.pattern) {
        if rate_per_sec > per_sec {
            eprintln!(
                "connstorm load: warning: --rate {rate_per_sec:.0}/s exceeds the ephemeral-port budget of about \
                 {per_sec:.0}/s ({} ports [{lo}-{hi}] x {} source/target triples / 60 s TIME_WAIT with --close fin): \
                 expect EADDRNOTAVAIL (port exhaustion){}; {fix}",
                b.ports,
                b.triples,
                tw_reuse_note()
            );
        }
    }
    let in_flight = match cfg.pattern {
        Pattern::Open { .. } => cfg.max_in_flight as u64,
        Pattern::Closed { concurrency } => u64::from(concurrency),
    };
    if matches!(cfg.pattern, Pattern::Closed { .. }) && in_flight > b.concurrent {
        eprintln!(
            "connstorm load: warning: {in_flight} connections in flight need more ports than the {} available \
             ({} ports x {} triples); {fix}",
            b.concurrent, b.ports, b.triples
        );
    }
}

fn plan_line(cfg: &LoadConfig) -> String {
    let what = match cfg.pattern {
        Pattern::Open {
            rate_per_sec,
            arrival,
        } => {
            format!(
                "open loop at {rate_per_sec:.0}/s ({arrival:?} arrivals, at most {} in flight)",
                cfg.max_in_flight
            )
        }
        Pattern::Closed { concurrency } => format!("closed loop with {concurrency} in flight"),
    };
    let targets: Vec<String> = cfg.targets.iter().map(ToString::to_string).collect();
    format!(
        "connstorm load: {what} to {} for {} (+{} warm-up) on CPUs {}, --close {}, {} source address(es), connect timeout {}",
        targets.join(","),
        humantime::format_duration(cfg.duration),
        humantime::format_duration(cfg.warmup),
        tuning::cpulist::format(&cfg.cpus),
        cfg.close.name(),
        if cfg.sources.is_empty() { "kernel-chosen".to_string() } else { cfg.sources.len().to_string() },
        humantime::format_duration(cfg.connect_timeout),
    )
}

fn second_line(row: &TimelineRow, offered: Option<f64>) -> String {
    let offered = match offered {
        Some(_) => format!("offered {}/s", row.offered),
        None => format!("started {}/s", row.attempts),
    };
    format!(
        "t={:>4}s {offered} achieved {}/s errors {} late {} dropped {} handshake p50 {} p99 {}{}",
        row.t_secs,
        row.successes,
        row.failures,
        row.late,
        row.dropped,
        fmt_ns(row.p50_ns),
        fmt_ns(row.p99_ns),
        if row.warmup { " (warm-up)" } else { "" }
    )
}

/// Nanoseconds with a readable unit: `850 ns`, `45.1 µs`, `1.23 ms`, `1.002 s`.
fn fmt_ns(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", v / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", v / 1e6)
    } else {
        format!("{:.3} s", v / 1e9)
    }
}

fn write_text(out: &mut dyn Write, r: &LoadReport, warnings: &[String]) -> std::io::Result<()> {
    let mode = match r.pattern {
        Pattern::Open { .. } => "open loop",
        Pattern::Closed { .. } => "closed loop",
    };
    writeln!(
        out,
        "connstorm load: {mode}, --close {}, {} worker(s), {:.2} s measured{}",
        r.close.name(),
        r.workers.len(),
        r.measured_secs,
        if r.interrupted {
            " (INTERRUPTED: partial run)"
        } else {
            ""
        }
    )?;
    let vs = match r.offered_per_sec {
        Some(o) => format!(
            ", offered {o:.1}/s ({:.2}% achieved)",
            100.0 * r.achieved_per_sec / o
        ),
        None => String::new(),
    };
    writeln!(
        out,
        "  rate:        {:.0} CPM = {:.1} connections/s achieved{vs}",
        r.cpm(),
        r.achieved_per_sec
    )?;
    writeln!(
        out,
        "  attempts:    {} started, {} succeeded, {} failed, {} late, {} dropped",
        r.attempts,
        r.successes,
        r.failures_total(),
        r.late,
        r.dropped
    )?;
    for w in warnings {
        writeln!(out, "  WARNING: {w}")?;
    }
    write_hist(
        out,
        "handshake (scheduled start -> connected)",
        &HistogramSummary::of(&r.handshake),
    )?;
    write_hist(
        out,
        "service   (socket() -> connected)       ",
        &HistogramSummary::of(&r.service),
    )?;
    if let Some(fb) = &r.first_byte {
        write_hist(
            out,
            "first byte (scheduled start -> N bytes)  ",
            &HistogramSummary::of(fb),
        )?;
    }
    if r.failures.is_empty() {
        writeln!(out, "  failures:    none")?;
    } else {
        writeln!(out, "  failures by cause:")?;
        for (name, n) in &r.failures {
            let why = loadgen::failures::explain(name)
                .map(|w| format!(" — {w}"))
                .unwrap_or_default();
            writeln!(out, "    {name:<14} {n}{why}")?;
        }
    }
    if !r.post_connect_failures.is_empty() {
        writeln!(
            out,
            "  after the handshake (read / server close), counted as successes above:"
        )?;
        for (name, n) in &r.post_connect_failures {
            let why = if name == "ENODATA" {
                " — the server closed before --expect-bytes arrived"
            } else {
                ""
            };
            writeln!(out, "    {name:<14} {n}{why}")?;
        }
    }
    let t = &r.total;
    writeln!(
        out,
        "  whole run incl. warm-up: {} attempts, {} succeeded, {} failed, {} late, {} dropped, {} abandoned",
        t.attempts,
        t.successes,
        t.failures.values().sum::<u64>(),
        t.late,
        t.dropped,
        t.abandoned
    )?;
    for w in &r.workers {
        let per = |ns: u64| {
            ns.checked_div(w.attempts)
                .map_or_else(|| "-".into(), fmt_ns)
        };
        writeln!(
            out,
            "  worker cpu {:>3}: {} attempts, {} ok, on CPU {:.3} s ({}/attempt, exact); user {:.3} s ({}/attempt) sys {:.3} s ({}/attempt) by tick samples",
            w.cpu,
            w.attempts,
            w.successes,
            w.cpu_run_ns as f64 / 1e9,
            per(w.cpu_run_ns),
            w.cpu_user_ns as f64 / 1e9,
            per(w.cpu_user_ns),
            w.cpu_sys_ns as f64 / 1e9,
            per(w.cpu_sys_ns)
        )?;
    }
    Ok(())
}

fn write_hist(out: &mut dyn Write, name: &str, s: &HistogramSummary) -> std::io::Result<()> {
    let cells: Vec<String> = s
        .percentiles
        .iter()
        .map(|&(p, v)| {
            if p >= 100.0 {
                format!("max {}", fmt_ns(v))
            } else {
                format!("p{p} {}", fmt_ns(v))
            }
        })
        .collect();
    writeln!(out, "  {name}: {} (n={})", cells.join("  "), s.count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ranges_expand_and_bad_ones_are_refused() {
        let v = parse_sources("127.0.0.2-127.0.0.5").unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[3], "127.0.0.5".parse::<IpAddr>().unwrap());
        assert_eq!(parse_sources("::1").unwrap().len(), 1);
        assert!(parse_sources("127.0.0.5-127.0.0.2").is_err());
        assert!(parse_sources("127.0.0.1-::1").is_err());
        assert!(parse_sources("10.0.0.0-10.255.255.255").is_err());
        assert!(parse_sources("nope").is_err());
    }

    #[test]
    fn units_are_readable() {
        assert_eq!(fmt_ns(850), "850 ns");
        assert_eq!(fmt_ns(45_100), "45.1 µs");
        assert_eq!(fmt_ns(1_230_000), "1.23 ms");
        assert_eq!(fmt_ns(1_002_000_000), "1.002 s");
    }
}
