//! From the options of `connstorm load` to a checked [`LoadConfig`] (bad input refused before
//! anything is created), and the ephemeral-port budget warnings printed before a run.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use anyhow::Context;
use loadgen::{Arrival, CloseMode, LoadConfig, Pattern};

use super::args::{Args, ArrivalArg, CloseArg, Family, Targets};
use crate::error::bad_input;

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

/// The run configuration of `args`; `nofile`: RLIMIT_NOFILE's soft limit after raising it.
///
/// # Errors
/// Bad input (exit 2): too many in flight for the fd limit, an unusable CPU, a source address
/// this host does not have, or what [`LoadConfig::validate`] refuses.
pub(super) fn config(args: &Args, nofile: u64) -> anyhow::Result<LoadConfig> {
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
    let targets_first = targets[0];
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
        http: super::args::http_request(args)?,
        tls: super::args::tls_options(args, targets_first)?,
        engine: args.load_engine,
    };
    cfg.validate().map_err(|e| bad_input(e.to_string()))?;
    Ok(cfg)
}

/// Whether connecting to `ip` stays on this host, in this network namespace: a loopback address
/// (127.0.0.0/8, ::1, or IPv4-mapped loopback `::ffff:127.x.y.z`), or the unspecified address
/// (connect(2) to 0.0.0.0 or :: reaches the local host; ip(7)).
pub(super) fn is_local(ip: IpAddr) -> bool {
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

/// Warns on stderr when the rate or the concurrency needs more ephemeral ports than this host
/// offers ([`tuning::ports::shortfall`], with TIME_WAIT reuse taken into account from the
/// settings it depends on: tcp_tw_reuse, tcp_timestamps, tcp_tw_reuse_delay), saying how to fix
/// it. `b` gives the run's (source, target) triples.
pub(super) fn warn_port_budget(cfg: &LoadConfig, b: &loadgen::ports::PortBudget) {
    let io = tuning::plan::ProcSys { root: "/".into() };
    let settings = match tuning::ports::PortSettings::read(&io) {
        Ok(s) => s,
        Err(e) => return eprintln!("connstorm load: warning: {e}; no port-budget check"),
    };
    let all_local = cfg.targets.iter().all(|t| is_local(t.ip()));
    let e = tuning::ports::budget(&settings, b.triples, all_local, cfg.close == CloseMode::Fin);
    let demand = match cfg.pattern {
        Pattern::Open { rate_per_sec, .. } => tuning::ports::Demand::Rate {
            per_sec: rate_per_sec,
        },
        Pattern::Closed { concurrency } => tuning::ports::Demand::InFlight {
            connections: u64::from(concurrency),
        },
    };
    if let Some(w) = tuning::ports::shortfall(&e, demand) {
        let reuse = tuning::ports::reuse_remedy(&e)
            .map(|r| format!(", or {r}"))
            .unwrap_or_default();
        eprintln!(
            "connstorm load: warning: {w}; use more --source addresses (any 127.0.0.0/8 on loopback), more targets, \
             --close rst or --close server, a wider net.ipv4.ip_local_port_range{reuse}"
        );
    }
}
