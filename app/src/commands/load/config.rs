//! From the options of `connstorm load` to a checked [`LoadConfig`] (bad input refused before
//! anything is created), and the ephemeral-port budget warnings printed before a run.

use std::net::{IpAddr, SocketAddr};

use loadgen::{LoadConfig, Pattern};

use super::args::{Args, Family, Targets};
use crate::bad_input;

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
    config_inner(args, nofile)
}

/// An open loop's default in-flight bound before the descriptor limit
/// ([`loadgen::default_max_in_flight`]).
fn open_default_in_flight(args: &Args, rate_per_sec: f64) -> u64 {
    let cpus = args
        .cpus
        .as_ref()
        .map_or_else(|| common::cpulist::usable().len().max(1), |c| c.0.len());
    let workers = args.load_workers.map_or(cpus, usize::from).max(cpus);
    loadgen::default_max_in_flight(rate_per_sec, args.connect_timeout, workers) as u64
}

/// When RLIMIT_NOFILE (`nofile`, less 256 kept for the process) lowered an open loop's default
/// in-flight bound: `(default, bound)`, for a warning that names the limit (a drop warning
/// blamed the target and advised a `--max-in-flight` the limit refuses). `None` with
/// `--max-in-flight` (refused up front when it does not fit), a closed loop, or room enough.
pub(super) fn fd_capped_in_flight(args: &Args, nofile: u64) -> Option<(u64, u64)> {
    let fd_room = nofile.saturating_sub(256).max(1);
    match (args.max_in_flight, args.rate, args.concurrency) {
        (None, rate, None) => {
            let d = open_default_in_flight(args, rate.unwrap_or(1000.0));
            (d > fd_room).then_some((d, fd_room))
        }
        _ => None,
    }
}

fn config_inner(args: &Args, nofile: u64) -> anyhow::Result<LoadConfig> {
    let targets = targets(&args.target, args.family)?;
    let pattern = match (args.rate, args.concurrency) {
        (_, Some(c)) => Pattern::Closed { concurrency: c },
        (rate, None) => Pattern::Open {
            rate_per_sec: rate.unwrap_or(1000.0),
            arrival: args.arrival,
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
                open_default_in_flight(args, rate_per_sec).min(fd_room)
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
        None => common::cpulist::usable(),
    };
    // sched_setaffinity(2) on a thread checks the cpuset, not this process's affinity mask
    // (taskset), so a CPU outside the mask would be pinned to without complaint: refuse it here,
    // with the same words as `connstorm server`.
    common::cpulist::check_option("--cpus", &cpus).map_err(bad_input)?;
    // More workers than attempts in flight leaves the rest idle (the closed loop splits its
    // attempts across the workers): refused, as `bench --load-workers` refuses it.
    if let (Some(w), Pattern::Closed { concurrency }) = (args.load_workers, pattern) {
        crate::limits::check_load_workers(
            Some(usize::from(w)),
            1,
            Some(u64::from(concurrency)),
            "--load-workers",
            "--concurrency",
        )?;
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
        workers: args.load_workers.map_or(0, usize::from),
        port_slices: args.port_slices,
        close: crate::setup::close_or_default(args.close, args.http.is_some()),
        sources,
        connect_timeout: args.connect_timeout,
        expect_bytes: args.expect_bytes,
        max_in_flight: usize::try_from(max_in_flight).unwrap_or(usize::MAX),
        late_threshold: args.late_threshold,
        http: http_request(args)?,
        tls: tls_options(args, targets_first)?,
        engine: args.load_engine,
        pacing: pacing(args.spin, args.start_batch),
        // The accept-queue wait needs the server in this process (`bench`).
        accept_stamps: None,
    };
    cfg.validate().map_err(|e| bad_input(e.to_string()))?;
    Ok(cfg)
}

/// `--spin` and `--start-batch` as the generator's pacing (checked by `LoadConfig::validate`).
/// `auto` keeps the default spin as the value a closed loop (which measures nothing) reports.
pub fn pacing(spin: super::args::Spin, start_batch: u64) -> loadgen::Pacing {
    use super::args::Spin;
    let (spin_ns, spin_auto) = match spin {
        Spin::Auto => (loadgen::SPIN_NS, true),
        Spin::Fixed(d) => (u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), false),
    };
    loadgen::Pacing {
        spin_ns,
        start_batch: usize::try_from(start_batch).unwrap_or(usize::MAX),
        spin_auto,
    }
}

/// The `--http*` options as the request to send (`None` without `--http`;
/// [`loadgen::HttpRequest::from_options`] reads the body file), with the `Host` of each target
/// given by name (`--target localhost:9443` → `Host: localhost:9443`).
///
/// # Errors
/// Bad input when the body file cannot be read or the request is malformed.
fn http_request(args: &Args) -> anyhow::Result<Option<loadgen::HttpRequest>> {
    let Some(path) = &args.http else {
        return Ok(None);
    };
    let mut req = loadgen::HttpRequest::from_options(
        path,
        args.http_method.as_deref(),
        &args.http_header,
        args.http_body.as_deref(),
    )
    .map_err(bad_input)?;
    // `Host` is the target as given: a name keeps its name (and the port given with it).
    for Targets(addrs, name) in &args.target {
        if let Some(name) = name {
            for a in addrs {
                req.host_names
                    .entry(*a)
                    .or_insert_with(|| format!("{name}:{}", a.port()));
            }
        }
    }
    Ok(Some(req))
}

/// The `--tls*` options (`None` without `--tls`). The SNI defaults to the first target's host
/// name when that is a name, else to its IP address (checked against the certificate's IP
/// addresses, no SNI sent).
///
/// # Errors
/// Bad input for a CA file that cannot be used, an unusable name, `ids` without TLS 1.2.
fn tls_options(args: &Args, first: SocketAddr) -> anyhow::Result<Option<loadgen::tls::TlsOptions>> {
    if !args.tls {
        return Ok(None);
    }
    let name = args
        .target
        .iter()
        .find_map(|t| t.1.clone())
        .unwrap_or_else(|| first.ip().to_string());
    args.tls_client
        .options(
            name,
            args.http.is_some(),
            crate::commands::tls::DefaultTrust::System,
        )
        .map(Some)
}
