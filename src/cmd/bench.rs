//! `connstorm bench`: the benchmark most users run first. Server and load generator in one
//! process (or load only against `--target`), two phases — *peak* (closed loop, saturating) and
//! *latency* (open loop at 80% of the peak or `--rate`) — a summary, and a run record.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;

use crate::bench::harness::{Harness, PhaseSpec, Setup};
use crate::bench::{floor, summary};
use crate::cli::bad_input;
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

/// Options of `connstorm bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Total measured time of both phases (40% peak, 60% latency), plus a warm-up of
    /// min(1 s, duration/10) before each phase.
    #[arg(long, default_value = "15s", value_parser = units::parse_positive_duration)]
    pub duration: Duration,
    /// Offered rate of the latency phase (e.g. `16.7k/s`, `1M/min`); default 80% of the
    /// measured peak.
    #[arg(long, value_parser = units::parse_rate)]
    pub rate: Option<f64>,
    /// Attempts in flight during the peak phase; default 32 per load CPU.
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// CPUs of the server workers; default the first third (at least one) of the CPUs this
    /// process may use.
    #[arg(long, value_parser = units::parse_cpus)]
    pub server_cpus: Option<Vec<usize>>,
    /// CPUs of the load workers; default the remaining CPUs (the same CPU on a 1-CPU host).
    #[arg(long, value_parser = units::parse_cpus)]
    pub load_cpus: Option<Vec<usize>>,
    /// Server event engine: auto (io_uring if it works here, else epoll), io-uring, epoll.
    #[arg(long, default_value = "auto", value_parser = parse_engine)]
    pub engine: server::EngineChoice,
    /// Client close mode.
    #[arg(long, value_enum, default_value = "rst")]
    pub close: Close,
    /// Server mode: close (FIN), rst, greet[:BYTES] (then the client measures first-byte latency), hold.
    #[arg(long, default_value = "close", value_parser = parse_mode)]
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
    /// Also measure the kernel floor (a blocking socket/connect/close pair on the same CPUs) and
    /// print connstorm's peak as a ratio of it.
    #[arg(long)]
    pub baseline: bool,
    /// Label stored in the record and its file name.
    #[arg(long, default_value = "")]
    pub label: String,
    /// Directory for the run record.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

fn parse_engine(s: &str) -> Result<server::EngineChoice, String> {
    s.parse()
}

fn parse_mode(s: &str) -> Result<server::Mode, String> {
    s.parse()
}

fn parse_target(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("invalid target {s:?} ({e}): write HOST:PORT, e.g. 127.0.0.1:8080"))?
        .next()
        .ok_or_else(|| format!("target {s:?} resolves to no address"))
}

/// Picks server and load CPUs: explicit lists win; otherwise the first third (at least one) of
/// the allowed CPUs serve and the rest load.
///
/// # Errors
/// Bad input when the lists overlap or name CPUs this process may not use.
pub fn pick_cpus(server: Option<Vec<usize>>, load: Option<Vec<usize>>, external: bool) -> anyhow::Result<(Vec<usize>, Vec<usize>)> {
    let allowed = allowed_cpus();
    for (what, list) in [("--server-cpus", &server), ("--load-cpus", &load)] {
        if let Some(l) = list {
            if let Some(c) = l.iter().find(|c| !allowed.contains(c)) {
                return Err(bad_input(format!(
                    "{what}: CPU {c} is offline, missing or outside this process's CPU affinity; usable CPUs: {}",
                    tuning::cpulist::format(&allowed)
                )));
            }
        }
    }
    if external {
        let load = load.unwrap_or_else(|| allowed.clone());
        return Ok((Vec::new(), load));
    }
    let n_server = (allowed.len() / 3).max(1);
    let server = server.unwrap_or_else(|| allowed[..n_server].to_vec());
    let load = load.unwrap_or_else(|| {
        let rest: Vec<usize> = allowed.iter().copied().filter(|c| !server.contains(c)).collect();
        if rest.is_empty() { server.clone() } else { rest }
    });
    Ok((server, load))
}

fn allowed_cpus() -> Vec<usize> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap_or_else(|_| nix::sched::CpuSet::new());
    let cpus: Vec<usize> = (0..nix::sched::CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect();
    if cpus.is_empty() { vec![0] } else { cpus }
}

/// Splits the total duration into (peak, latency) measured times and the per-phase warm-up.
pub fn split_duration(total: Duration) -> (Duration, Duration, Duration) {
    let warmup = (total / 10).min(Duration::from_secs(1));
    let peak = total.mul_f64(0.4);
    (peak, total - peak, warmup)
}

