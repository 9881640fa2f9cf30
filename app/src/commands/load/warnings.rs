//! The warnings of `connstorm load` that its report cannot show by itself, printed before the
//! run (ephemeral ports, the descriptor limit) and after it (a connect timeout shorter than the
//! late threshold, a late `--start-at`); they also go into the JSON report and the record.

use std::time::SystemTime;

use loadgen::{CloseMode, LoadConfig, LoadReport, Pattern};

/// The warning for an open loop whose in-flight bound RLIMIT_NOFILE lowered: `(default, bound)`.
pub fn fd_cap_warning((default, bound): (u64, u64)) -> String {
    format!(
        "RLIMIT_NOFILE allows at most {} attempts in flight (the limit less 256 descriptors kept for \
         the process), below this rate's default of {}: a start due while all are busy is dropped; \
         raise the limit (`ulimit -n`; the hard limit with `ulimit -Hn`) or lower --rate",
        common::numfmt::count(bound),
        common::numfmt::count(default)
    )
}

/// The warning when an open-loop run dropped starts that found a free slot (the generator was
/// behind, not the target) while its `--connect-timeout` is shorter than the late threshold
/// (`LoadConfig::late_threshold`, 1 ms): a start that cannot begin within the connect timeout of
/// its scheduled time is dropped, so with a timeout that short a lag the report would not even
/// call late drops starts, and the drops are the timeout's, not the server's.
pub fn short_timeout_warning(cfg: &LoadConfig, report: &LoadReport) -> Option<String> {
    let lag = report.generator_lag.as_ref()?;
    let behind = report.dropped.saturating_sub(report.dropped_in_flight_full);
    (behind > 0 && cfg.connect_timeout < cfg.late_threshold).then(|| {
        let p99 = if lag.hist.is_empty() {
            String::new()
        } else {
            format!(
                "; the starts that did begin lagged p99 {}",
                common::numfmt::ns(lag.hist.value_at_quantile(0.99) as f64)
            )
        };
        format!(
            "--connect-timeout {} is shorter than the late threshold ({}): a start that cannot begin within --connect-timeout of its scheduled time is dropped, so {} starts were dropped for a lag the report would not even call late{p99} — the drops are the timeout's, not the server's; allow a longer --connect-timeout",
            common::numfmt::ns(cfg.connect_timeout.as_nanos() as f64),
            common::numfmt::ns(cfg.late_threshold.as_nanos() as f64),
            common::numfmt::count(behind)
        )
    })
}

/// The warning when the schedule started more than [`results::analysis::SKEW_BOUND_MS`] after
/// `--start-at` (`planned`; `real`: when it started): the instant had passed when the workers
/// were ready.
pub fn late_start_warning(planned: Option<SystemTime>, real: SystemTime) -> Option<String> {
    let late = planned
        .and_then(|t| real.duration_since(t).ok())
        .filter(|l| l.as_millis() > u128::from(results::analysis::SKEW_BOUND_MS))?;
    Some(format!(
        "the schedule started {} ms after --start-at (the instant had passed when the workers were ready): give a start time further ahead",
        late.as_millis()
    ))
}

/// The warning when the rate or the concurrency of `cfg` needs more ephemeral ports than this
/// host offers ([`tuning::advice::port_shortfall`], with TIME_WAIT reuse taken into account from the
/// settings it depends on, read from `io`: tcp_tw_reuse, tcp_timestamps, tcp_tw_reuse_delay),
/// saying how to fix it; `None` when the ports suffice. `b` gives the run's (source, target)
/// triples. With port slices (`--port-slices on`, two or more workers) the budget is also
/// counted per slice: the busiest worker (the most in flight, or its share of the rate) against
/// its own slice of the range and its own sources ([`loadgen::ports::slices`]).
///
/// # Errors
/// The settings cannot be read (the message; there is then no port-budget check).
pub fn port_budget_warning(
    cfg: &LoadConfig,
    b: &loadgen::ports::PortBudget,
    io: &tuning::sysctl::ProcSys,
) -> Result<Option<String>, String> {
    let settings = tuning::advice::PortSettings::read(io).map_err(|e| e.to_string())?;
    let all_local = cfg.targets.iter().all(|t| common::addr::is_local(t.ip()));
    let e =
        tuning::advice::port_budget(&settings, b.triples, all_local, cfg.close == CloseMode::Fin);
    let demand = match cfg.pattern {
        Pattern::Open { rate_per_sec, .. } => tuning::advice::PortDemand::Rate {
            per_sec: rate_per_sec,
        },
        Pattern::Closed { concurrency } => tuning::advice::PortDemand::InFlight {
            connections: u64::from(concurrency),
        },
    };
    let remedy = |e: &tuning::advice::PortEstimate, also: &str| {
        let reuse = tuning::advice::port_reuse_remedy(e)
            .map(|r| format!(", or {r}"))
            .unwrap_or_default();
        format!(
            "use more --source addresses (any 127.0.0.0/8 on loopback), more targets, \
             --close rst or --close server, a wider net.ipv4.ip_local_port_range{also}{reuse}"
        )
    };
    if let Some(w) = tuning::advice::port_shortfall(&e, demand) {
        return Ok(Some(format!("{w}; {}", remedy(&e, ""))));
    }
    Ok(slice_shortfall(cfg, b, &settings, all_local).map(|(w, e)| {
        format!(
            "{w}; {}",
            remedy(&e, ", fewer --load-workers, --port-slices off")
        )
    }))
}

