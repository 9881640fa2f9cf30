//! `connstorm load`: open connections to one or more servers at an intended rate (open loop) or a
//! fixed concurrency (closed loop) and report connections per minute and handshake latency.
//!
//! Exit codes: 0 the run completed (some attempts may have failed: see the report); 1 a
//! run-time failure; 2 bad input, refused before anything is created (including a CPU this
//! process may not use, a rate above 1e9/s, a duration under 10 ms); 3 the run completed but no
//! attempt of the whole run succeeded: every attempt failed (e.g. nothing listens on the
//! target), none could start, or none was accepted by the server; 128+signo (130 SIGINT, 143
//! SIGTERM) interrupted by a signal, after the report was printed.

use results::numfmt;
use std::io::{IsTerminal, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use loadgen::{
    Arrival, CloseMode, HistogramSummary, LoadConfig, LoadError, LoadReport, Overflow, Pattern,
    TimelineRow,
};
use results::acceptance::{Acceptance, Exactness};

use crate::error::bad_input;
use crate::units::{parse_cpus, parse_duration, parse_positive_duration, parse_rate};

/// Largest number of addresses one `--source` range may name.
const MAX_SOURCES: u128 = 65_536;

/// Options of `connstorm load`.
///
/// Exit codes: 0 completed; 1 run-time failure; 2 bad input; 3 completed but nothing succeeded
/// (all failed, none could start, or none was accepted); 128+signo interrupted by a signal after
/// the report.
#[derive(Debug, clap::Args)]
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
    /// Report format on stdout: `text` or `json` (per-second lines always go to stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// One `--target` item: every address its name resolves to, in the resolver's order.
#[derive(Debug, Clone)]
pub struct Targets(pub Vec<SocketAddr>);

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

/// Resolves one `HOST:PORT` to every address it has (getaddrinfo(3) through the std resolver,
/// so /etc/hosts and nsswitch apply). Port 0 is refused.
fn parse_target_item(s: &str) -> Result<Targets, String> {
    use std::net::ToSocketAddrs;
    let mut addrs: Vec<SocketAddr> = s
        .trim()
        .to_socket_addrs()
        .map_err(|e| {
            format!(
                "invalid target {s:?} ({e}): write HOST:PORT, e.g. `127.0.0.1:9000`, `[::1]:9000` or `localhost:9000`"
            )
        })?
        .collect();
    let mut seen = std::collections::HashSet::new();
    addrs.retain(|a| seen.insert(*a));
    let Some(first) = addrs.first() else {
        return Err(format!(
            "target {s:?} resolves to no address: give HOST:PORT of the server"
        ));
    };
    if first.port() == 0 {
        return Err(format!(
            "target {s:?} has port 0, which nothing listens on: give the server's port"
        ));
    }
    Ok(Targets(addrs))
}

/// Every resolved address of every `--target` item, in order, without repeats, restricted to
/// `family`.
///
/// # Errors
/// Bad input when the family leaves no address.
fn targets(items: &[Targets], family: Option<Family>) -> anyhow::Result<Vec<SocketAddr>> {
    let mut seen = std::collections::HashSet::new();
    let all: Vec<SocketAddr> = items
        .iter()
        .flat_map(|t| t.0.iter().copied())
        .filter(|a| seen.insert(*a))
        .collect();
    let kept: Vec<SocketAddr> = all
        .iter()
        .copied()
        .filter(|a| match family {
            Some(Family::V4) => a.is_ipv4(),
            Some(Family::V6) => a.is_ipv6(),
            None => true,
        })
        .collect();
    if kept.is_empty() {
        let list: Vec<String> = all.iter().map(ToString::to_string).collect();
        return Err(bad_input(format!(
            "--family {} leaves no target address (the targets resolve to {}): give a target of that family or drop --family",
            if family == Some(Family::V4) { 4 } else { 6 },
            list.join(", ")
        )));
    }
    Ok(kept)
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
    let open_loop = matches!(cfg.pattern, Pattern::Open { .. });
    let mut on_second = |row: &TimelineRow| {
        let line = crate::progress::second_line(row, open_loop);
        match &bar {
            Some(b) => {
                b.println(&line);
                b.set_position((row.t_secs + 1).min(total_secs));
            }
            None => eprintln!("{line}"),
        }
    };
    // The kernel's counters of the targets' namespace: readable from here only when every target
    // is a loopback address (then it is this process's own namespace).
    let local = cfg.targets.iter().all(|t| is_local(t.ip()));
    let before = local.then(read_counters).flatten();
    let mut report = loadgen::run(&cfg, &stop, &mut on_second).map_err(|e| match e {
        LoadError::Config(_) | LoadError::Pin { .. } => bad_input(e.to_string()),
        e => anyhow::Error::new(e).context("running the load"),
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let kernel = before.and_then(|before| {
        let delta = read_counters()?.delta(&before).to_map();
        let active = delta.get("Tcp.ActiveOpens").copied().unwrap_or(0);
        // Private: nothing but this run opens connections here (only `lo` in the namespace, and
        // no more SYNs sent than our attempts).
        let private = only_loopback_interface() && active <= report.total.attempts as i64;
        let handshakes = report.total.successes + report.total.completed_after_timeout;
        let acceptance = results::acceptance::reconcile(handshakes, &delta, private);
        report.reclassify_never_accepted(acceptance.never_accepted, cfg.warmup.is_zero());
        // This thread is in the targets' namespace, so /proc/sys/net is theirs (see
        // tuning::counters::DEFAULT_SYS_DIR).
        let mut settings =
            tuning::counters::read_settings(Path::new(tuning::counters::DEFAULT_SYS_DIR));
        if let Some(b) = listen_backlog(&cfg.targets) {
            settings.insert("listen_backlog".into(), b);
        }
        let causes = results::diagnosis::diagnose(&results::diagnosis::Evidence {
            counters: &delta,
            settings: &settings,
            attempts: report.total.attempts,
            failures: &report.total.failures,
            client_handshakes: handshakes,
            server_accepts: Some(acceptance.accepted),
            balanced: None,
        })
        .into_iter()
        .map(|c| c.line)
        .collect();
        Some(Kernel {
            delta,
            acceptance,
            causes,
        })
    });
    let warnings: Vec<String> = report.schedule_warning().into_iter().collect();
    let mut out = std::io::stdout().lock();
    let written = (|| -> std::io::Result<()> {
        match args.format {
            Format::Json => {
                let json = serde_json::to_string_pretty(&JsonReport {
                    cpm: report.cpm(),
                    port_budget: budget.as_ref().ok(),
                    warnings: &warnings,
                    targets_local: local,
                    kernel_counters: kernel.as_ref().map(|k| &k.delta),
                    acceptance: kernel.as_ref().map(|k| &k.acceptance),
                    diagnosis: kernel.as_ref().map(|k| &k.causes),
                    report: &report,
                })?;
                writeln!(out, "{json}")?;
                for w in &warnings {
                    eprintln!("connstorm load: WARNING: {w}");
                }
            }
            Format::Text => {
                write_text(&mut out, &report, &warnings)?;
                write_kernel(&mut out, kernel.as_ref(), local, report.total.successes)?;
            }
        }
        out.flush()
    })();
    match written {
        // The reader went away (`| head`): the run's own exit code still says what happened.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(exit_code(&report))
}

/// The listen backlog of the local listener on the targets' port (all targets share one port),
/// as `ss -Hltn` shows it (Send-Q of a LISTEN socket is its backlog, sk_max_ack_backlog, via
/// inet_diag; ss(8)); the largest when several SO_REUSEPORT listeners share the port. `None`
/// when the targets use several ports, `ss` is missing or shows no listener.
fn listen_backlog(targets: &[SocketAddr]) -> Option<i64> {
    let port = targets.first()?.port();
    if targets.iter().any(|t| t.port() != port) {
        return None;
    }
    let out = std::process::Command::new("ss")
        .args(["-Hltn", &format!("sport = :{port}")])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<i64>().ok())
        .max()
}

/// The counter deltas of the targets' namespace over the run and what they say about acceptance.
struct Kernel {
    delta: std::collections::BTreeMap<String, i64>,
    acceptance: Acceptance,
    /// One line per cause, from `results::diagnosis` (the same words `bench` prints).
    causes: Vec<String>,
}

fn read_counters() -> Option<tuning::counters::Snapshot> {
    match tuning::counters::Snapshot::read(Path::new(tuning::counters::DEFAULT_NET_DIR)) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("connstorm load: warning: cannot read the kernel's TCP counters ({e}); server-side acceptance unknown");
            None
        }
    }
}

/// True when this network namespace has no interface but `lo` (/proc/thread-self/net/dev): then
/// no connection can come from outside it.
fn only_loopback_interface() -> bool {
    std::fs::read_to_string("/proc/thread-self/net/dev").is_ok_and(|t| {
        t.lines()
            .skip(2)
            .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
            .all(|n| n == "lo")
    })
}

/// The exit code table (README): 128+signo when a signal interrupted the run (the report was
/// printed first); 3 when no attempt of the whole run succeeded (all failed, none could start,
/// or none was accepted by the server) or nothing was measured; else 0.
fn exit_code(report: &LoadReport) -> i32 {
    if report.interrupted {
        return 128 + crate::signals::received().unwrap_or(libc::SIGINT);
    }
    if report.total.successes == 0 || report.attempts + report.dropped == 0 {
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
    /// Every target is a loopback address, so the kernel counters below are the server's too.
    targets_local: bool,
    /// Δ of every kernel TCP counter of this namespace over the run (only when `targets_local`).
    kernel_counters: Option<&'a std::collections::BTreeMap<String, i64>>,
    /// Client handshakes vs the server's passive opens (only when `targets_local`; `null` means
    /// server-side acceptance is unknown from here).
    acceptance: Option<&'a Acceptance>,
    /// One line per cause found in the counters and the namespace's settings (only when
    /// `targets_local`), in the words `bench` uses.
    diagnosis: Option<&'a Vec<String>>,
    #[serde(flatten)]
    report: &'a LoadReport,
}

fn config(args: &Args, nofile: u64) -> anyhow::Result<LoadConfig> {
    let targets = targets(&args.target, args.family)?;
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
    let allowed = allowed_cpus().context("reading this process's CPU affinity")?;
    let cpus = match &args.cpus {
        Some(c) => c.0.clone(),
        None => allowed.clone(),
    };
    // sched_setaffinity(2) on a thread checks the cpuset, not this process's affinity mask
    // (taskset), so a CPU outside the mask would be pinned to without complaint: refuse it here,
    // with the same words as `connstorm server`.
    if let Some(cpu) = cpus.iter().find(|c| !allowed.contains(c)) {
        return Err(bad_input(format!(
            "--cpus: {}",
            tuning::cpulist::unavailable_message(*cpu, &allowed)
        )));
    }
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
        targets,
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

/// Whether connecting to `ip` stays on this host, in this network namespace: a loopback address
/// (127.0.0.0/8, ::1, or IPv4-mapped loopback `::ffff:127.x.y.z`), or the unspecified address
/// (connect(2) to 0.0.0.0 or :: reaches the local host; ip(7)).
fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

fn allowed_cpus() -> anyhow::Result<Vec<usize>> {
    Ok(tuning::topology::allowed_cpus(Path::new("/"))?)
}

/// The port budget with TIME_WAIT reuse taken into account, from the settings it depends on
/// (`tuning::ports::budget`: tcp_tw_reuse, tcp_timestamps, tcp_tw_reuse_delay; reuse needs
/// timestamps, ip-sysctl.rst); `None` when the settings cannot be read.
fn reuse_estimate(
    cfg: &LoadConfig,
    b: &loadgen::ports::PortBudget,
) -> Option<tuning::ports::Estimate> {
    let io = tuning::plan::ProcSys { root: "/".into() };
    let s = tuning::ports::PortSettings::read(&io).ok()?;
    let all_local = cfg.targets.iter().all(|t| is_local(t.ip()));
    Some(tuning::ports::budget(
        &s,
        b.triples,
        all_local,
        cfg.close == CloseMode::Fin,
    ))
}

fn warn_port_budget(cfg: &LoadConfig, b: &loadgen::ports::PortBudget) {
    let (lo, hi) = b.range;
    let fix =
        "use more --source addresses (any 127.0.0.0/8 on loopback), more targets, --close rst or \
               --close server, a wider net.ipv4.ip_local_port_range, or net.ipv4.tcp_tw_reuse=1";
    if let (Some(per_sec), Pattern::Open { rate_per_sec, .. }) = (b.per_sec, cfg.pattern) {
        let estimate = reuse_estimate(cfg, b);
        match estimate {
            // TIME_WAIT reuse applies: only a rate above the reuse budget can exhaust ports.
            Some(e) if matches!(e.reuse, tuning::ports::Reuse::Yes { .. }) => {
                let over = e.per_sec.is_some_and(|r| rate_per_sec > r);
                if over {
                    eprintln!(
                        "connstorm load: warning: --rate {rate_per_sec:.0}/s exceeds the ephemeral-port budget even with \
                         TIME_WAIT reuse ({}): expect EADDRNOTAVAIL (port exhaustion); {fix}",
                        e.explain
                    );
                }
            }
            e if rate_per_sec > per_sec => {
                let why = match e.map(|e| e.reuse) {
                    Some(tuning::ports::Reuse::No { why }) => {
                        format!(" — no TIME_WAIT reuse: {why}")
                    }
                    _ => String::new(),
                };
                eprintln!(
                    "connstorm load: warning: --rate {rate_per_sec:.0}/s exceeds the ephemeral-port budget of about \
                     {per_sec:.0}/s ({} ports [{lo}-{hi}] x {} source/target triples / 60 s TIME_WAIT with --close fin): \
                     expect EADDRNOTAVAIL (port exhaustion){why}; {fix}",
                    b.ports,
                    b.triples,
                );
            }
            _ => {}
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
                "open loop at {rate_per_sec:.0}/s ({} arrivals, at most {} in flight)",
                match arrival {
                    Arrival::Uniform => "uniform",
                    Arrival::Poisson => "poisson",
                },
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
            ", offered {} conn/s ({:.2}% achieved)",
            numfmt::fixed(o, 1),
            100.0 * r.achieved_per_sec / o
        ),
        None => String::new(),
    };
    writeln!(
        out,
        "  rate:        {} CPM = {} conn/s achieved{vs}",
        numfmt::fixed(r.cpm(), 0),
        numfmt::fixed(r.achieved_per_sec, 1)
    )?;
    writeln!(
        out,
        "  attempts:    {} started, {} succeeded, {} failed, {} late, {} dropped",
        numfmt::count(r.attempts),
        numfmt::count(r.successes),
        numfmt::count(r.failures_total()),
        numfmt::count(r.late),
        numfmt::count(r.dropped)
    )?;
    if r.completed_after_timeout > 0 {
        writeln!(
            out,
            "               {} handshakes completed only after --connect-timeout (the generator saw them late, e.g. it was stopped or starved): counted ETIMEDOUT, not successes",
            numfmt::count(r.completed_after_timeout)
        )?;
    }
    for w in warnings {
        writeln!(out, "  WARNING: {w}")?;
    }
    write_hist(
        out,
        "handshake (scheduled start -> connected)",
        &HistogramSummary::of(&r.handshake),
    )?;
    write_overflow(out, &r.handshake_overflow)?;
    write_hist(
        out,
        "service   (socket() -> connected)       ",
        &HistogramSummary::of(&r.service),
    )?;
    write_overflow(out, &r.service_overflow)?;
    if let Some(fb) = &r.first_byte {
        write_hist(
            out,
            "first byte (scheduled start -> N bytes)  ",
            &HistogramSummary::of(fb),
        )?;
    }
    if let Some(o) = &r.first_byte_overflow {
        write_overflow(out, o)?;
    }
    if r.failures.is_empty() {
        writeln!(out, "  failures:    none")?;
    } else {
        writeln!(out, "  failures by cause:")?;
        for (name, n) in &r.failures {
            let why = loadgen::failures::explain(name)
                .map(|w| format!(" — {w}"))
                .unwrap_or_default();
            writeln!(out, "    {name:<14} {}{why}", numfmt::count(*n))?;
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
            writeln!(out, "    {name:<14} {}{why}", numfmt::count(*n))?;
        }
    }
    let t = &r.total;
    writeln!(
        out,
        "  whole run incl. warm-up: {} attempts, {} succeeded, {} failed, {} late, {} dropped, {} abandoned, {} completed after the timeout",
        numfmt::count(t.attempts),
        numfmt::count(t.successes),
        numfmt::count(t.failures.values().sum::<u64>()),
        numfmt::count(t.late),
        numfmt::count(t.dropped),
        numfmt::count(t.abandoned),
        numfmt::count(t.completed_after_timeout)
    )?;
    write_targets(out, r)?;
    for w in &r.workers {
        let per = |ns: u64| {
            ns.checked_div(w.attempts)
                .map_or_else(|| "-".into(), |v| numfmt::ns(v as f64))
        };
        writeln!(
            out,
            "  worker cpu {:>3}: {} attempts, {} handshakes in time, on CPU {:.3} s ({}/attempt, exact); user {:.3} s ({}/attempt) sys {:.3} s ({}/attempt) by tick samples",
            w.cpu,
            numfmt::count(w.attempts),
            numfmt::count(w.successes),
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

/// "N samples above X; true max Y" when a histogram could not hold every value.
fn write_overflow(out: &mut dyn Write, o: &Overflow) -> std::io::Result<()> {
    if o.above == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "    {} samples above {} (the histogram's range; recorded at its top for the percentiles); true max {}",
        numfmt::count(o.above),
        results::numfmt::ns(o.range_max_ns as f64),
        results::numfmt::ns(o.true_max_ns as f64)
    )
}

/// Per target address (whole run), and each failure cause seen on one address while another
/// accepted, said in words.
fn write_targets(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    if r.per_target.len() < 2 {
        return Ok(());
    }
    writeln!(out, "  per target address (whole run):")?;
    for t in &r.per_target {
        let fails: Vec<String> = t.failures.iter().map(|(k, v)| format!("{v} {k}")).collect();
        writeln!(
            out,
            "    {:<24} {} attempts, {} succeeded{}",
            t.target.to_string(),
            t.attempts,
            t.successes,
            if fails.is_empty() {
                String::new()
            } else {
                format!(", failed: {}", fails.join(", "))
            }
        )?;
    }
    let accepting: Vec<String> = r
        .per_target
        .iter()
        .filter(|t| t.successes > 0)
        .map(|t| t.target.to_string())
        .collect();
    for t in r.per_target.iter().filter(|t| !t.failures.is_empty()) {
        let others: Vec<&String> = accepting
            .iter()
            .filter(|a| **a != t.target.to_string())
            .collect();
        if others.is_empty() {
            continue;
        }
        for (cause, n) in &t.failures {
            writeln!(
                out,
                "  NOTE: {cause} on {} ({n} of {} attempts) while {} accepts",
                t.target,
                t.attempts,
                others
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
    }
    Ok(())
}

/// The kernel counters of the targets' namespace and the acceptance reconciliation, or why they
/// are unknown from here.
fn write_kernel(
    out: &mut dyn Write,
    k: Option<&Kernel>,
    local: bool,
    successes: u64,
) -> std::io::Result<()> {
    let Some(k) = k else {
        let why = if local {
            "the kernel's counters could not be read"
        } else {
            "a target is not a loopback address, so its kernel's counters are not readable here"
        };
        return writeln!(
            out,
            "  server side: unknown from here ({why}): \
             a completed handshake is counted a success though the server may never have accepted it. To know: run \
             `connstorm server` there (it reports accepts and its kernel counters), or use --close server or \
             --expect-bytes with a greeting server, so the client sees the server's answer"
        );
    };
    writeln!(
        out,
        "  kernel counters (Δ over the run, this network namespace, which is the targets' since every target is loopback):"
    )?;
    let mut shown: Vec<&str> = results::record::KEY_COUNTERS.to_vec();
    for (name, v) in &k.delta {
        if *v != 0
            && !shown.contains(&name.as_str())
            && (results::record::is_drop_counter(name)
                || k.acceptance.causes.iter().any(|c| &c.counter == name))
        {
            shown.push(name);
        }
    }
    for name in shown {
        let v = k.delta.get(name).copied().unwrap_or(0);
        let what = if v != 0 {
            format!(" — {}", results::record::describe_counter(name, v))
        } else {
            String::new()
        };
        writeln!(out, "    {name:<28} {v:>10}{what}")?;
    }
    let a = &k.acceptance;
    if a.client_handshakes == 0 {
        writeln!(
            out,
            "  acceptance: no handshake completed on the client: nothing for the server to accept"
        )?;
    } else {
        writeln!(out, "  acceptance: {}", a.summary())?;
    }
    if a.never_accepted > 0 {
        writeln!(
            out,
            "    counted as failures NEVER_ACCEPTED (successes = handshakes − never accepted = {successes}{}); causes:",
            if a.exactness == Exactness::LowerBound {
                ", an upper bound"
            } else {
                ""
            }
        )?;
        for c in &a.causes {
            writeln!(out, "      {} +{}: {}", c.counter, c.delta, c.words)?;
        }
        writeln!(
            out,
            "    note: {}; so are the per-worker counts",
            results::acceptance::client_view_note(a.never_accepted)
        )?;
    }
    if !k.causes.is_empty() {
        writeln!(
            out,
            "  diagnosis (from the counters and this namespace's settings):"
        )?;
        for c in &k.causes {
            writeln!(out, "    {c}")?;
        }
    }
    Ok(())
}

fn write_hist(out: &mut dyn Write, name: &str, s: &HistogramSummary) -> std::io::Result<()> {
    if s.count == 0 {
        return writeln!(out, "  {name}: no samples (n=0)");
    }
    let cells: Vec<String> = s
        .percentiles
        .iter()
        .map(|&(p, v)| {
            if p >= 100.0 {
                format!("max {}", results::numfmt::ns(v as f64))
            } else {
                format!("p{p} {}", results::numfmt::ns(v as f64))
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

    /// A target that is not loopback: server-side acceptance is said to be unknown, with how to
    /// learn it.
    #[test]
    fn remote_targets_say_acceptance_is_unknown_and_how_to_know() {
        let mut out = Vec::new();
        write_kernel(&mut out, None, false, 10).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("server side: unknown from here (a target is not a loopback address"),
            "{text}"
        );
        assert!(text.contains("run `connstorm server` there"), "{text}");
        assert!(text.contains("--close server"), "{text}");
    }
}