/// Runs `connstorm bench`.
///
/// # Errors
/// Bad options (exit 2), server/load/namespace failures, record write failures.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let (server_cpus, load_cpus) = pick_cpus(args.server_cpus.clone(), args.load_cpus.clone(), args.target.is_some())?;
    if args.target.is_some() && args.netns {
        return Err(bad_input("--target and --netns exclude each other: --netns runs connstorm's own server in a private namespace"));
    }
    if args.duration < Duration::from_secs(1) {
        return Err(bad_input(format!("--duration {:?} is too short: give at least 1s", args.duration)));
    }
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    let (peak_d, lat_d, warmup) = split_duration(args.duration);
    let expect_bytes = match args.mode {
        server::Mode::Greet { bytes } => Some(bytes),
        _ => None,
    };
    let setup = Setup {
        server_cpus: server_cpus.clone(),
        load_cpus: load_cpus.clone(),
        engine: args.engine,
        mode: args.mode,
        backlog: args.backlog,
        close: args.close.into(),
        target: args.target,
        netns: args.netns,
        rtt: args.rtt,
        connect_timeout: args.connect_timeout,
        expect_bytes,
    };
    let config = serde_json::json!({
        "duration_secs": args.duration.as_secs_f64(),
        "peak_secs": peak_d.as_secs_f64(),
        "latency_secs": lat_d.as_secs_f64(),
        "warmup_secs": warmup.as_secs_f64(),
        "rate_per_sec": args.rate,
        "concurrency": args.concurrency,
        "baseline": args.baseline,
        "setup": setup,
    });
    let started = Instant::now();
    let mut harness = Harness::start(setup)?;
    let mut record = crate::bench::record::new_record("bench", &args.label, config, &harness);
    let concurrency = args.concurrency.unwrap_or(32 * load_cpus.len() as u32);
    let mut phases = vec![PhaseSpec {
        name: "peak".into(),
        pattern: loadgen::Pattern::Closed { concurrency },
        duration: peak_d,
        warmup,
    }];
    let mut result = Ok(());
    let mut peak_rate = None;
    while let Some(spec) = phases.pop() {
        if crate::signals::stopped(&stop) {
            break;
        }
        let name = spec.name.clone();
        let mut progress = |row: &loadgen::TimelineRow| eprintln!("{}", summary::progress_line(&name, row));
        match harness.run_phase(&spec, &stop, &mut progress) {
            Ok((phase, report)) => {
                if spec.name == "peak" && !report.interrupted {
                    peak_rate = Some(phase.achieved_per_sec);
                    let rate = args.rate.unwrap_or(phase.achieved_per_sec * 0.8);
                    if rate > 0.0 {
                        phases.push(PhaseSpec {
                            name: "latency".into(),
                            pattern: loadgen::Pattern::Open { rate_per_sec: rate, arrival: loadgen::Arrival::Uniform },
                            duration: lat_d,
                            warmup,
                        });
                    } else {
                        record.warnings.push("peak phase completed no connection: latency phase skipped".into());
                    }
                }
                record.run.interrupted |= report.interrupted;
                record.phases.push(phase);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let server_report = harness.finish();
    record.run.interrupted |= crate::signals::stopped(&stop);
    if let Some(sr) = &server_report {
        for (k, v) in sr.errors() {
            record.warnings.push(format!("server accept errors: {k} × {v}"));
        }
    }
    if args.baseline && !record.run.interrupted && result.is_ok() {
        if args.target.is_some() {
            record.warnings.push("--baseline ignored with --target (the floor needs our own server side)".into());
        } else {
            eprintln!("[baseline] kernel floor: blocking pair for {:.1} s", peak_d.as_secs_f64());
            let f = floor::run(std::net::Ipv4Addr::LOCALHOST.into(), &server_cpus, &load_cpus, peak_d, &stop)?;
            if let Some(peak) = peak_rate {
                record.baseline = Some(results::record::Baseline {
                    floor_per_sec: f.per_sec,
                    ratio: if f.per_sec > 0.0 { peak / f.per_sec } else { 0.0 },
                });
            }
            if f.failures > 0 {
                record.warnings.push(format!("kernel floor: {} connect failures", f.failures));
            }
        }
    }
    record.run.wall_secs = started.elapsed().as_secs_f64();
    let mut warn = summary::warnings(&record);
    record.warnings.append(&mut warn);
    let path = record
        .write_atomic(&args.out)
        .with_context(|| format!("write the run record under {}", args.out.display()))?;
    match args.format {
        Format::Text => {
            print!("{}", summary::render(&record, Some(&path)));
        }
        Format::Json => {
            println!("{}", record.to_json());
            eprintln!("record: {}", path.display());
        }
    }
    result?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_split_adds_up() {
        let (p, l, w) = split_duration(Duration::from_secs(15));
        assert_eq!(p + l, Duration::from_secs(15));
        assert_eq!(w, Duration::from_secs(1));
        let (_, _, w) = split_duration(Duration::from_secs(5));
        assert_eq!(w, Duration::from_millis(500));
    }
}