/// The ephemeral ports toward the targets still held by TIME_WAIT sockets from before this
/// run (sock_diag of this namespace; [`tuning::advice::time_wait_held`]), with reuse taken into
/// account from the settings read through `io`. Returns one warning line per target whose held
/// ports leave fewer than the run needs (none at all, or fewer than a closed loop's
/// connections), and the held count over all targets (what the diagnosis is told: the
/// `"time_wait_before_run"` setting). `Err`: the sockets or settings cannot be read.
///
/// # Errors
/// The message (there is then no TIME_WAIT check).
pub fn time_wait_warnings(
    cfg: &LoadConfig,
    io: &tuning::sysctl::ProcSys,
) -> Result<(Vec<String>, u64), String> {
    let settings = tuning::advice::PortSettings::read(io).map_err(|e| e.to_string())?;
    let sockets = tuning::host::tcp_sockets(&[tuning::host::TcpState::TimeWait])
        .map_err(|e| format!("cannot list TIME_WAIT sockets (sock_diag): {e}"))?;
    let held = tuning::advice::time_wait_held(&sockets, &cfg.targets, &cfg.sources, &settings);
    let need = match cfg.pattern {
        Pattern::Closed { concurrency } => u64::from(concurrency),
        Pattern::Open { .. } => 1,
    };
    let total = held.iter().map(|h| h.held - h.reusable).sum();
    let lines = held
        .iter()
        .filter(|h| h.free < need.max(1) || h.free == 0)
        .filter_map(|h| h.describe(settings.range))
        .collect();
    Ok((lines, total))
}

/// The port budget of the busiest worker's slice: `None` without slices or when it suffices.
fn slice_shortfall(
    cfg: &LoadConfig,
    b: &loadgen::ports::PortBudget,
    settings: &tuning::advice::PortSettings,
    all_local: bool,
) -> Option<(String, tuning::advice::PortEstimate)> {
    let workers = cfg.workers();
    if cfg.port_slices == loadgen::PortSlices::Off || workers < 2 {
        return None;
    }
    let slices = loadgen::ports::slices(b.range, workers).ok()?;
    let smallest = slices.iter().map(|&(lo, hi)| hi - lo).min()?;
    let sliced = tuning::advice::PortSettings {
        range: (0, u32::from(smallest)),
        ..settings.clone()
    };
    // The worker's sources: a share of them when there are as many as workers, else one.
    let sources = cfg.sources.len() as u64;
    let worker_sources = if sources >= workers as u64 {
        sources / workers as u64
    } else {
        1
    };
    let targets = (b.triples / sources.max(1)).max(1);
    let e = tuning::advice::port_budget(
        &sliced,
        targets * worker_sources,
        all_local,
        cfg.close == CloseMode::Fin,
    );
    let demand = match cfg.pattern {
        Pattern::Open { rate_per_sec, .. } => tuning::advice::PortDemand::Rate {
            per_sec: rate_per_sec / workers as f64,
        },
        Pattern::Closed { .. } => tuning::advice::PortDemand::InFlight {
            connections: cfg.slots_for(0) as u64,
        },
    };
    let w = tuning::advice::port_shortfall(&e, demand)?;
    Some((
        format!(
            "per worker: each of {workers} workers connects from its own slice of about {} ports (--port-slices on): {w}",
            u64::from(smallest) + 1
        ),
        e,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Issue 33: with port slices the budget counts per slice. 66 ports in all and 66 in
    /// flight fit the range, but 8 workers get slices of 8 ports (the last 10) and worker 0 holds
    /// 9 connections: the busiest slice is short, and the warning says so; with slices off, or
    /// 64 in flight (8 per worker), nothing is short.
    #[test]
    fn the_port_budget_counts_per_slice() {
        let mut cfg = loadgen::LoadConfig {
            targets: vec!["127.0.0.1:9".parse().unwrap()],
            pattern: Pattern::Closed { concurrency: 66 },
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            cpus: vec![0],
            workers: 8,
            port_slices: loadgen::PortSlices::On,
            close: CloseMode::Rst,
            sources: Vec::new(),
            connect_timeout: Duration::from_secs(1),
            expect_bytes: None,
            max_in_flight: 66,
            late_threshold: Duration::from_millis(1),
            http: None,
            tls: None,
            engine: Default::default(),
            pacing: Default::default(),
            accept_stamps: None,
        };
        let range = (40000, 40065);
        let b = loadgen::ports::port_budget(range, &cfg.targets, &cfg.sources, cfg.close);
        let settings = tuning::advice::PortSettings {
            range: (40000, 40065),
            tw_reuse: Some(2),
            timestamps: Some(1),
            tw_reuse_delay_ms: None,
        };
        let (w, _) =
            slice_shortfall(&cfg, &b, &settings, true).expect("the busiest slice is short");
        assert!(
            w.starts_with(
                "per worker: each of 8 workers connects from its own slice of about 8 ports"
            ),
            "{w}"
        );
        cfg.port_slices = loadgen::PortSlices::Off;
        assert!(slice_shortfall(&cfg, &b, &settings, true).is_none());
        cfg.port_slices = loadgen::PortSlices::On;
        cfg.pattern = Pattern::Closed { concurrency: 64 };
        assert!(slice_shortfall(&cfg, &b, &settings, true).is_none());
    }

    #[test]
    fn a_start_later_than_the_skew_bound_is_warned_about_and_one_within_it_is_not() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let bound = results::analysis::SKEW_BOUND_MS;
        assert_eq!(
            late_start_warning(Some(t), t + Duration::from_millis(bound)),
            None
        );
        let w = late_start_warning(Some(t), t + Duration::from_millis(bound + 1)).unwrap();
        assert!(
            w.starts_with(&format!(
                "the schedule started {} ms after --start-at",
                bound + 1
            )),
            "{w}"
        );
        assert_eq!(late_start_warning(None, t), None);
    }
}
